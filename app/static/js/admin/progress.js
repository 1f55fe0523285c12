// @ts-check
/* Admin collection page: refresh the progress section without reloading the page. The server
 * renders the fragment (autoescaped Jinja, templates/collections/_progress.html); it is
 * swapped in every few seconds while the tab is visible. */

/** @param {HTMLElement} box the element with data-refresh-url */
export function installProgressRefresh(box) {
  const url = box.getAttribute("data-refresh-url") || "";
  const seconds = parseInt(box.getAttribute("data-refresh-seconds") || "5", 10);
  let busy = false;

  // Keep the <details> the admin opened open across refreshes.
  const openDetails = () => Array.from(box.querySelectorAll("details"), (d) => d.open);

  function refresh() {
    if (busy || document.hidden) return;
    busy = true;
    const open = openDetails();
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
      .then((html) => {
        const doc = new DOMParser().parseFromString(html, "text/html");
        box.replaceChildren(...Array.from(doc.body.childNodes));
        box.querySelectorAll("details").forEach((d, i) => { if (open[i]) d.open = true; });
        box.setAttribute("data-refreshed", String(Date.now()));
      })
      .catch(() => { /* keep the last good numbers; try again next tick */ })
      .then(() => { busy = false; });
  }

  setInterval(refresh, Math.max(2, seconds) * 1000);
  document.addEventListener("visibilitychange", refresh);
}
