// @ts-check
/* Document cards. Documents are rendered on the server for their sandboxed frames (query
 * words marked, text reflowed, reading anchors), since nothing may run inside a frame, and
 * each is loaded from its own URL (GET /tasks/{id}/document?doc=..., with its own policy;
 * /tasks/{id}/frames and /lookahead give the URLs and anchor counts). The URL names one
 * rendering, so the browser keeps it: a preloaded frame is a cached response.
 *
 * Cards are pooled by doc_id: a document that stays on screen, or moves to the other side,
 * keeps its already-loaded frame (placed with CSS `order`, never re-inserted, which would
 * reload it) and its scroll position. Preloaded documents wait in hidden cards that are laid
 * out at a slot's size (app.css), so showing one is only a paint. */
import { FrameCache } from "./frame-cache.js";
import { appendSideNames, boot, SIDES, state } from "./page.js";

/** @typedef {import("./types.js").DocRef} DocRef */
/** @typedef {import("./types.js").RenderedDoc} RenderedDoc */

/**
 * A card and what the page keeps on it.
 * @typedef {object} CardState
 * @property {number} _anchors the document's anchor count
 * @property {number} _pos the anchor the frame is scrolled to
 * @property {string} _src the URL of the frame's document
 * @property {boolean} _loaded its frame has loaded
 * @property {boolean} [_initial] rendered by the server with the page
 * @property {number} [_used] last use, for reuse of the least recent
 * @property {any} [_briefly] the timer of a brief class (see briefly)
 * @typedef {HTMLElement & CardState} Card
 */

export const frames = new FrameCache(24);

export function hlParam() { return boot.highlight ? "1" : "0"; }

/** Fetch the rendered frames of the documents not yet cached (one request).
 * @param {string[]} ids @returns {Promise<boolean>} */
export function fetchFrames(ids) {
  const missing = ids.filter((id) => !frames.has(id));
  if (!missing.length) return Promise.resolve(true);
  const qs = missing.map((id) => "ids=" + encodeURIComponent(id)).join("&");
  return fetch(boot.frames_url + "?" + qs + "&hl=" + hlParam(), {
    credentials: "same-origin", cache: "no-store", headers: { "Accept": "application/json" },
  }).then((resp) => (resp.ok ? resp.json() : null)).then((data) => {
    for (const doc of (data && data.docs) || []) frames.add(doc);
    return true;
  }, () => false);
}

/** @type {HTMLElement} */
export const docsBox = /** @type {HTMLElement} */ (document.querySelector(".docs"));
/** @type {Card[]} */
let pool = /** @type {Card[]} */ (Array.from(docsBox ? docsBox.querySelectorAll(".doc") : []));
const POOL_MAX = boot.method === "topk" ? 8 : 4;
let useTick = 0;
/** @type {Card | null} the card the scroll keys act on */
let current = null;

/** @returns {Card[]} */
export function cards() { return pool; }
/** @returns {Card | null} */
export function currentCard() { return current; }
/** @param {Card} card */
export function touch(card) { card._used = ++useTick; }

/** @param {Card} card @returns {HTMLIFrameElement} */
export function frameOf(card) {
  return /** @type {HTMLIFrameElement} */ (card.querySelector("iframe"));
}

/** "#top" is the document's top by definition (HTML: no element needed). The frame's own
 * URL with another fragment: a navigation within its document, which scrolls and reloads
 * nothing (a page may navigate its frame, though it cannot read it).
 * @param {Card} card */
export function navigateFrame(card) {
  const frag = card._pos >= card._anchors ? "hj-end" : card._pos === 0 ? "top" : "hj-a" + card._pos;
  card.setAttribute("data-pos", String(card._pos));
  if (!card._loaded || !card._src) return; // applied on load
  try {
    const win = frameOf(card).contentWindow;
    if (win) win.location.replace(card._src + "#" + frag);
  } catch { /* a frame being replaced */ }
}

/** @param {Card} card */
function initCard(card) {
  card._anchors = parseInt(card.getAttribute("data-anchors") || "1", 10) || 1;
  card._pos = 0;
  card._loaded = false;
  card._src = frameOf(card).getAttribute("src") || "";
  frameOf(card).addEventListener("load", () => {
    card._loaded = true;
    if (card._pos > 0) navigateFrame(card);
  });
}

/** Take over the server-rendered cards. Their frames may have loaded before this script ran
 * (their load event then went unseen); the window's load event comes after every frame's. */
export function initCards() {
  pool.forEach(initCard);
  const initialFramesLoaded = () => {
    for (const c of pool) {
      if (c._initial && !c._loaded) { c._loaded = true; if (c._pos > 0) navigateFrame(c); }
      c._initial = false;
    }
  };
  for (const c of pool) c._initial = true;
  if (document.readyState === "complete") initialFramesLoaded();
  else window.addEventListener("load", initialFramesLoaded);
}

