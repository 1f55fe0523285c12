// @ts-check
/* The requests of the judging loop. The server is the source of truth: every question shown
 * comes from the REST API (/api/v1/tasks/{id}/next, /judgments, /undo); the page only posts
 * what the assessor chose for the question it was shown (with its seq) and swaps in the
 * answer. One request at a time; a failed one is retried unchanged (submitter.js) and kept in
 * sessionStorage so that a reload or a new login resends it if that question is still the
 * pending one. */
import { clock } from "./clock.js";
import { commentSent } from "./comment.js";
import { clearNotice, clearStored, notice, store } from "./notices.js";
import { api, boot, els, main, mark } from "./page.js";
import { currentFrom, detailText } from "./payload.js";
import { render } from "./render.js";
import { Submitter } from "./submitter.js";

/** @typedef {import("./types.js").Reply} Reply */
/** @typedef {import("./types.js").LoopRequest} LoopRequest */

/** A JSON request to the loop's API. @param {string} method @param {string} path
 * @param {object} [body] @returns {Promise<Reply>} */
export function request(method, path, body) {
  /** @type {Record<string, string>} */
  const headers = { "Accept": "application/json" };
  /** @type {RequestInit} */
  const init = { method, credentials: "same-origin", cache: "no-store", headers };
  if (method !== "GET") {
    headers["Content-Type"] = "application/json";
    headers["X-CSRF-Token"] = boot.csrf_token;
    init.body = JSON.stringify(body || {});
  }
  return fetch(api + path, init).then((resp) => resp.text().then((text) => {
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch { data = null; }
    return { status: resp.status, ok: resp.ok, data };
  }));
}

/** @param {boolean} on */
function setBusy(on) {
  main.setAttribute("aria-busy", on ? "true" : "false");
}

/** @param {LoopRequest} req @param {Reply} r */
function stored(req, r) {
  clearStored();
  clearNotice();
  if (req.kind === "judgment") clock.addStored(req.body.active_ms || 0);
  if (req.kind === "judgment" && req.body.comment) commentSent(req.body.comment);
  if (req.kind === "undo" && r.data && req.undoFromSeq !== undefined && r.data.seq >= req.undoFromSeq) {
    notice("Nothing to undo.", "warning", false);
  } else if (req.kind === "undo" && req.undoFromSeq !== undefined && req.undoFromSeq - r.data.seq > 1) {
    notice("Undone: your last " + (req.undoFromSeq - r.data.seq) + " answers were taken " +
      "back; answer " + (r.data.seq + 1) + "'s question is asked again.", "info", false,
      "undo", 5000);
  } else if (req.kind === "undo") {
    notice("Undone: your last answer was taken back; the question is asked again.",
      "info", false, "undo", 4000);
  } else if (req.kind === "judgment" && req.body.outcome === "broken") {
    notice("Marked as broken: \u201c" + req.brokenTitle + "\u201d will not be asked again.",
      "info", false, "broken", 4000);
  }
  render(r.data);
}

/** @param {LoopRequest} req @param {Reply} r @param {import("./submitter.js").Outcome} outcome */
function answered(req, r, outcome) {
  if (outcome === "ok") {
    stored(req, r);
    return;
  }
  if (outcome === "conflict") {
    clearStored();
    const cur = currentFrom(r.data);
    if (!cur && /cancel/i.test(detailText(r.data, ""))) {
      notice("An administrator cancelled this task; nothing more can be judged here.",
        "error", false);
      return;
    }
    if (req.kind === "undo") {
      notice(detailText(r.data, "Nothing to undo."), "warning", false);
    } else {
      notice("This task moved on (another window or tab?). Showing the current question.",
        "warning", false);
    }
    if (cur) render(cur);
    else reload();
    return;
  }
  if (outcome === "unauthorized") {
    store(req);
    notice("Your session has ended. Log in again (in this tab) and your judgment will be " +
      "sent.", "error", false);
    const a = document.createElement("a");
    a.href = boot.login_url;
    a.textContent = " Log in";
    els.noticeText.appendChild(a);
    return;
  }
  // 403 / 404 / 422: not retryable; say what the server said.
  clearStored();
  notice(detailText(r.data, "The server refused this (" + r.status + ")."), "error", false);
}

export const submitter = new Submitter({
  request,
  onReply: answered,
  onFailure: (req, message) => {
    store(req);
    notice(message + " Your judgment is kept and will be sent again.", "error", true);
  },
  onBusy: setBusy,
  onSend: (req) => { if (req.kind === "judgment") mark("hj-sent"); },
  onResponse: () => { mark("hj-response"); },
  onRetry: () => { notice("Sending again…", "warning", false); },
});

let reloading = false;

/** A request is in flight (keys wait). */
export function busy() {
  return submitter.inFlight || reloading;
}

/** Send a request of the loop (refused while one is in flight). @param {LoopRequest} req */
export function send(req) {
  return submitter.send(req);
}

/** Send the failed request again now (the retry button, R). */
export function retry() {
  return submitter.retry();
}

/** Load the current question again (after a 409 without one). */
export function reload() {
  reloading = true;
  setBusy(true);
  return request("GET", "/next").then((r) => {
    reloading = false;
    setBusy(false);
    if (r.ok) render(r.data);
    else notice(detailText(r.data, "Could not load the task."), "error", false);
  }, () => {
    reloading = false;
    setBusy(false);
    notice("Could not reach the server. Reload the page to try again.", "error", false);
  });
}
