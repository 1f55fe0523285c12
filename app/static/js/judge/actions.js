// @ts-check
/* What keys and buttons do: the answers (arrows/1/2/=/N for a pair, 1-5 for grades), undo,
 * pause, highlighting and the tools. A key held down is one press, and so is a double click. */
import { canAct, judge, undoBackTo } from "./answer.js";
import { briefly, rerenderFrames, toggleFullTitles } from "./cards.js";
import { clock, leaveIdle, markInput, setPaused } from "./clock.js";
import { notice } from "./notices.js";
import { boot, els, focusHome, mark, state } from "./page.js";
import { closePanel, MODAL, panelKey, togglePanel } from "./panels.js";
import { toggleQuery } from "./query.js";
import { retry, submitter } from "./requests.js";
import { scrollKey } from "./scroll.js";

/** One answer to the current pair question; the pair is read when the action fires.
 * @param {string} outcome */
function pairAction(outcome) {
  return () => {
    const q = state.question;
    if (!q || !q.pair) return;
    judge({ left: q.pair.left.doc_id, right: q.pair.right.doc_id, outcome });
  };
}

/** @param {number} g */
function gradeAction(g) {
  return () => {
    const q = state.question;
    if (!q || !q.document) return;
    judge({ doc_id: q.document.doc_id, grade: g });
  };
}

function undo() {
  if (!canAct() || !state.question) return;
  if (state.question.seq === 0) { notice("Nothing to undo yet.", "warning", false); return; }
  // Undo back to the last answer (to_seq): the same request twice undoes it once.
  undoBackTo(state.question.seq - 1, state.question.seq);
}

/** Highlighting on/off: the frames are rendered again by the server (nothing runs in them)
 * and each goes back to its anchor. The choice is kept in a cookie for the next pages.
 * @param {boolean} on */
function setHighlight(on) {
  boot.highlight = on;
  document.cookie = boot.highlight_cookie + "=" + (on ? "1" : "0") +
    "; path=/; max-age=31536000; samesite=strict";
  if (els.highlight) els.highlight.setAttribute("aria-pressed", on ? "true" : "false");
  rerenderFrames();
  notice(on ? "Query words highlighted (H to turn off)." : "Highlighting off (H to turn on).",
    "info", false, "highlight", 2500);
}

/** @type {Record<string, () => void>} */
const actions = {
  left: pairAction("left"),
  right: pairAction("right"),
  tie: pairAction("tie"),
  not_relevant: pairAction("not_relevant"),
  undo,
  pause: () => { setPaused(!clock.paused); },
  highlight: () => { setHighlight(!boot.highlight); },
  broken: () => { togglePanel("broken"); },
  comment: () => { togglePanel("comment"); },
  answers: () => { togglePanel("answers"); },
  guidelines: () => { togglePanel("guidelines", true); },
  query: toggleQuery,
  titles: toggleFullTitles,
};
for (let g = 0; g < 5; g++) actions["grade" + g] = gradeAction(g);

/** @type {Record<string, string>} */
const keymap = { "u": "undo", "U": "undo", "p": "pause", "P": "pause", "h": "highlight",
  "H": "highlight", "b": "broken", "B": "broken", "c": "comment", "C": "comment",
  "a": "answers", "A": "answers", "g": "guidelines", "G": "guidelines", "?": "guidelines",
  "q": "query", "Q": "query", "t": "titles", "T": "titles" };
if (boot.method === "topk") {
  keymap.ArrowLeft = "left"; keymap["1"] = "left";
  keymap.ArrowRight = "right"; keymap["2"] = "right";
  if (boot.allow_ties) keymap["="] = "tie";
  if (boot.not_relevant) { keymap.n = "not_relevant"; keymap.N = "not_relevant"; }
} else {
  for (let k = 1; k <= 5; k++) keymap[String(k)] = "grade" + (k - 1);
}

/** The answers (what hj-key times and the answer bar flashes for); every other action is a
 * tool of the toolbar. */
const ANSWERS = new Set(["left", "right", "tie", "not_relevant", "grade0", "grade1", "grade2",
  "grade3", "grade4"]);

/** The answer button of an action flashes when it is sent (by key or click).
 * @param {string} name */
function flash(name) {
  const b = /** @type {HTMLElement | null} */ (
    document.querySelector('.actions [data-action="' + name + '"]'));
  if (b) briefly(b, "pressed", 160);
}

/** What may be done while paused: the page's own layout, nothing that reads or answers. */
const WHILE_PAUSED = new Set(["pause", "highlight", "query", "titles"]);

/** @param {string} name */
function run(name) {
  const fn = actions[name];
  if (!fn) return;
  if (!WHILE_PAUSED.has(name) && clock.paused) {
    notice("Paused. Press P (or the clock) to resume.", "warning", false, "paused");
    return;
  }
  if ((ANSWERS.has(name) || name === "undo") && state.panel && MODAL[state.panel]) {
    // An answer while "my answers", the comment or the broken dialog is open would change
    // the question under it: close it first.
    notice("Close the open panel first (Esc).", "warning", false, "panel", 3000);
    return;
  }
  if (ANSWERS.has(name) && canAct()) {
    mark("hj-key");
    flash(name);
  }
  fn();
}

/** @param {KeyboardEvent} e */
function onKey(e) {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  markInput(); // typing a comment or a reason is work too
  if (e.key === "Escape" && state.panel && !clock.idle) {
    e.preventDefault();
    closePanel();
    return;
  }
  if (!clock.idle && panelKey(e)) return;
  const target = /** @type {HTMLElement | null} */ (e.target);
  const tag = target && target.tagName;
  if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return;
  if (clock.idle) {
    // The key that answers "still there?" does nothing else.
    e.preventDefault();
    leaveIdle();
    return;
  }
  if ((e.key === "r" || e.key === "R") && submitter.failed) { e.preventDefault(); retry(); return; }
  if (!clock.paused && scrollKey(e)) { e.preventDefault(); return; }
  const name = keymap[e.key];
  if (!name) return;
  e.preventDefault(); // no page scroll on arrows/space, no button "click" on space
  if (e.repeat) return; // a held key is one press
  run(name);
}

// Frames take no pointer events on desktop, so focus enters one only by touch; then take it
// back on the next focus change. (No polling: that fought the assessor's own focus.)
function reclaimFocus() {
  const a = document.activeElement;
  if (a && a.tagName === "IFRAME") focusHome();
}

export function installActions() {
  document.addEventListener("keydown", onKey);
  document.addEventListener("click", (e) => {
    const el = /** @type {HTMLElement | null} */ (e.target);
    const btn = el && el.closest ? el.closest("[data-action]") : null;
    if (!btn) return;
    e.preventDefault();
    // A double click is one press (as a held key is): its second click (detail 2) must not
    // answer the next pair, which a fast server has already shown by then.
    if (e.detail > 1) return;
    run(btn.getAttribute("data-action") || "");
  });
  els.retry.addEventListener("click", () => { retry(); });
  els.resume.addEventListener("click", () => { setPaused(false); });
  els.stillHere.addEventListener("click", () => { leaveIdle(); });
  window.addEventListener("blur", () => { setTimeout(reclaimFocus, 0); });
  document.addEventListener("focusin", () => { setTimeout(reclaimFocus, 0); }, true);
}