/** A card out of view keeps the `hidden` attribute (app.css lays it out, transparent, under
 * the shown ones) and is kept from assistive technology and from the Tab order (inert).
 * @param {Card} card @param {boolean} shown */
export function setShown(card, shown) {
  card.hidden = !shown;
  card.inert = !shown;
  if (shown) card.removeAttribute("aria-hidden");
  else card.setAttribute("aria-hidden", "true");
}

/** @returns {Card} */
function makeCard() {
  const card = /** @type {Card} */ (document.createElement("article"));
  card.className = "doc";
  const head = document.createElement("header");
  head.className = "doc-head";
  if (boot.method === "topk") {
    const side = document.createElement("span");
    side.className = "doc-side";
    head.appendChild(side);
  }
  const title = document.createElement("h2");
  title.className = "doc-title";
  title.tabIndex = 0; // a cut title is shown in full while focused (app.css)
  head.appendChild(title);
  const badge = document.createElement("span");
  badge.className = "doc-badge";
  badge.hidden = true;
  head.appendChild(badge);
  card.appendChild(head);
  const frame = document.createElement("iframe");
  // Attributes first: the sandbox and csp apply from the frame's first navigation.
  frame.setAttribute("sandbox", "");
  frame.setAttribute("csp", boot.frame_csp);
  frame.setAttribute("referrerpolicy", "no-referrer");
  frame.setAttribute("tabindex", "-1");
  card.appendChild(frame);
  initCard(card);
  return card;
}

/** Load a rendered document into a card: its frame navigates to the document's URL.
 * @param {Card} card @param {string} docId @param {RenderedDoc} rendered */
export function loadCard(card, docId, rendered) {
  card._initial = false;
  card.setAttribute("data-doc-id", docId);
  card._anchors = rendered.anchors || 1;
  card._pos = 0;
  card._loaded = false;
  card.setAttribute("data-anchors", String(card._anchors));
  card.setAttribute("data-pos", "0");
  card._src = rendered.src;
  frameOf(card).src = rendered.src;
}

/** A document's URL without its version, when /frames could not say it (the server then
 * answers the current rendering, to be revalidated), and one anchor until it is known.
 * @param {string} docId @returns {RenderedDoc} */
export function documentRef(docId) {
  return { src: boot.document_url + "?doc=" + encodeURIComponent(docId) + "&hl=" + hlParam(), anchors: 1 };
}

/** @param {Card} card @param {string} slot */
function setSide(card, slot) {
  card.setAttribute("data-slot", slot);
  const side = /** @type {HTMLElement | null} */ (card.querySelector(".doc-side"));
  const names = SIDES[slot];
  if (!side || !names) return;
  if (side.getAttribute("data-side") === slot) return;
  side.textContent = "";
  appendSideNames(side, names);
  side.setAttribute("data-side", slot);
}

/** @param {string} docId @returns {Card | null} */
export function cardOf(docId) {
  return pool.find((c) => c.getAttribute("data-doc-id") === docId) || null;
}

/** A card to load another document into: a new one while the pool is small, else the least
 * recently used one not in `keep`.
 * @param {Card[]} keep @returns {Card} */
export function spareCard(keep) {
  const spare = pool.filter((c) => keep.indexOf(c) < 0)
    .sort((x, y) => (x._used || 0) - (y._used || 0));
  if (pool.length < POOL_MAX || spare.length === 0) {
    const card = makeCard();
    setShown(card, false);
    docsBox.appendChild(card);
    pool.push(card);
    return card;
  }
  return spare[0];
}

/** Give `el` the class `cls` for `ms`: a state shown for a moment (two repaints), not an
 * animation (a repaint every frame while the next answer is awaited and swapped in), and no
 * forced layout to restart one.
 * @param {HTMLElement & {_briefly?: any}} el @param {string} cls @param {number} ms */
export function briefly(el, cls, ms) {
  el.classList.add(cls);
  if (el._briefly) clearTimeout(el._briefly);
  el._briefly = setTimeout(() => { el.classList.remove(cls); el._briefly = null; }, ms);
}

/** "New" on a document that was not in the previous question; "Moved" on one that stayed
 * but changed sides. (Which side a document is shown on is decided per question by the
 * labeling core; the page only says what changed.)
 * @param {Card} card @param {string} text @param {string} kind */
function setBadge(card, text, kind) {
  const badge = /** @type {HTMLElement | null} */ (card.querySelector(".doc-badge"));
  if (!badge) return;
  badge.hidden = !text;
  badge.textContent = text || "";
  badge.className = "doc-badge" + (kind ? " badge-" + kind : "");
  if (kind === "new") briefly(card, "doc-new", 600);
  else if (card._briefly) {
    clearTimeout(card._briefly);
    card._briefly = null;
    card.classList.remove("doc-new");
  }
}

/** @param {Card} card @param {string} name */
function setTitle(card, name) {
  const title = /** @type {HTMLElement} */ (card.querySelector(".doc-title"));
  title.textContent = name;
  title.title = name;
  return title;
}

