// Admin collection page: refresh the progress section without reloading the page, and keep the
// plan form's defaults fitting the ticked assessors. The server renders the fragment
// (autoescaped Jinja); we swap it in every few seconds while the tab is visible. No inline
// script anywhere: the page CSP is script-src 'self'.
(function () {
  "use strict";
  var box = document.querySelector("[data-refresh-url]");
  if (!box) return;
  var url = box.getAttribute("data-refresh-url");
  var seconds = parseInt(box.getAttribute("data-refresh-seconds") || "5", 10);
  var busy = false;

  function openDetails() {
    // Keep <details> the admin opened open across refreshes.
    return Array.prototype.map.call(box.querySelectorAll("details"), function (d) { return d.open; });
  }

  function refresh() {
    if (busy || document.hidden) return;
    busy = true;
    var open = openDetails();
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        box.replaceChildren.apply(box, Array.prototype.slice.call(doc.body.childNodes));
        box.querySelectorAll("details").forEach(function (d, i) { if (open[i]) d.open = true; });
        box.setAttribute("data-refreshed", String(Date.now()));
      })
      .catch(function () { /* keep the last good numbers; try again next tick */ })
      .then(function () { busy = false; });
  }

  setInterval(refresh, Math.max(2, seconds) * 1000);
  document.addEventListener("visibilitychange", refresh);
})();

// Plan form: the rotation shifts and the balanced per-query counts follow the number of ticked
// assessors (the same rule as plan_fit in app/web/admin.py: shifts 0,2 need four
// assessors, 2 x per-query at most the assessors), unless the admin typed their own value; the
// hint and the problem line say what fits before Preview is pressed.
(function () {
  "use strict";
  var form = document.getElementById("plan-form");
  if (!form) return;
  var queries = parseInt(form.getAttribute("data-queries") || "0", 10);
  var fit = document.getElementById("plan-fit");
  var problem = document.getElementById("plan-problem");
  var fields = ["shifts", "per_topk", "per_graded"].map(function (id) {
    return document.getElementById(id);
  });
  fields.forEach(function (f) {
    if (f) f.addEventListener("input", function () { f.setAttribute("data-auto", "0"); });
  });

  function ticked() {
    return form.querySelectorAll('input[name="assessors"]:checked').length;
  }

  function update() {
    var m = ticked();
    var shifts = m >= 4 ? "0,2" : "0";
    var per = Math.max(1, Math.min(2, Math.floor(m / 2)));
    var values = [shifts, String(per), String(per)];
    fields.forEach(function (f, i) {
      if (f && f.getAttribute("data-auto") === "1") f.value = values[i];
    });
    fit.textContent = m + " assessor" + (m === 1 ? "" : "s") + " ticked: rotation shifts " +
      shifts + (shifts === "0" ? " (one assignment; the paper's second, shift 2, needs four " +
      "assessors)" : "") + "; balanced: up to " + per + " T1 and " + per + " T2 assessor" +
      (per === 1 ? "" : "s") + " per query.";
    var text = "";
    if (m < 2) text = "Choose at least two assessors: every assessor uses both tools.";
    else if (queries && queries < m) {
      text = "The rotation needs at least as many queries as assessors (" + queries + " < " + m +
        "); choose fewer assessors or the balanced scheme.";
    }
    problem.textContent = text;
    problem.hidden = !text;
  }

  form.addEventListener("change", function (e) {
    if (e.target && e.target.name === "assessors") update();
  });
})();
