// @ts-check
/* The query bar: in full, or collapsed to one line (ellipsis) so that a long query leaves the
 * documents their room. The toggle button and Q switch it; the choice is remembered per task
 * (or second opinion) in the browser's localStorage. */
import { $, boot } from "./page.js";

/** The localStorage key of this page's choice ("1" collapsed, "0" in full). */
export const queryKey = "heapjudge.query-collapsed." + (boot.store_key || boot.task_id);

/** @param {Storage | null} store @returns {boolean} */
export function storedCollapsed(store) {
  try { return !!store && store.getItem(queryKey) === "1"; } catch { return false; }
}

/** @param {boolean} collapsed */
function apply(collapsed) {
  const bar = $("query-bar");
  const toggle = $("query-toggle");
  if (!bar || !toggle) return;
  bar.classList.toggle("collapsed", collapsed);
  toggle.setAttribute("aria-expanded", collapsed ? "false" : "true");
}

function storage() {
  try { return window.localStorage; } catch { return null; }
}

export function toggleQuery() {
  const bar = $("query-bar");
  if (!bar) return;
  const collapsed = !bar.classList.contains("collapsed");
  apply(collapsed);
  try {
    const store = storage();
    if (store) store.setItem(queryKey, collapsed ? "1" : "0");
  } catch { /* private mode: the choice holds for this page only */ }
}

/** Apply the remembered choice (first thing on load, before the documents are shown). */
export function installQuery() {
  apply(storedCollapsed(storage()));
}
