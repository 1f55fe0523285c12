// @ts-check
/* The clock on the page: the ActiveClock of idle-clock.js fed by the page's input, with the
 * pause and "still there?" overlays. Paused or idle, the documents are hidden (not only
 * covered), so nothing can be read. Reading counts as input: keys, pointer movement and the
 * wheel over a document (the frames take no pointer events, so these reach this page). */
import { ActiveClock, formatDuration } from "./idle-clock.js";
import { boot, els, focusHome, main, state } from "./page.js";
import { clearNotice } from "./notices.js";

export const clock = new ActiveClock({
  now: () => performance.now(),
  idleMs: (boot.idle_seconds || 0) * 1000,
  sessionMs: boot.active_ms || 0,
  hidden: document.visibilityState === "hidden",
});

export function renderClock() {
  els.clockTime.textContent = formatDuration(clock.totalMs());
  els.clockState.textContent = clock.label();
  els.clock.setAttribute("aria-pressed", clock.paused ? "true" : "false");
  els.clock.setAttribute("aria-label", clock.paused ? "Resume timer (P)" : "Pause timer (P)");
}

function renderCover() {
  if (clock.paused || clock.idle) main.classList.add("covered");
  else main.classList.remove("covered");
}

/** @param {boolean} paused */
export function setPaused(paused) {
  if (!clock.setPaused(paused)) return;
  els.pauseOverlay.hidden = !paused;
  renderCover();
  if (!paused) {
    if (state.noticeKind === "paused") clearNotice();
    focusHome();
  } else {
    els.resume.focus();
  }
  renderClock();
}

export function markInput() {
  clock.markInput();
}

function checkIdle() {
  if (!clock.checkIdle()) return;
  els.idleOverlay.hidden = false;
  renderCover();
  els.stillHere.focus();
  renderClock();
}

export function leaveIdle() {
  if (!clock.leaveIdle()) return;
  els.idleOverlay.hidden = true;
  renderCover();
  focusHome();
  renderClock();
}

/** Listen to the tab's visibility and the pointer, and tick twice a second. */
export function installClock() {
  document.addEventListener("visibilitychange", () => {
    clock.setHidden(document.visibilityState === "hidden");
    renderClock();
  });
  for (const type of ["pointerdown", "pointermove", "wheel", "touchstart", "scroll"]) {
    window.addEventListener(type, markInput, { passive: true, capture: true });
  }
  setInterval(() => { checkIdle(); renderClock(); }, 500);
}
