// @ts-check
/* Plan form: the rotation shifts and the balanced per-query counts follow the number of
 * ticked assessors, unless the admin typed their own value; the hint and the problem line say
 * what fits before Preview is pressed. What fits is the server's rule (plan_fit in
 * app/web/admin.py), handed over for every number of assessors in
 * <script type="application/json" id="plan-fits">; nothing is computed here. */

/**
 * What fits m ticked assessors (plan_fits[m]).
 * @typedef {object} PlanFit
 * @property {string} shifts rotation shifts, e.g. "0,2"
 * @property {number} per_query balanced: assessors per query and method
 * @property {string} text the hint
 * @property {string | null} problem why a plan of m assessors cannot be made, or null
 */

/** The entry for `ticked` assessors (the last one if there are more, which cannot happen
 * with the page's own checkboxes).
 * @param {PlanFit[]} fits @param {number} ticked @returns {PlanFit | undefined} */
export function fitFor(fits, ticked) {
  return fits[Math.max(0, Math.min(ticked, fits.length - 1))];
}

/** @param {HTMLFormElement} form @param {PlanFit[]} fits */
export function installPlanForm(form, fits) {
  const hint = /** @type {HTMLElement} */ (document.getElementById("plan-fit"));
  const problem = /** @type {HTMLElement} */ (document.getElementById("plan-problem"));
  const fields = ["shifts", "per_topk", "per_graded"].map(
    (id) => /** @type {HTMLInputElement | null} */ (document.getElementById(id)));
  for (const f of fields) {
    if (f) f.addEventListener("input", () => { f.setAttribute("data-auto", "0"); });
  }

  function update() {
    const fit = fitFor(fits, form.querySelectorAll('input[name="assessors"]:checked').length);
    if (!fit) return;
    const values = [fit.shifts, String(fit.per_query), String(fit.per_query)];
    fields.forEach((f, i) => {
      if (f && f.getAttribute("data-auto") === "1") f.value = values[i];
    });
    hint.textContent = fit.text;
    problem.textContent = fit.problem || "";
    problem.hidden = !fit.problem;
  }

  form.addEventListener("change", (e) => {
    const t = /** @type {HTMLInputElement | null} */ (e.target);
    if (t && t.name === "assessors") update();
  });
}