/** Show the documents, in display order. Every document's frame is cached or pooled.
 * @param {Array<[string, DocRef]>} assign [[slot, doc], ...] */
export function showDocs(assign) {
  const wanted = assign.map((a) => cardOf(a[1].doc_id));
  /** @type {Record<string, string | null>} */
  const prevSlots = {};
  for (const c of pool) {
    if (!c.hidden) prevSlots[c.getAttribute("data-doc-id") || ""] = c.getAttribute("data-slot");
  }
  const previous = state.shownIds;
  /** @type {Card[]} */
  const shown = [];
  assign.forEach(([slot, doc], i) => {
    let card = wanted[i];
    if (!card) {
      card = spareCard(/** @type {Card[]} */ (wanted.filter(Boolean)).concat(shown));
      loadCard(card, doc.doc_id, frames.get(doc.doc_id) || documentRef(doc.doc_id));
    }
    const name = doc.title || doc.doc_id;
    setTitle(card, name);
    frameOf(card).setAttribute("title",
      (SIDES[slot] ? SIDES[slot][0] + " document: " : "Document: ") + name);
    setSide(card, slot);
    card.style.order = String(i);
    setShown(card, true);
    touch(card);
    if (boot.method === "topk" && previous.length) {
      if (previous.indexOf(doc.doc_id) < 0) setBadge(card, "New", "new");
      else if (prevSlots[doc.doc_id] && prevSlots[doc.doc_id] !== slot) {
        setBadge(card, "Moved", "moved");
      } else setBadge(card, "", "");
    }
    shown.push(card);
  });
  for (const c of pool) {
    if (shown.indexOf(c) < 0) { setShown(c, false); c.removeAttribute("data-slot"); }
  }
  state.shownIds = assign.map((a) => a[1].doc_id);
  if (!current || shown.indexOf(current) < 0) setCurrent(shown[0]);
}

/** Preload the documents that may come next (GET /tasks/{id}/lookahead, rendered) into
 * hidden cards, so the next pair usually shows without waiting. Best effort: errors are
 * ignored, and the server's answer decides what is shown.
 * @param {number} seq */
export function prefetch(seq) {
  if (!window.fetch) return;
  fetch(boot.lookahead_url + "?seq=" + encodeURIComponent(seq) + "&hl=" + hlParam(), {
    credentials: "same-origin", cache: "no-store", headers: { "Accept": "application/json" },
  }).then((resp) => (resp.ok ? resp.json() : null)).then((data) => {
    if (!data || !state.question || state.question.seq !== seq) return;
    const visible = pool.filter((c) => !c.hidden);
    for (const doc of data.docs || []) {
      frames.add(doc);
      if (cardOf(doc.doc_id)) continue;
      const card = spareCard(visible);
      setShown(card, false);
      card.removeAttribute("data-slot");
      loadCard(card, doc.doc_id, /** @type {RenderedDoc} */ (frames.get(doc.doc_id)));
      setTitle(card, doc.title || doc.doc_id);
      touch(card);
      visible.push(card);
    }
  }).catch(() => { /* prefetching is optional */ });
}

/** Every document title in full (wrapping), or cut to one line: T. */
export function toggleFullTitles() {
  if (docsBox) docsBox.classList.toggle("titles-full");
}

/** The card the scroll keys act on (outlined in a pair). @param {Card | undefined} card */
export function setCurrent(card) {
  if (!card || card === current) return;
  if (current) current.classList.remove("doc-current");
  current = card;
  if (boot.method === "topk") card.classList.add("doc-current");
}

/** Highlighting on/off: the frames are rendered again by the server (nothing runs in them)
 * and each goes back to its anchor. Preloaded frames have the old rendering: they are
 * dropped (the next lookahead refills).
 * @returns {Promise<void>} */
export function rerenderFrames() {
  frames.clear();
  const visible = pool.filter((c) => !c.hidden);
  for (const c of pool) {
    if (c.hidden && c.parentNode) c.parentNode.removeChild(c);
  }
  pool = visible;
  const ids = visible.map((c) => c.getAttribute("data-doc-id") || "");
  return fetchFrames(ids).then(() => {
    for (const c of visible) {
      const id = c.getAttribute("data-doc-id") || "";
      const r = frames.get(id);
      if (!r) continue;
      const pos = c._pos;
      loadCard(c, id, r);
      c._pos = Math.min(pos, c._anchors); // restored when the frame has loaded
      c.setAttribute("data-pos", String(c._pos));
    }
    if (state.question) prefetch(state.question.seq);
  });
}

/** Resolves when the card's frame has loaded (or after `ms`, not to hang on a lost event).
 * @param {Card} card @param {number} ms @returns {Promise<void>} */
export function whenLoaded(card, ms) {
  if (card._loaded) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    frameOf(card).addEventListener("load", () => { clearTimeout(timer); resolve(); },
      { once: true });
  });
}
