// @ts-check
/* "My answers": the task's live answers, newest first; every answer can be the point to undo
 * back to (it and every later one), after a confirmation in place. */
import { canAct, undoBackTo } from "./answer.js";
import { formatDuration } from "./idle-clock.js";
import { notice } from "./notices.js";
import { appendSideNames, boot, els, SIDES, state } from "./page.js";
import { closePanel, registerPanel, tools } from "./panels.js";
import { detailText } from "./payload.js";
import { request } from "./requests.js";

/** @typedef {import("./types.js").DocRef} DocRef */
/**
 * One row of GET /answers.
 * @typedef {object} Answer
 * @property {number} seq
 * @property {"pair" | "grade" | "broken"} kind
 * @property {DocRef} [left]
 * @property {DocRef} [right]
 * @property {DocRef} [document]
 * @property {string} [outcome]
 * @property {number} [grade]
 * @property {string} [reason]
 * @property {string} [comment]
 * @property {number} [active_ms]
 */

/** @type {Record<string, [string, string]>} */
const OUTCOME_TEXT = { left: ["Left better", "Top better"], right: ["Right better", "Bottom better"],
  tie: ["Equal", "Equal"], not_relevant: ["Not relevant", "Not relevant"] };

/** @param {string} tag @param {string} [cls] @param {string} [text] @returns {HTMLElement} */
function textEl(tag, cls, text) {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined) el.textContent = text;
  return el;
}

/** A wording in its wide-screen and narrow-screen forms. @param {[string, string]} names */
function sideTextOf(names) {
  const span = document.createElement("span");
  appendSideNames(span, names);
  return span;
}

/** @param {DocRef | undefined} ref */
function docName(ref) { return ref ? (ref.title || ref.doc_id) : "?"; }

function loadAnswers() {
  els.answersStatus.textContent = "Loading…";
  els.answersStatus.hidden = false;
  els.answersList.textContent = "";
  request("GET", "/answers").then((r) => {
    if (state.panel !== "answers") return;
    if (!r.ok || !Array.isArray(r.data)) {
      els.answersStatus.textContent = detailText(r.data, "Your answers could not be loaded.");
      return;
    }
    renderAnswers(r.data);
  }, () => {
    els.answersStatus.textContent = "Could not reach the server.";
  });
}

/** @param {Answer} a */
function answerText(a) {
  const what = textEl("span", "answer-what");
  if (a.kind === "pair") {
    what.appendChild(sideTextOf(SIDES.left));
    what.appendChild(document.createTextNode(": " + docName(a.left) + " · "));
    what.appendChild(sideTextOf(SIDES.right));
    what.appendChild(document.createTextNode(": " + docName(a.right) + " → "));
    const outcome = a.outcome || "";
    const o = OUTCOME_TEXT[outcome] || [outcome, outcome];
    what.appendChild(sideTextOf(o)).className = "answer-outcome";
  } else if (a.kind === "grade") {
    what.appendChild(document.createTextNode(docName(a.document) + " → "));
    const grade = a.grade === undefined ? 0 : a.grade;
    what.appendChild(textEl("span", "answer-outcome",
      (boot.grade_names && boot.grade_names[grade]) || String(a.grade)));
  } else {
    what.appendChild(textEl("span", "answer-broken", "Broken: "));
    what.appendChild(document.createTextNode(docName(a.document) + " (" + (a.reason || "") + ")"));
  }
  return what;
}

/** Newest first. @param {Answer[]} rows */
function renderAnswers(rows) {
  const list = els.answersList;
  list.textContent = "";
  const live = rows.length;
  els.answersStatus.textContent = live === 0 ? "No answers yet for this query."
    : live + (live === 1 ? " answer" : " answers") + ", newest first. " +
      "“Undo back to here” takes back that answer and every later one.";
  for (const a of rows.slice().reverse()) {
    const li = textEl("li");
    li.setAttribute("data-seq", String(a.seq));
    const line = textEl("div", "answer-line");
    line.appendChild(textEl("span", "answer-no", "#" + (a.seq + 1)));
    line.appendChild(answerText(a));
    line.appendChild(textEl("span", "muted", formatDuration(a.active_ms || 0)));
    const undo = /** @type {HTMLButtonElement} */ (textEl("button", "btn btn-small", "Undo back to here"));
    undo.type = "button";
    undo.setAttribute("data-tool", "undo-to");
    undo.setAttribute("data-seq", String(a.seq));
    const later = live - 1 - a.seq;
    undo.setAttribute("aria-label", "Undo back to answer " + (a.seq + 1) +
      (later > 0 ? " (and the " + later + " after it)" : ""));
    line.appendChild(undo);
    li.appendChild(line);
    if (a.comment) li.appendChild(textEl("p", "answer-comment", "Comment: " + a.comment));
    list.appendChild(li);
  }
}

/** "Undo back to here" asks first, in place: what will be taken back, Yes / Cancel.
 * @param {HTMLElement} button */
function confirmUndo(button) {
  const li = button.closest("li");
  if (!li || !state.question) return;
  const old = li.querySelector(".answer-confirm");
  if (old) old.remove();
  const seq = parseInt(button.getAttribute("data-seq") || "0", 10);
  const n = state.question.seq - seq;
  const box = textEl("div", "answer-confirm");
  box.setAttribute("role", "group");
  box.setAttribute("aria-label", "Confirm undo");
  box.appendChild(textEl("p", "", n > 1
    ? "Take back answer #" + (seq + 1) + " and the " + (n - 1) + " after it? Its question is asked again."
    : "Take back answer #" + (seq + 1) + "? Its question is asked again."));
  const yes = /** @type {HTMLButtonElement} */ (
    textEl("button", "btn btn-small btn-primary", "Yes, undo " + n + (n === 1 ? " answer" : " answers")));
  yes.type = "button";
  yes.setAttribute("data-tool", "undo-confirm");
  yes.setAttribute("data-seq", String(seq));
  const no = /** @type {HTMLButtonElement} */ (textEl("button", "btn btn-small", "Cancel"));
  no.type = "button";
  no.setAttribute("data-tool", "undo-cancel");
  box.appendChild(yes);
  box.appendChild(document.createTextNode(" "));
  box.appendChild(no);
  li.appendChild(box);
  yes.focus();
}

/** @param {number} seq */
function undoTo(seq) {
  if (!canAct() || !state.question) {
    notice("The page is still busy; try again in a moment.", "warning", false);
    return;
  }
  const from = state.question.seq;
  if (seq >= from) return;
  closePanel();
  undoBackTo(seq, from);
}

export function installAnswers() {
  registerPanel("answers", { open: loadAnswers });
  tools["undo-to"] = confirmUndo;
  tools["undo-cancel"] = (t) => {
    const li = t.closest("li");
    const box = t.closest(".answer-confirm");
    if (box) box.remove();
    const back = li && /** @type {HTMLElement | null} */ (li.querySelector("[data-tool=undo-to]"));
    if (back) back.focus();
  };
  tools["undo-confirm"] = (t) => { undoTo(parseInt(t.getAttribute("data-seq") || "0", 10)); };
}
