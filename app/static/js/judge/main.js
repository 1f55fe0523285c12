// @ts-check
/* heapjudge judging loop (tools T1 pairwise and T2 five-grade): the entry module of the
 * judging pages (templates/judging/*.html, loaded with <script type="module">; no inline
 * script anywhere, the page's CSP is script-src 'self').
 *
 * The modules, in the order a question travels: page.js (boot data, elements, shared
 * state), idle-clock.js and clock.js (honest active time), cards.js and scroll.js (the
 * documents' sandboxed frames), render.js (showing a question), submitter.js and requests.js
 * (nothing lost or doubled), answer.js and actions.js (keys and buttons), panels.js,
 * answers.js, broken.js and comment.js (the assessor tools), query.js (the query bar).
 * Performance marks (hj-key, hj-sent, hj-response, hj-shown, hj-load) are read by
 * benchmarks/ui_latency.py. */
import { installActions } from "./actions.js";
import { installAnswers } from "./answers.js";
import { installBroken } from "./broken.js";
import { initCards } from "./cards.js";
import { installClock } from "./clock.js";
import { clearStored, notice, stored } from "./notices.js";
import { boot, focusHome, hasBoot } from "./page.js";
import { autoGuidelines, installPanels } from "./panels.js";
import { installQuery } from "./query.js";
import { detailText } from "./payload.js";
import { render } from "./render.js";
import { request, send } from "./requests.js";
import { installScrolling } from "./scroll.js";

/** @param {import("./types.js").Question} q */
function start(q) {
  // Documents of the first question are already in the (server-rendered) cards.
  render(q);
  focusHome();
  if (!q.done) autoGuidelines();
  const saved = stored();
  if (saved && saved.kind === "judgment" && saved.body && saved.body.seq === q.seq && !q.done) {
    // A judgment that never got through (network, expired session): send it now.
    saved.attempts = 0;
    notice("Sending the judgment that did not get through…", "warning", false);
    send(saved);
  } else if (saved) {
    clearStored();
  }
}

if (hasBoot) {
  installQuery();
  installClock();
  initCards();
  installScrolling();
  installPanels();
  installAnswers();
  installBroken();
  installActions();
  if (boot.question) {
    start(boot.question);
  } else {
    request("GET", "/next").then((r) => {
      if (r.ok) start(r.data);
      else notice(detailText(r.data, "Could not load the task."), "error", false);
    }, () => { notice("Could not reach the server. Reload the page to try again.", "error", false); });
  }
}
