// @ts-check
/* Nothing is lost or doubled (no DOM): one request of the judging loop at a time; a request
 * that failed (network, 5xx, 429) keeps its exact body (same seq, same active_ms) and is
 * retried unchanged after a growing delay, which the service treats as an idempotent retry.
 * An undo that failed first looks whether it already happened (GET /next) before it is sent
 * again. The requests and the timers are injected. */

/** @typedef {import("./types.js").Reply} Reply */
/** @typedef {import("./types.js").LoopRequest} LoopRequest */
/** @typedef {"ok" | "conflict" | "unauthorized" | "retry" | "refused"} Outcome */

/** The longest wait before a retry. */
export const MAX_RETRY_DELAY_MS = 30000;

/** The wait before the next try after `attempts` failed ones: 2 s, 4 s, ... at most 30 s.
 * @param {number} attempts @returns {number} */
export function backoffDelay(attempts) {
  return Math.min(MAX_RETRY_DELAY_MS, 1000 * Math.pow(2, Math.min(attempts, 5)));
}

/** What a reply means for the request: stored, moved on (409), session ended (401), try
 * again (5xx, 429) or refused for good (403, 404, 422).
 * @param {number} status @returns {Outcome} */
export function outcomeOf(status) {
  if (status >= 200 && status < 300) return "ok";
  if (status === 409) return "conflict";
  if (status === 401) return "unauthorized";
  if (status >= 500 || status === 0 || status === 429) return "retry";
  return "refused";
}

/**
 * @typedef {object} SubmitterDeps
 * @property {(method: string, path: string, body?: object) => Promise<Reply>} request
 * @property {(req: LoopRequest, reply: Reply, outcome: Outcome) => void} onReply
 *   any answer but a retryable one
 * @property {(req: LoopRequest, message: string, delayMs: number) => void} onFailure
 *   the request failed and is retried in delayMs
 * @property {(busy: boolean) => void} [onBusy]
 * @property {(req: LoopRequest) => void} [onSend] a request goes out
 * @property {(reply: Reply) => void} [onResponse] a reply arrived (before it is handled)
 * @property {(req: LoopRequest) => void} [onRetry] a failed request is sent again
 * @property {(fn: () => unknown, ms: number) => any} [setTimer]
 * @property {(id: any) => void} [clearTimer]
 */

export class Submitter {
  /** @param {SubmitterDeps} deps */
  constructor(deps) {
    this.deps = deps;
    this.setTimer = deps.setTimer || ((fn, ms) => setTimeout(fn, ms));
    this.clearTimer = deps.clearTimer || ((id) => clearTimeout(id));
    this.inFlight = false;
    /** @type {LoopRequest | null} a request awaiting its retry (or a new login) */
    this.failed = null;
    /** @type {any} */
    this.timer = null;
  }

  /** Send `req` unless one is in flight. @param {LoopRequest} req
   * @returns {Promise<boolean>} false when refused (a request was in flight) */
  send(req) {
    if (this.inFlight) return Promise.resolve(false);
    this.setBusy(true);
    if (this.deps.onSend) this.deps.onSend(req);
    return this.call(req).then((reply) => {
      this.setBusy(false);
      if (this.deps.onResponse) this.deps.onResponse(reply);
      const outcome = outcomeOf(reply.status);
      if (outcome === "retry") {
        this.fail(req, "The server did not answer (" + reply.status + ").");
        return true;
      }
      this.cancelTimer();
      // A 401 keeps the request: it is sent once the assessor has logged in again.
      this.failed = outcome === "unauthorized" ? req : null;
      this.deps.onReply(req, reply, outcome);
      return true;
    }, () => {
      this.setBusy(false);
      this.fail(req, "Could not reach the server.");
      return true;
    });
  }

  /** Send the failed request again now (the retry button, R, or its timer).
   * @returns {Promise<boolean>} false when there is nothing to send or one is in flight */
  retry() {
    this.cancelTimer();
    if (!this.failed || this.inFlight) return Promise.resolve(false);
    if (this.deps.onRetry) this.deps.onRetry(this.failed);
    return this.send(this.failed);
  }

  /** @param {LoopRequest} req @returns {Promise<Reply>} */
  call(req) {
    const request = this.deps.request;
    if (req.kind === "undo" && req.attempts) {
      // After a failure, look first whether the undo already happened (then show that
      // question as it is now, rather than sending the request again).
      const from = req.undoFromSeq;
      return request("GET", "/next").then((r) => {
        if (r.ok && r.data && !r.data.done && from !== undefined && r.data.seq < from) return r;
        if (r.ok && r.data && r.data.seq !== from) return r;
        return request("POST", req.path, req.body);
      });
    }
    return request(req.method || "POST", req.path, req.body);
  }

  /** @param {LoopRequest} req @param {string} message */
  fail(req, message) {
    this.failed = req;
    this.cancelTimer();
    req.attempts = (req.attempts || 0) + 1;
    const delay = backoffDelay(req.attempts);
    this.timer = this.setTimer(() => this.retry(), delay);
    this.deps.onFailure(req, message, delay);
  }

  cancelTimer() {
    if (this.timer !== null) {
      this.clearTimer(this.timer);
      this.timer = null;
    }
  }

  /** @param {boolean} busy */
  setBusy(busy) {
    this.inFlight = busy;
    if (this.deps.onBusy) this.deps.onBusy(busy);
  }
}
