// @ts-check
/* One answer to the question on screen: a key press while a request is in flight, while the
 * documents of the next question load, or while paused or idle is ignored. */
import { clock } from "./clock.js";
import { pendingComment } from "./comment.js";
import { notice } from "./notices.js";
import { state, taskApi } from "./page.js";
import { outcomeAllowed } from "./render.js";
import { busy, submitter, send } from "./requests.js";

/** @returns {boolean} */
export function canAct() {
  return !busy() && !state.loading && !submitter.failed && state.question !== null &&
    !state.question.done && !clock.paused && !clock.idle;
}

/** Send one answer; `brokenTitle` names the document of a broken answer (for the note shown
 * once it is stored).
 * @param {Record<string, any>} extra the answer's fields @param {string} [brokenTitle] */
export function judge(extra, brokenTitle) {
  if (!canAct() || !state.question) return;
  if (extra.outcome && extra.outcome !== "broken" && !outcomeAllowed(extra.outcome)) {
    notice(extra.outcome === "not_relevant"
      ? "\u201cNot relevant\u201d is only offered when a new document is compared with the current top k."
      : "This answer is not available for this question.", "warning", false);
    return;
  }
  clock.sync();
  const q = state.question;
  // documents "refs": the answer names the next documents without their texts, which the
  // page does not use (it shows the server's rendering from /frames and /lookahead).
  /** @type {Record<string, any>} */
  const body = { seq: q.seq, active_ms: clock.activeMs() };
  if (taskApi) body.documents = "refs";
  Object.assign(body, extra);
  const comment = pendingComment();
  if (comment) body.comment = comment;
  send({ kind: "judgment", path: "/judgments", body, seq: q.seq, brokenTitle });
}

/** Undo back to answer `seq` (it and every later one are taken back).
 * @param {number} seq @param {number} from the seq of the question on screen */
export function undoBackTo(seq, from) {
  /** @type {Record<string, any>} */
  const body = { to_seq: seq };
  if (taskApi) body.documents = "refs";
  send({ kind: "undo", path: "/undo", body, undoFromSeq: from });
}
