// @ts-check
/* The comment box: its text goes with the next answer (docs/rest-api.md#the-judging-loop:
 * any judgment may carry a comment) and is cleared once the server has stored the answer. */
import { els } from "./page.js";

/** @returns {string} */
export function pendingComment() {
  return els.commentText ? els.commentText.value.trim() : "";
}

export function renderCommentButton() {
  if (!els.commentButton) return;
  const on = pendingComment() !== "";
  els.commentButton.setAttribute("aria-pressed", on ? "true" : "false");
  els.commentButton.title = on ? "A comment goes with your next answer (C to edit)"
    : "Add a comment to your next answer (C)";
}

/** The answer carrying `text` was stored. @param {string} text */
export function commentSent(text) {
  if (els.commentText && els.commentText.value.trim() === text) els.commentText.value = "";
  renderCommentButton();
}
