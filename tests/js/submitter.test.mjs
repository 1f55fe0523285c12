// Unit tests of the judging page's retry logic (app/static/js/judge/submitter.js): nothing
// lost or doubled, with a fake transport and fake timers.
import assert from "node:assert/strict";
import { test } from "node:test";

import { backoffDelay, outcomeOf, Submitter } from "../../app/static/js/judge/submitter.js";

/** A submitter whose requests are answered by `script` (a list of replies, or "network" for
 * a network error, or a function of the call), and whose timers are collected. */
function harness(script) {
  const calls = [];
  const timers = [];
  const replies = [];
  const failures = [];
  const pending = [];
  let manual = null;
  const request = (method, path, body) => {
    calls.push({ method, path, body: body === undefined ? undefined : JSON.parse(JSON.stringify(body)) });
    if (manual) return new Promise((resolve, reject) => pending.push({ resolve, reject }));
    const next = script.shift();
    if (next === undefined) throw new Error("no reply scripted for " + method + " " + path);
    if (next === "network") return Promise.reject(new TypeError("Failed to fetch"));
    return Promise.resolve(typeof next === "function" ? next(method, path, body) : next);
  };
  const submitter = new Submitter({
    request,
    onReply: (req, reply, outcome) => replies.push({ req, reply, outcome }),
    onFailure: (req, message, delay) => failures.push({ req, message, delay }),
    setTimer: (fn, ms) => { const t = { fn, ms, cleared: false }; timers.push(t); return t; },
    clearTimer: (t) => { t.cleared = true; },
  });
  const live = () => timers.filter((t) => !t.cleared);
  return {
    submitter, calls, timers, live, replies, failures, pending,
    holdReplies() { manual = true; },
  };
}

const ok = (data) => ({ status: 200, ok: true, data });
const status = (s, data = null) => ({ status: s, ok: s >= 200 && s < 300, data });
const judgment = () => ({ kind: "judgment", path: "/judgments", body: { seq: 3, active_ms: 1234, outcome: "left" } });

test("backoff doubles from 2 s and stops at 30 s", () => {
  assert.deepEqual([1, 2, 3, 4, 5, 6, 10].map(backoffDelay), [2000, 4000, 8000, 16000, 30000, 30000, 30000]);
});

test("outcomes of the statuses", () => {
  assert.equal(outcomeOf(200), "ok");
  assert.equal(outcomeOf(409), "conflict");
  assert.equal(outcomeOf(401), "unauthorized");
  for (const s of [500, 502, 503, 429]) assert.equal(outcomeOf(s), "retry", String(s));
  for (const s of [403, 404, 422]) assert.equal(outcomeOf(s), "refused", String(s));
});

test("a stored judgment is handed over once, nothing is retried", async () => {
  const h = harness([ok({ seq: 4 })]);
  assert.equal(await h.submitter.send(judgment()), true);
  assert.equal(h.calls.length, 1);
  assert.deepEqual(h.calls[0], { method: "POST", path: "/judgments", body: { seq: 3, active_ms: 1234, outcome: "left" } });
  assert.equal(h.replies.length, 1);
  assert.equal(h.replies[0].outcome, "ok");
  assert.equal(h.submitter.failed, null);
  assert.equal(h.live().length, 0);
  assert.equal(h.submitter.inFlight, false);
});

test("a network error keeps the exact body and retries it with a growing delay", async () => {
  const h = harness(["network", "network", status(503), ok({ seq: 4 })]);
  const req = judgment();
  await h.submitter.send(req);
  assert.equal(h.failures.length, 1);
  assert.equal(h.failures[0].message, "Could not reach the server.");
  assert.equal(h.submitter.failed, req, "the request is kept for the retry");
  assert.deepEqual(h.live().map((t) => t.ms), [2000]);
  assert.equal(h.replies.length, 0, "no answer handed over yet");

  await h.live()[0].fn(); // the timer fires
  assert.deepEqual(h.live().map((t) => t.ms), [4000], "the second wait is longer; the first timer is gone");
  await h.live()[0].fn();
  assert.equal(h.failures[2].message, "The server did not answer (503).");
  assert.deepEqual(h.live().map((t) => t.ms), [8000]);
  await h.live()[0].fn();

  assert.equal(h.calls.length, 4);
  for (const c of h.calls) {
    assert.deepEqual(c, h.calls[0], "every try sends the same request (same seq, same active_ms)");
  }
  assert.equal(h.replies.length, 1, "the stored answer is handed over once");
  assert.equal(h.submitter.failed, null);
  assert.equal(h.live().length, 0, "no retry left scheduled");
});

test("no double submit: a second send while one is in flight is refused", async () => {
  const h = harness([]);
  h.holdReplies();
  const first = h.submitter.send(judgment());
  assert.equal(h.submitter.inFlight, true);
  assert.equal(await h.submitter.send(judgment()), false, "refused");
  assert.equal(await h.submitter.retry(), false, "a retry too");
  assert.equal(h.calls.length, 1, "one request went out");
  h.pending[0].resolve(ok({ seq: 4 }));
  assert.equal(await first, true);
  assert.equal(h.submitter.inFlight, false);
  assert.equal(h.replies.length, 1);
});

test("a manual retry while its timer waits sends once and cancels the timer", async () => {
  const h = harness(["network", ok({ seq: 4 })]);
  await h.submitter.send(judgment());
  const timer = h.live()[0];
  await h.submitter.retry();
  assert.equal(timer.cleared, true);
  assert.equal(h.calls.length, 2);
  assert.equal(h.replies.length, 1);
  assert.equal(await h.submitter.retry(), false, "nothing left to retry");
  assert.equal(h.calls.length, 2);
});

test("a 409 or a refusal is handed over and never retried", async () => {
  for (const s of [409, 403, 404, 422]) {
    const h = harness([status(s, { detail: "x" })]);
    await h.submitter.send(judgment());
    assert.equal(h.replies[0].outcome, outcomeOf(s));
    assert.equal(h.submitter.failed, null, String(s));
    assert.equal(h.live().length, 0, String(s));
  }
});

test("a 401 keeps the request for after the login, without a timer", async () => {
  const h = harness([status(401)]);
  const req = judgment();
  await h.submitter.send(req);
  assert.equal(h.replies[0].outcome, "unauthorized");
  assert.equal(h.submitter.failed, req);
  assert.equal(h.live().length, 0);
});

test("a failed undo first looks whether it already happened", async () => {
  // The undo went through but its answer was lost: /next shows the earlier question.
  const h = harness(["network", ok({ seq: 2, done: false })]);
  const undo = { kind: "undo", path: "/undo", body: { to_seq: 2 }, undoFromSeq: 3 };
  await h.submitter.send(undo);
  await h.live()[0].fn();
  assert.deepEqual(h.calls.map((c) => c.method + " " + c.path), ["POST /undo", "GET /next"]);
  assert.equal(h.replies.length, 1);
  assert.equal(h.replies[0].reply.data.seq, 2, "the current question is shown, no second undo");
});

test("a failed undo that did not happen is sent again", async () => {
  const h = harness(["network", ok({ seq: 3, done: false }), ok({ seq: 2, done: false })]);
  const undo = { kind: "undo", path: "/undo", body: { to_seq: 2 }, undoFromSeq: 3 };
  await h.submitter.send(undo);
  await h.live()[0].fn();
  assert.deepEqual(h.calls.map((c) => c.method + " " + c.path), ["POST /undo", "GET /next", "POST /undo"]);
  assert.deepEqual(h.calls[2].body, { to_seq: 2 });
  assert.equal(h.replies.length, 1);
});
