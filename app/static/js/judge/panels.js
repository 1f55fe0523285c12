// @ts-check
/* The assessor tools: four panels over the documents (templates/judging/_common.html): the
 * guidelines (a side panel; answering stays possible while it is open), my answers, the
 * broken-document dialog and the comment box (these three hold the keyboard until closed:
 * Esc). One at a time; the toolbar button and key of a panel toggle it. The panels' own
 * behaviour (answers.js, broken.js) is registered here. */
import { renderCommentButton } from "./comment.js";
import { clearNotice } from "./notices.js";
import { $, boot, els, focusHome, state, taskApi } from "./page.js";

/** @typedef {"guidelines" | "answers" | "broken" | "comment"} PanelName */

/** @type {Record<string, HTMLElement | null>} */
const panels = {
  guidelines: $("guidelines-panel"),
  answers: $("answers-panel"),
  broken: $("broken-panel"),
  comment: $("comment-panel"),
};
/** @type {Record<string, HTMLElement | null>} */
const panelButtons = {
  guidelines: $("guidelines-button"),
  answers: $("answers-button"),
  broken: $("broken-button"),
  comment: $("comment-button"),
};
/** The panels that hold the keyboard (and forbid answering) while open. */
export const MODAL = /** @type {Record<string, boolean>} */ ({ answers: true, broken: true, comment: true });
/** @type {Record<string, string>} */
const TOGGLE_KEYS = { guidelines: "gG?", answers: "aA" };

/**
 * What a panel does when opened and on Enter (registered by its module).
 * @typedef {object} PanelHooks
 * @property {() => void} [open]
 * @property {() => void} [enter]
 */
/** @type {Record<string, PanelHooks>} */
const hooks = {};
/** @param {PanelName} name @param {PanelHooks} panelHooks */
export function registerPanel(name, panelHooks) {
  hooks[name] = panelHooks;
}

/** The panel element (null on a page without the tools). @param {PanelName} name */
export function panel(name) {
  return panels[name];
}

/** Buttons with data-tool="name" inside the panels: what they do. */
export const tools = /** @type {Record<string, (button: HTMLElement) => void>} */ ({
  close: () => { closePanel(); },
  "clear-comment": () => { els.commentText.value = ""; els.commentText.focus(); },
});

/** @param {PanelName} name @param {boolean} [focusIt] */
export function togglePanel(name, focusIt) {
  if (state.panel === name) { closePanel(); return; }
  if (name !== "guidelines" && (!state.question || state.question.done)) return;
  openPanel(name, focusIt !== false);
}

/** @param {PanelName} name @param {boolean} focusIt */
function openPanel(name, focusIt) {
  const el = panels[name];
  if (!el) return;
  if (state.panel) closePanel(true);
  state.panel = name;
  el.hidden = false;
  const b = panelButtons[name];
  if (b && b.hasAttribute("aria-expanded")) b.setAttribute("aria-expanded", "true");
  const h = hooks[name];
  if (h && h.open) h.open();
  if (!focusIt) return;
  const target = name === "guidelines" ? $("guidelines-body")
    : name === "comment" ? els.commentText
    : name === "broken" ? el.querySelector("input[type=radio]:checked")
    : $("answers-body");
  if (target) target.focus({ preventScroll: true });
}

/** Close the open panel; focus goes back to the judging area (unless another panel opens).
 * @param {boolean} [opening] @returns {boolean} whether one was open */
export function closePanel(opening) {
  const name = state.panel;
  if (!name) return false;
  const el = panels[name];
  if (el) el.hidden = true;
  state.panel = null;
  const b = panelButtons[name];
  if (b && b.hasAttribute("aria-expanded")) b.setAttribute("aria-expanded", "false");
  if (name === "comment") renderCommentButton();
  if (state.noticeKind === "panel") clearNotice();
  if (!opening) focusHome();
  return true;
}

/** Keys typed inside an open panel belong to it (radio arrows, Enter, Space, typing), except
 * its own toggle key outside text fields.
 * @param {KeyboardEvent} e @returns {boolean} true when the page must not act on the key */
export function panelKey(e) {
  const t = /** @type {HTMLElement | null} */ (e.target);
  const inPanel = t && t.closest ? t.closest(".tool-panel") : null;
  if (!t || !inPanel || !state.panel) return false;
  const typing = t.tagName === "TEXTAREA" ||
    (t.tagName === "INPUT" && /** @type {HTMLInputElement} */ (t).type === "text");
  const toggles = TOGGLE_KEYS[state.panel] || "";
  if (!typing && e.key.length === 1 && toggles.indexOf(e.key) >= 0) {
    e.preventDefault();
    closePanel();
    return true;
  }
  const h = hooks[state.panel];
  if (e.key === "Enter" && t.tagName !== "BUTTON" && h && h.enter) {
    e.preventDefault();
    h.enter();
  }
  return true;
}

/** Guidelines open by themselves on the first visit to a collection's task, and again after
 * the admin changed them: the version seen is kept in this browser's localStorage per user
 * and collection (boot.guidelines_key). They do not take the focus: keys keep answering. */
export function autoGuidelines() {
  if (!boot.guidelines_version || !boot.guidelines_key || !panels.guidelines) return;
  let seen = null;
  try { seen = window.localStorage.getItem(boot.guidelines_key); } catch { seen = null; }
  if (seen === boot.guidelines_version) return;
  openPanel("guidelines", false);
  try {
    window.localStorage.setItem(boot.guidelines_key, boot.guidelines_version);
  } catch { /* private mode */ }
}

/** The tools belong to the assessor's own task: a page whose boot names another answering
 * URL (boot.api_url) answers a question that is not in a task of its own, so it has none. */
export function installPanels() {
  if (!taskApi) {
    for (const name of Object.keys(panels)) panels[name] = null;
    const toolBar = /** @type {HTMLElement | null} */ (document.querySelector(".tool-buttons"));
    if (toolBar) toolBar.hidden = true;
  }
  // A link in the guidelines opens in a new tab: following it here would leave the task.
  if (panels.guidelines) {
    for (const a of /** @type {NodeListOf<HTMLAnchorElement>} */ (panels.guidelines.querySelectorAll("a[href]"))) {
      a.target = "_blank";
    }
  }
  document.addEventListener("click", (e) => {
    const el = /** @type {HTMLElement | null} */ (e.target);
    const t = el && el.closest ? /** @type {HTMLElement | null} */ (el.closest("[data-tool]")) : null;
    if (!t) return;
    const tool = tools[t.getAttribute("data-tool") || ""];
    if (tool) tool(t);
  });
}
