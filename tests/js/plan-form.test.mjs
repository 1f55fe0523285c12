// Unit test of the plan form's pick (app/static/js/admin/plan-form.js): the page shows the
// server's plan_fit for the ticked count and computes nothing itself.
import assert from "node:assert/strict";
import { test } from "node:test";

import { fitFor } from "../../app/static/js/admin/plan-form.js";

const fits = [0, 1, 2, 3, 4].map((m) => ({ shifts: m >= 4 ? "0,2" : "0", per_query: m, text: "t" + m, problem: null }));

test("the entry of the ticked count", () => {
  assert.equal(fitFor(fits, 3), fits[3]);
  assert.equal(fitFor(fits, 0), fits[0]);
});

test("counts outside the table take its ends", () => {
  assert.equal(fitFor(fits, 9), fits[4]);
  assert.equal(fitFor(fits, -1), fits[0]);
  assert.equal(fitFor([], 2), undefined);
});
