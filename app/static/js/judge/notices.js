// @ts-check
/* One notice at a time, on its own line above the documents (it covers neither the query nor
 * the progress bar, and moves nothing), and the pending
 * request kept in sessionStorage so that a reload or a new login resends it. */
import { els, state, storeKey } from "./page.js";

/** `kind` names what the notice is about so that it can be cleared when that is over;
 * `autoHideMs` for passing news.
 * @param {string} text @param {string} level info | warning | error
 * @param {boolean} withRetry @param {string | null} [kind] @param {number} [autoHideMs] */
export function notice(text, level, withRetry, kind, autoHideMs) {
  if (state.noticeTimer) { clearTimeout(state.noticeTimer); state.noticeTimer = null; }
  els.noticeText.textContent = text;
  els.notice.className = "notice notice-line notice-" + (level || "info");
  els.retry.hidden = !withRetry;
  els.notice.hidden = false;
  state.noticeKind = kind || null;
  if (autoHideMs) state.noticeTimer = setTimeout(clearNotice, autoHideMs);
}

export function clearNotice() {
  if (state.noticeTimer) { clearTimeout(state.noticeTimer); state.noticeTimer = null; }
  els.notice.hidden = true;
  els.retry.hidden = true;
  state.noticeKind = null;
}

/** @returns {import("./types.js").LoopRequest | null} */
export function stored() {
  try {
    return JSON.parse(window.sessionStorage.getItem(storeKey) || "null");
  } catch {
    return null;
  }
}

/** @param {import("./types.js").LoopRequest} req */
export function store(req) {
  try { window.sessionStorage.setItem(storeKey, JSON.stringify(req)); } catch { /* private mode */ }
}

export function clearStored() {
  try { window.sessionStorage.removeItem(storeKey); } catch { /* private mode */ }
}
