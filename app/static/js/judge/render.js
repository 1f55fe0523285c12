// @ts-check
/* Showing a question: first make sure every document is in a card whose frame has loaded
 * (pooled, or loaded now into a hidden card from the cache or one /frames request), then swap
 * everything in one go, so no frame is ever shown blank. Until then the previous question
 * stays on screen and keys are ignored (state.loading). Performance marks (hj-response,
 * hj-shown, and hj-load when the documents had not been preloaded; read by
 * benchmarks/ui_latency.py) time the path response -> documents swapped. */
import {
  cardOf, cards, documentRef, fetchFrames, frames, loadCard, prefetch, setShown, showDocs, spareCard, touch,
  whenLoaded,
} from "./cards.js";
import { clock, renderClock } from "./clock.js";
import { clearStored } from "./notices.js";
import { $, appendSideNames, boot, els, main, mark, SIDES, state } from "./page.js";
import { challengerSide } from "./payload.js";

/** @typedef {import("./types.js").Question} Question */
/** @typedef {import("./types.js").DocRef} DocRef */

/** Only the outcomes the protocol accepts now are offered: "not relevant" applies to the
 * challenger of a Step-2 root comparison only (labeling.protocol.topk.TopKSession.allowed_outcomes).
 * @param {Question} q */
function renderOutcomes(q) {
  const allowed = q.allowed_outcomes || null;
  for (const b of /** @type {NodeListOf<HTMLButtonElement>} */ (document.querySelectorAll("[data-action]"))) {
    const action = b.getAttribute("data-action") || "";
    if (["left", "right", "tie", "not_relevant"].indexOf(action) < 0) continue;
    const ok = !allowed || allowed.indexOf(/** @type {any} */ (action)) >= 0;
    b.disabled = !ok;
    b.setAttribute("aria-disabled", ok ? "false" : "true");
  }
  renderNotRelevant(challengerSide(q));
}

/** "Left is not relevant" / "Right is not relevant" (Top / Bottom on a narrow screen, where
 * the documents are stacked), on the button and in the keys help line.
 * @param {string | null} side */
function renderNotRelevant(side) {
  for (const el of [$("nr-label"), $("nr-key-label")]) {
    if (!el) continue;
    if (el.getAttribute("data-side") === (side || "")) continue;
    el.textContent = "";
    const names = side ? SIDES[side] : null;
    if (names) {
      appendSideNames(el, names);
      el.appendChild(document.createTextNode(" is not relevant"));
    } else {
      el.textContent = "New document is not relevant";
    }
    el.setAttribute("data-side", side || "");
  }
}

/** @param {string} outcome @returns {boolean} */
export function outcomeAllowed(outcome) {
  const allowed = state.question && state.question.allowed_outcomes;
  return !allowed || allowed.indexOf(/** @type {any} */ (outcome)) >= 0;
}

/** @param {import("./types.js").Progress | undefined} p */
function renderProgress(p) {
  if (!p) return;
  const done = p.judgments || 0;
  const left = Math.max(0, Math.round(p.estimated_remaining || 0));
  const frac = done + left > 0 ? done / (done + left) : 1;
  els.fill.style.width = (100 * frac).toFixed(1) + "%";
  els.track.setAttribute("aria-valuenow", String(Math.round(100 * frac)));
  els.progressText.textContent = done + (done === 1 ? " judgment" : " judgments") +
    (state.question && state.question.done ? " · finished" : " · about " + left + " left");
}

/** @param {Question} q @returns {DocRef[]} */
function questionDocs(q) {
  if (boot.method === "topk" && q.pair) return [q.pair.left, q.pair.right];
  return q.document ? [q.document] : [];
}

/** Show question q (see the module comment). @param {Question} q */
export function render(q) {
  const token = ++state.renderToken;
  if (q.done) { paint(q); return; }
  // The question went to a second assessor: the page shows the waiting state.
  if (q.waiting) { clearStored(); window.location.reload(); return; }
  const docs = questionDocs(q);
  // Server-rendered cards (the first question) are shown as they are: their frames load
  // with the page.
  if (docs.every((d) => {
    const c = cardOf(d.doc_id);
    return c && (c._loaded || c._initial);
  })) {
    paint(q);
    return;
  }
  state.loading = true;
  mark("hj-load"); // not preloaded: the documents are loaded now, before the swap
  const need = docs.filter((d) => !cardOf(d.doc_id)).map((d) => d.doc_id);
  fetchFrames(need).then(() => {
    if (token !== state.renderToken) return null;
    const keep = cards().filter((c) => !c.hidden);
    const loading = docs.map((d) => {
      let card = cardOf(d.doc_id);
      if (!card) {
        // /frames failed: the document's URL without its version (loaded, not cached).
        const rendered = frames.get(d.doc_id) || documentRef(d.doc_id);
        card = spareCard(keep);
        setShown(card, false);
        card.removeAttribute("data-slot");
        loadCard(card, d.doc_id, rendered);
        touch(card);
      }
      keep.push(card);
      return card;
    });
    return Promise.all(loading.map((c) => whenLoaded(c, 3000)));
  }).then((loaded) => {
    if (loaded === null || token !== state.renderToken) return;
    state.loading = false;
    paint(q);
  });
}

/** @param {Question} q */
function paint(q) {
  state.loading = false;
  state.question = q;
  if (q.done) {
    clock.close();
    clearStored();
    main.setAttribute("data-done", "true");
    renderProgress(q.progress);
    window.location.assign(boot.done_url);
    return;
  }
  if (boot.method === "topk" && q.pair) {
    showDocs([["left", q.pair.left], ["right", q.pair.right]]);
    renderOutcomes(q);
  } else if (q.document) {
    showDocs([["single", q.document]]);
  }
  renderProgress(q.progress);
  // Fresh question: its own clock starts now.
  clock.startQuestion();
  main.setAttribute("data-seq", String(q.seq));
  mark("hj-shown");
  renderClock();
  setTimeout(() => { prefetch(q.seq); }, 0);
}
