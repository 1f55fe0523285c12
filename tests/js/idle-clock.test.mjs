// Unit tests of the judging page's clock (app/static/js/judge/idle-clock.js): honest active
// time with a fake time source.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ActiveClock, formatDuration } from "../../app/static/js/judge/idle-clock.js";

/** A clock on a fake time source that moves only when told to. */
function fakeClock(options = {}) {
  const time = { t: 1000 };
  const clock = new ActiveClock({ now: () => time.t, idleMs: 60000, ...options });
  const advance = (ms) => { time.t += ms; };
  return { clock, advance, time };
}

test("runs only while a question is open", () => {
  const { clock, advance } = fakeClock();
  advance(5000);
  assert.equal(clock.activeMs(), 0, "no question yet");
  clock.startQuestion();
  advance(3000);
  assert.equal(clock.activeMs(), 3000);
  clock.close();
  advance(4000);
  assert.equal(clock.activeMs(), 3000, "a finished task counts nothing more");
});

test("a fresh question starts from zero", () => {
  const { clock, advance } = fakeClock();
  clock.startQuestion();
  advance(2500);
  clock.addStored(clock.activeMs());
  clock.startQuestion();
  advance(1000);
  assert.equal(clock.activeMs(), 1000);
  assert.equal(clock.totalMs(), 3500, "the display adds the stored time");
});

test("pause stops the clock and resume continues it", () => {
  const { clock, advance } = fakeClock();
  clock.startQuestion();
  advance(2000);
  assert.equal(clock.setPaused(true), true);
  assert.equal(clock.label(), "paused");
  advance(10000);
  assert.equal(clock.activeMs(), 2000, "paused time is not counted");
  assert.equal(clock.setPaused(true), false, "pausing twice changes nothing");
  assert.equal(clock.setPaused(false), true);
  advance(500);
  assert.equal(clock.activeMs(), 2500);
});

test("a hidden tab stops the clock", () => {
  const { clock, advance } = fakeClock();
  clock.startQuestion();
  advance(1000);
  clock.setHidden(true);
  assert.equal(clock.label(), "stopped");
  advance(30000);
  clock.setHidden(false);
  advance(1000);
  assert.equal(clock.activeMs(), 2000);
});

test("the clock starts stopped in a hidden tab", () => {
  const { clock, advance } = fakeClock({ hidden: true });
  clock.startQuestion();
  advance(5000);
  assert.equal(clock.activeMs(), 0);
});

test("idle time is cut back to the last input", () => {
  const { clock, advance } = fakeClock({ idleMs: 10000 });
  clock.startQuestion();
  advance(4000);
  clock.markInput(); // the last input, 4 s into the question
  advance(9999);
  assert.equal(clock.checkIdle(), false, "not yet idle");
  advance(1);
  assert.equal(clock.checkIdle(), true, "idle after idleMs without input");
  assert.equal(clock.idle, true);
  assert.equal(clock.label(), "idle");
  assert.equal(clock.activeMs(), 4000, "only the time up to the last input counts");
  advance(60000);
  assert.equal(clock.activeMs(), 4000, "nothing counts while idle");
  assert.equal(clock.checkIdle(), false, "already idle");
  assert.equal(clock.leaveIdle(), true);
  advance(2000);
  assert.equal(clock.activeMs(), 6000, "the clock runs again after 'still there?'");
  assert.equal(clock.leaveIdle(), false, "not idle any more");
});

test("input keeps the clock from going idle", () => {
  const { clock, advance } = fakeClock({ idleMs: 10000 });
  clock.startQuestion();
  for (let i = 0; i < 5; i++) {
    advance(9000);
    clock.markInput();
    assert.equal(clock.checkIdle(), false);
  }
  assert.equal(clock.activeMs(), 45000);
});

test("a question shown after a long wait cuts from its own start, not from old input", () => {
  const { clock, advance } = fakeClock({ idleMs: 10000 });
  clock.markInput();
  advance(50000); // no question on screen: no running segment
  assert.equal(clock.checkIdle(), false, "a stopped clock does not go idle");
  clock.startQuestion();
  advance(10000);
  assert.equal(clock.checkIdle(), true);
  assert.equal(clock.activeMs(), 0, "the cut is at the segment's start (the last input was before it)");
});

test("paused, the clock does not go idle", () => {
  const { clock, advance } = fakeClock({ idleMs: 1000 });
  clock.startQuestion();
  clock.setPaused(true);
  advance(5000);
  assert.equal(clock.checkIdle(), false);
  assert.equal(clock.idle, false);
});

test("resuming counts as input", () => {
  const { clock, advance } = fakeClock({ idleMs: 10000 });
  clock.startQuestion();
  clock.setPaused(true);
  advance(20000);
  clock.setPaused(false);
  advance(9000);
  assert.equal(clock.checkIdle(), false, "the resume is the last input");
  assert.equal(clock.activeMs(), 9000);
});

test("formatDuration", () => {
  assert.equal(formatDuration(0), "0:00");
  assert.equal(formatDuration(59999), "0:59");
  assert.equal(formatDuration(61000), "1:01");
  assert.equal(formatDuration(3600000 + 5 * 60000 + 7000), "1:05:07");
});
