// Admin collection page: refresh the progress section without reloading the page.
// The server renders the fragment (autoescaped Jinja); we swap it in every few seconds while
// the tab is visible. No inline script anywhere: the page CSP is script-src 'self'.
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
