// @ts-check
/* Honest time (no DOM): `active_ms` sent with a judgment is the time the question was on
 * screen while the clock ran. The clock stops when the assessor pauses, when the tab is
 * hidden, and after `idleMs` without input; idle time is cut back to the last input, so
 * nothing after it counts. The time source is injected (performance.now on the page). */

export class ActiveClock {
  /**
   * @param {object} options
   * @param {() => number} options.now milliseconds, monotonic
   * @param {number} options.idleMs input-free time after which the clock stops
   * @param {number} [options.sessionMs] active time already stored for this task
   * @param {boolean} [options.hidden] whether the tab is hidden now
   */
  constructor({ now, idleMs, sessionMs = 0, hidden = false }) {
    this.now = now;
    this.idleMs = idleMs;
    this.paused = false;
    this.idle = false;
    this.hidden = hidden;
    /** A question is on screen and the task not done. */
    this.open = false;
    /** Accumulated for the current question. */
    this.questionMs = 0;
    /** @type {number | null} now() when the current running segment began */
    this.runningSince = null;
    /** Active time already stored for this task (display only). */
    this.sessionMs = sessionMs;
    this.lastInput = now();
  }

  /** @returns {boolean} */
  shouldRun() {
    return !this.paused && !this.idle && !this.hidden && this.open;
  }

  /** Start or stop the running segment to match the state. @param {number} [at] */
  sync(at) {
    const t = at === undefined ? this.now() : at;
    const run = this.shouldRun();
    if (run && this.runningSince === null) {
      this.runningSince = t;
    } else if (!run && this.runningSince !== null) {
      this.questionMs += Math.max(0, t - this.runningSince);
      this.runningSince = null;
    }
  }

  /** The active time of the question on screen, whole milliseconds. */
  activeMs() {
    let ms = this.questionMs;
    if (this.runningSince !== null) ms += Math.max(0, this.now() - this.runningSince);
    return Math.round(ms);
  }

  /** What the clock shows: the task's stored time plus this question's. */
  totalMs() {
    return this.sessionMs + this.activeMs();
  }

  /** A fresh question: its own clock starts now. */
  startQuestion() {
    this.open = true;
    this.questionMs = 0;
    this.runningSince = null;
    this.sync();
  }

  /** The task is finished: nothing runs any more. */
  close() {
    this.open = false;
    this.sync();
  }

  /** @param {boolean} paused @returns {boolean} whether it changed */
  setPaused(paused) {
    if (this.paused === paused) return false;
    this.paused = paused;
    this.sync();
    if (!paused) this.lastInput = this.now();
    return true;
  }

  /** @param {boolean} hidden */
  setHidden(hidden) {
    this.hidden = hidden;
    this.sync();
    if (!hidden) this.lastInput = this.now();
  }

  markInput() {
    this.lastInput = this.now();
  }

  /** Go idle when `idleMs` passed since the last input, counting only up to that input.
   * @returns {boolean} whether it went idle now */
  checkIdle() {
    if (this.idle || this.runningSince === null) return false;
    if (this.now() - this.lastInput < this.idleMs) return false;
    const cutAt = Math.max(this.runningSince, this.lastInput);
    this.questionMs += Math.max(0, cutAt - this.runningSince);
    this.runningSince = null;
    this.idle = true;
    return true;
  }

  /** @returns {boolean} whether it was idle */
  leaveIdle() {
    if (!this.idle) return false;
    this.idle = false;
    this.lastInput = this.now();
    this.sync();
    return true;
  }

  /** A stored judgment's time joins the task's. @param {number} ms */
  addStored(ms) {
    this.sessionMs += ms;
  }

  /** @returns {"paused" | "idle" | "stopped" | ""} */
  label() {
    if (this.paused) return "paused";
    if (this.idle) return "idle";
    if (this.hidden) return "stopped";
    return "";
  }
}

/** "m:ss", or "h:mm:ss" from an hour. @param {number} ms @returns {string} */
export function formatDuration(ms) {
  const s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const mm = (h > 0 && m < 10 ? "0" : "") + m;
  return (h > 0 ? h + ":" : "") + mm + ":" + (sec < 10 ? "0" : "") + sec;
}
