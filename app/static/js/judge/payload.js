// @ts-check
/* Reading the server's answers (no DOM). */

/** @typedef {import("./types.js").Question} Question */

/** The current question a 409 carries, either as the body itself or under a key.
 * @param {any} data @returns {Question | null} */
export function currentFrom(data) {
  if (!data) return null;
  const cands = [data, data.current, data.question, data.detail && data.detail.current];
  for (const c of cands) {
    if (c && typeof c === "object" && typeof c.done === "boolean" &&
        (c.done || c.pair || c.document)) return c;
  }
  return null;
}

/** The server's explanation of a refusal, or `fallback`.
 * @param {any} data @param {string} fallback @returns {string} */
export function detailText(data, fallback) {
  if (data && typeof data.detail === "string") return data.detail;
  if (data && data.detail && typeof data.detail.message === "string") return data.detail.message;
  return fallback;
}

/** The side of Step 2's new document, which "not relevant" refers to: the payload's
 * "challenger" is "left" | "right" | null (app.judging.service); a doc id is accepted too.
 * null when absent (an older server), so the label falls back to the generic text.
 * @param {Question} q @returns {"left" | "right" | null} */
export function challengerSide(q) {
  const c = q.challenger;
  if (!c || !q.pair) return null;
  if (c === "left" || c === "right") return c;
  if (q.pair.left && c === q.pair.left.doc_id) return "left";
  if (q.pair.right && c === q.pair.right.doc_id) return "right";
  return null;
}
