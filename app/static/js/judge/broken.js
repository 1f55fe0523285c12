// @ts-check
/* The broken-document dialog: which document (of a pair), why, and details; the answer is a
 * judgment with outcome "broken". */
import { canAct, judge } from "./answer.js";
import { boot, els, state } from "./page.js";
import { closePanel, panel, registerPanel } from "./panels.js";

function prepareBroken() {
  const q = state.question;
  const box = panel("broken");
  if (!q || !box) return;
  els.brokenError.hidden = true;
  for (const title of box.querySelectorAll(".broken-doc-title")) {
    const side = title.getAttribute("data-side");
    const doc = side === "single" ? q.document
      : q.pair && (side === "left" || side === "right") ? q.pair[side] : null;
    title.textContent = doc ? (doc.title || doc.doc_id) : "";
  }
}

/** @param {string} name @returns {string | null} */
function checkedValue(name) {
  const el = els.brokenForm.querySelector("input[name=" + name + "]:checked");
  return el ? el.value : null;
}

/** @param {string} text */
function brokenError(text) {
  els.brokenError.textContent = text;
  els.brokenError.hidden = false;
}

function submitBroken() {
  const q = state.question;
  if (!q || q.done) return;
  const side = checkedValue("broken-side") === "right" ? "right" : "left";
  const doc = boot.method === "topk" && q.pair ? q.pair[side] : q.document;
  if (!doc) return;
  const reason = checkedValue("broken-reason") || "Other";
  const detail = els.brokenDetail.value.replace(/\s+/g, " ").trim();
  if (reason === "Other" && !detail) {
    brokenError("Say what is wrong with it in Details.");
    els.brokenDetail.focus();
    return;
  }
  if (!canAct()) { brokenError("The page is still busy; try again in a moment."); return; }
  const text = (reason === "Other" ? detail : detail ? reason + ": " + detail : reason).slice(0, 500);
  /** @type {Record<string, any>} */
  const extra = { outcome: "broken", doc_id: doc.doc_id, reason: text };
  if (boot.method === "topk" && q.pair) {
    extra.left = q.pair.left.doc_id;
    extra.right = q.pair.right.doc_id;
  }
  closePanel();
  els.brokenForm.reset();
  judge(extra, doc.title || doc.doc_id);
}

export function installBroken() {
  registerPanel("broken", { open: prepareBroken, enter: submitBroken });
  if (els.brokenForm) {
    els.brokenForm.addEventListener("submit", (/** @type {Event} */ e) => {
      e.preventDefault();
      submitBroken();
    });
  }
}
