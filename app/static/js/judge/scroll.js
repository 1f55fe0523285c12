// @ts-check
/* Scrolling a document from the keyboard: the page may not touch a frame's content (opaque
 * origin), but it may navigate it. Every rendered document carries empty anchors (hj-a0,
 * hj-a1, ... every few words, and hj-end); a scroll key navigates the frame to its own URL
 * with #hj-aN, a same-document navigation that scrolls and reloads nothing. The page
 * keeps each frame's anchor index; wheel turns are converted the same way. */
import { cards, currentCard, docsBox, frameOf, navigateFrame, setCurrent } from "./cards.js";
import { markInput } from "./clock.js";
import { boot } from "./page.js";

/** @typedef {import("./cards.js").Card} Card */
/** @typedef {number | "page" | "-page" | "home" | "end"} ScrollStep */

/** @param {string} slot @returns {Card | null} */
function cardInSlot(slot) {
  return cards().find((c) => !c.hidden && c.getAttribute("data-slot") === slot) || null;
}

/** About how many anchors fit in the frame: text at 16px/1.6 with ~7.5px per character and
 * ANCHOR_WORDS (24) words of ~6 characters between anchors (labeling/retrieval/highlight.py).
 * @param {Card} card */
function anchorsPerScreen(card) {
  const f = frameOf(card);
  const w = Math.max(120, f.clientWidth - 36);
  const linesPerAnchor = Math.max(1, (24 * 6.2 * 7.5) / w);
  const pxPerAnchor = linesPerAnchor * 25.6;
  return Math.max(1, Math.floor((0.8 * f.clientHeight) / pxPerAnchor));
}

/** @param {Card | null} card @param {ScrollStep} how a number of anchors (+ down, - up),
 * or "page" / "-page" / "home" / "end" */
function scrollCard(card, how) {
  if (!card) return;
  setCurrent(card);
  let pos = card._pos || 0;
  const n = card._anchors || 1;
  if (how === "home") pos = 0;
  else if (how === "end") pos = n;
  else if (how === "page") pos += anchorsPerScreen(card);
  else if (how === "-page") pos -= anchorsPerScreen(card);
  else pos += how;
  pos = Math.max(0, Math.min(n, pos));
  if (pos === card._pos) return;
  card._pos = pos;
  navigateFrame(card);
}

/** @param {EventTarget | null} target @returns {Card | null} */
function cardAt(target) {
  const el = /** @type {Element | null} */ (target);
  return el && el.closest ? /** @type {Card | null} */ (el.closest(".doc")) : null;
}

/** The wheel over a document scrolls it by anchors; pointing at one makes it current. */
export function installScrolling() {
  let wheelAcc = 0;
  docsBox.addEventListener("wheel", (e) => {
    const card = cardAt(e.target);
    if (!card) return;
    e.preventDefault();
    markInput();
    setCurrent(card);
    const px = e.deltaMode === 1 ? e.deltaY * 25.6 : e.deltaMode === 2 ? e.deltaY * 400 : e.deltaY;
    wheelAcc += px;
    const f = frameOf(card);
    const pxPerAnchor = Math.max(8, (0.8 * f.clientHeight) / anchorsPerScreen(card));
    const steps = wheelAcc > 0 ? Math.floor(wheelAcc / pxPerAnchor) : Math.ceil(wheelAcc / pxPerAnchor);
    if (steps !== 0) { wheelAcc -= steps * pxPerAnchor; scrollCard(card, steps); }
  }, { passive: false });
  docsBox.addEventListener("pointerover", (e) => {
    const card = cardAt(e.target);
    if (card) setCurrent(card);
  });
}

/** Scroll keys (never the outer page, which fits the screen): Shift+Down/Up the left (top)
 * document, J/K the right (bottom) one, and Down/Up, PageDown/PageUp, Space/Shift+Space,
 * Home/End the current one (outlined: last pointed at or scrolled).
 * @param {KeyboardEvent} e @returns {boolean} true when handled */
export function scrollKey(e) {
  const k = e.key;
  /** @type {Card | null} */
  let target;
  /** @type {ScrollStep} */
  let how;
  if (e.shiftKey && (k === "ArrowDown" || k === "ArrowUp") && boot.method === "topk") {
    target = cardInSlot("left"); how = k === "ArrowDown" ? "page" : "-page";
  } else if ((k === "j" || k === "J" || k === "k" || k === "K") && boot.method === "topk") {
    target = cardInSlot("right"); how = (k === "j" || k === "J") ? "page" : "-page";
  } else {
    /** @type {Record<string, ScrollStep>} */
    const map = { ArrowDown: 2, ArrowUp: -2, PageDown: "page", PageUp: "-page", Home: "home",
      End: "end", " ": e.shiftKey ? "-page" : "page" };
    if (!(k in map)) return false;
    target = currentCard(); how = map[k];
  }
  scrollCard(target, how);
  return true;
}
