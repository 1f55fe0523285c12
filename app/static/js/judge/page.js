// @ts-check
/* The page: its boot data (handed over in <script type="application/json" id="hj-boot"),
 * the elements the loop updates, and the state the modules share. */

/** @typedef {import("./types.js").Boot} Boot */
/** @typedef {import("./types.js").Question} Question */

/** @param {string} id @returns {any} the element (null when the page has none) */
export function $(id) {
  return document.getElementById(id);
}

const bootEl = $("hj-boot");
/** @type {Boot} */
export const boot = bootEl ? JSON.parse(bootEl.textContent || "{}") : /** @type {Boot} */ ({});
/** Whether this is a judging page at all (main.js does nothing otherwise). */
export const hasBoot = bootEl !== null;

// A second opinion (another assessor's routed question) runs the same loop on its own URL.
export const api = boot.api_url || "/api/v1/tasks/" + encodeURIComponent(String(boot.task_id));
export const storeKey = "heapjudge.pending." + (boot.store_key || boot.task_id);

// The tasks API (documents: "refs" on answers, the assessor tools), unless the boot names
// another URL to answer on.
export const taskApi = !boot.api_url;

/** @type {HTMLElement} */
export const main = $("judge-main");

export const els = {
  fill: $("progress-fill"),
  track: $("progress-track"),
  progressText: $("progress-text"),
  clock: $("clock"),
  clockTime: $("clock-time"),
  clockState: $("clock-state"),
  notice: $("notice"),
  noticeText: $("notice-text"),
  retry: $("retry-button"),
  pauseOverlay: $("pause-overlay"),
  idleOverlay: $("idle-overlay"),
  resume: $("resume-button"),
  stillHere: $("still-here-button"),
  undo: $("undo-button"),
  highlight: $("highlight-button"),
  commentButton: $("comment-button"),
  commentText: $("comment-text"),
  answersStatus: $("answers-status"),
  answersList: $("answers-list"),
  brokenForm: $("broken-form"),
  brokenDetail: $("broken-detail"),
  brokenError: $("broken-error"),
};

/**
 * @typedef {object} PageState
 * @property {Question | null} question the last body from the server
 * @property {boolean} loading documents of the next question are loading (keys wait)
 * @property {string | null} noticeKind what the notice on screen is about ("paused", ...)
 * @property {any} noticeTimer
 * @property {number} renderToken the latest render; an older one whose frames arrive late stops
 * @property {string[]} shownIds doc ids of the question on screen, for the "new" marker
 * @property {string | null} panel the open tool panel ("guidelines", "answers", ...)
 */

/** @type {PageState} */
export const state = {
  question: null,
  loading: false,
  noticeKind: null,
  noticeTimer: null,
  renderToken: 0,
  shownIds: [],
  panel: null,
};

/** A performance mark (read by benchmarks/ui_latency.py). @param {string} name */
export function mark(name) {
  if (window.performance && performance.mark) performance.mark(name);
}

/** The side names of a slot: the wide-screen and the narrow-screen wording. */
export const SIDES = /** @type {Record<string, [string, string]>} */ ({
  left: ["Left", "Top"],
  right: ["Right", "Bottom"],
});

/** The side's name in two spans: the wide-screen and the narrow-screen wording.
 * @param {HTMLElement} el @param {[string, string]} names */
export function appendSideNames(el, names) {
  const wide = document.createElement("span");
  wide.className = "wide-only";
  wide.textContent = names[0];
  const narrow = document.createElement("span");
  narrow.className = "narrow-only";
  narrow.textContent = names[1];
  el.appendChild(wide);
  el.appendChild(narrow);
}

// Keyboard focus must stay in this page: keys typed into a (script-free) document frame
// never reach us. A click into a frame moves focus there; take it back right away.
export function focusHome() {
  if (main && document.activeElement !== main) main.focus({ preventScroll: true });
}
