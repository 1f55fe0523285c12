// @ts-check
/* The admin pages' entry module (templates/collections/collection.html, loaded with
 * <script type="module">; no inline script anywhere: the page CSP is script-src 'self'). */
import { installPlanForm } from "./plan-form.js";
import { installProgressRefresh } from "./progress.js";

const box = /** @type {HTMLElement | null} */ (document.querySelector("[data-refresh-url]"));
if (box) installProgressRefresh(box);

const form = /** @type {HTMLFormElement | null} */ (document.getElementById("plan-form"));
const fitsEl = document.getElementById("plan-fits");
if (form && fitsEl) installPlanForm(form, JSON.parse(fitsEl.textContent || "[]"));
