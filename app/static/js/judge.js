/* heapjudge judging loop (tools T1 pairwise and T2 five-grade).
 *
 * The server is the source of truth: every question shown comes from the REST API
 * (/api/v1/tasks/{id}/next, /judgments, /undo; issue 3), this script only posts what the
 * assessor chose for the question it was shown (with its seq) and swaps in the answer.
 *
 * Honest time: `active_ms` sent with a judgment is the time the question was on screen while
 * the clock ran. The clock stops when the assessor pauses (clock button, P or Space), when the
 * tab is hidden, and after `idle_seconds` without input; idle time is cut back to the last
 * input, so nothing after it counts.
 *
 * Nothing is lost or doubled: a key press while a request is in flight is ignored; a failed
 * request keeps its exact body (same seq, same active_ms) and is retried unchanged, which the
 * service treats as an idempotent retry; the pending body is also kept in sessionStorage so a
 * reload or a new login resends it if that question is still the pending one.
 *
 * No inline script anywhere (the page's CSP is script-src 'self'): the page hands its data over
 * in <script type="application/json" id="hj-boot">.
 */
(function () {
  "use strict";

  var bootEl = document.getElementById("hj-boot");
  if (!bootEl) return;
  var boot = JSON.parse(bootEl.textContent);
  var api = "/api/v1/tasks/" + encodeURIComponent(boot.task_id);
  var storeKey = "heapjudge.pending." + boot.task_id;

  function $(id) { return document.getElementById(id); }
  var main = $("judge-main");
  var els = {
    fill: $("progress-fill"),
    track: $("progress-track"),
    progressText: $("progress-text"),
    clock: $("clock"),
    clockTime: $("clock-time"),
    clockState: $("clock-state"),
    notice: $("notice"),
    noticeText: $("notice-text"),
    retry: $("retry-button"),
    pauseOverlay: $("pause-overlay"),
    idleOverlay: $("idle-overlay"),
    resume: $("resume-button"),
    stillHere: $("still-here-button"),
    undo: $("undo-button")
  };

  // ---------------------------------------------------------------- clock
  var now = function () { return performance.now(); };
  var clock = {
    paused: false,
    idle: false,
    hidden: document.visibilityState === "hidden",
    questionMs: 0,          // accumulated for the current question
    runningSince: null,     // performance.now() when the current running segment began
    sessionMs: boot.active_ms || 0, // active time already stored for this task (display only)
    lastInput: now()
  };

  function clockShouldRun() {
    return !clock.paused && !clock.idle && !clock.hidden && state.question !== null &&
      !state.question.done;
  }

  function syncClock(at) {
    var t = at === undefined ? now() : at;
    var run = clockShouldRun();
    if (run && clock.runningSince === null) {
      clock.runningSince = t;
    } else if (!run && clock.runningSince !== null) {
      clock.questionMs += Math.max(0, t - clock.runningSince);
      clock.runningSince = null;
    }
  }

  function questionActiveMs() {
    var ms = clock.questionMs;
    if (clock.runningSince !== null) ms += Math.max(0, now() - clock.runningSince);
    return Math.round(ms);
  }

  function fmt(ms) {
    var s = Math.floor(ms / 1000);
    var h = Math.floor(s / 3600);
    var m = Math.floor((s % 3600) / 60);
    var sec = s % 60;
    var mm = (h > 0 && m < 10 ? "0" : "") + m;
    return (h > 0 ? h + ":" : "") + mm + ":" + (sec < 10 ? "0" : "") + sec;
  }

  function renderClock() {
    els.clockTime.textContent = fmt(clock.sessionMs + questionActiveMs());
    var label;
    if (clock.paused) label = "paused";
    else if (clock.idle) label = "idle";
    else if (clock.hidden) label = "stopped";
    else label = "";
    els.clockState.textContent = label;
    els.clock.setAttribute("aria-pressed", clock.paused ? "true" : "false");
    els.clock.setAttribute("aria-label", clock.paused ? "Resume timer (P)" : "Pause timer (P)");
  }

  function setPaused(paused) {
    if (clock.paused === paused) return;
    clock.paused = paused;
    syncClock();
    els.pauseOverlay.hidden = !paused;
    if (!paused) { clock.lastInput = now(); focusHome(); } else { els.resume.focus(); }
    renderClock();
  }

  function markInput() {
    clock.lastInput = now();
  }

  function checkIdle() {
    if (clock.idle || clock.runningSince === null) return;
    var t = now();
    if (t - clock.lastInput >= boot.idle_seconds * 1000) {
      // Cut the running segment back to the last input: the idle stretch is not work time.
      syncClockIdle(Math.max(clock.runningSince, clock.lastInput));
    }
  }

  function syncClockIdle(cutAt) {
    clock.questionMs += Math.max(0, cutAt - clock.runningSince);
    clock.runningSince = null;
    clock.idle = true;
    els.idleOverlay.hidden = false;
    els.stillHere.focus();
    renderClock();
  }

  function leaveIdle() {
    if (!clock.idle) return;
    clock.idle = false;
    clock.lastInput = now();
    els.idleOverlay.hidden = true;
    syncClock();
    focusHome();
    renderClock();
  }

  document.addEventListener("visibilitychange", function () {
    clock.hidden = document.visibilityState === "hidden";
    syncClock();
    if (!clock.hidden) clock.lastInput = now();
    renderClock();
  });
  ["pointerdown", "pointermove", "wheel", "touchstart", "scroll"].forEach(function (type) {
    window.addEventListener(type, markInput, { passive: true, capture: true });
  });
  setInterval(function () { checkIdle(); renderClock(); }, 500);

  // ---------------------------------------------------------------- rendering
  var state = {
    question: null,     // the last body from the server
    inFlight: false,
    failed: null,       // {path, body, kind, undoFromSeq} awaiting a retry
    retryTimer: null
  };

  function escapeHtml(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  // Same composition as app/routers/web/assess.py:frame_srcdoc (server-side first render).
  function srcdocFor(doc) {
    if (doc.html !== null && doc.html !== undefined && doc.html !== "") {
      return boot.frame_prefix + doc.html;
    }
    return boot.frame_prefix + '<div class="hj-text">' + escapeHtml(doc.text || "") + "</div>";
  }

  // Document cards are pooled by doc_id: a document that stays on screen, or moves to the
  // other side, keeps its already-loaded frame (placed with CSS `order`, never re-inserted,
  // which would reload it). Loading a sandboxed frame costs a navigation, often in another
  // process, so this is most of the time between a key press and the next pair.
  var docsBox = document.querySelector(".docs");
  var pool = Array.prototype.slice.call(docsBox.querySelectorAll(".doc"));
  var POOL_MAX = boot.method === "topk" ? 8 : 4;
  var useTick = 0;
  var SIDES = { left: ["Left", "Top"], right: ["Right", "Bottom"] };

  function makeCard() {
    var card = document.createElement("article");
    card.className = "doc";
    var head = document.createElement("header");
    head.className = "doc-head";
    if (boot.method === "topk") {
      var side = document.createElement("span");
      side.className = "doc-side";
      head.appendChild(side);
    }
    var title = document.createElement("h2");
    title.className = "doc-title";
    head.appendChild(title);
    card.appendChild(head);
    var frame = document.createElement("iframe");
    // Attributes first: the sandbox and csp apply from the frame's first navigation.
    frame.setAttribute("sandbox", "");
    frame.setAttribute("csp", boot.frame_csp);
    frame.setAttribute("referrerpolicy", "no-referrer");
    frame.setAttribute("tabindex", "-1");
    card.appendChild(frame);
    return card;
  }

  function setSide(card, slot) {
    card.setAttribute("data-slot", slot);
    var side = card.querySelector(".doc-side");
    var names = SIDES[slot];
    if (!side || !names) return;
    if (side.getAttribute("data-side") === slot) return;
    side.textContent = "";
    appendSideNames(side, names);
    side.setAttribute("data-side", slot);
  }

  // The side's name in two spans: the wide-screen and the narrow-screen wording.
  function appendSideNames(el, names) {
    var wide = document.createElement("span");
    wide.className = "wide-only";
    wide.textContent = names[0];
    var narrow = document.createElement("span");
    narrow.className = "narrow-only";
    narrow.textContent = names[1];
    el.appendChild(wide);
    el.appendChild(narrow);
  }

  function cardOf(docId) {
    for (var i = 0; i < pool.length; i++) {
      if (pool[i].getAttribute("data-doc-id") === docId) return pool[i];
    }
    return null;
  }

  // assign: [[slot, doc], ...] in display order.
  function showDocs(assign) {
    var wanted = assign.map(function (a) { return cardOf(a[1].doc_id); });
    var shown = [];
    assign.forEach(function (a, i) {
      var slot = a[0], doc = a[1];
      var card = wanted[i];
      if (!card) {
        var spare = pool.filter(function (c) {
          return wanted.indexOf(c) < 0 && shown.indexOf(c) < 0;
        }).sort(function (x, y) { return (x._used || 0) - (y._used || 0); });
        var fresh = pool.length < POOL_MAX || spare.length === 0;
        card = fresh ? makeCard() : spare[0];
        card.setAttribute("data-doc-id", doc.doc_id);
        // A property assignment, not markup: the document stays inside the sandboxed frame.
        card.querySelector("iframe").srcdoc = srcdocFor(doc);
        if (fresh) { docsBox.appendChild(card); pool.push(card); }
      }
      var name = doc.title || doc.doc_id;
      card.querySelector(".doc-title").textContent = name;
      card.querySelector("iframe").setAttribute("title",
        (SIDES[slot] ? SIDES[slot][0] + " document: " : "Document: ") + name);
      setSide(card, slot);
      card.style.order = String(i);
      card.hidden = false;
      card._used = ++useTick;
      shown.push(card);
    });
    pool.forEach(function (c) {
      if (shown.indexOf(c) < 0) { c.hidden = true; c.removeAttribute("data-slot"); }
    });
  }

  // Preload the documents that may come next (GET /tasks/{id}/lookahead) into hidden cards,
  // so the next pair usually shows without waiting for a frame to load. Best effort: errors
  // are ignored, and the server's answer decides what is shown.
  function prefetch(seq) {
    if (!window.fetch) return;
    fetch(boot.lookahead_url + "?seq=" + encodeURIComponent(seq), {
      credentials: "same-origin", cache: "no-store", headers: { "Accept": "application/json" }
    }).then(function (resp) { return resp.ok ? resp.json() : null; }).then(function (data) {
      if (!data || !state.question || state.question.seq !== seq) return;
      var visible = pool.filter(function (c) { return !c.hidden; });
      (data.docs || []).forEach(function (doc) {
        if (cardOf(doc.doc_id)) return;
        var spare = pool.filter(function (c) { return visible.indexOf(c) < 0; })
          .sort(function (x, y) { return (x._used || 0) - (y._used || 0); });
        var fresh = pool.length < POOL_MAX || spare.length === 0;
        var card = fresh ? makeCard() : spare[0];
        card.hidden = true;
        card.removeAttribute("data-slot");
        card.setAttribute("data-doc-id", doc.doc_id);
        card.querySelector("iframe").srcdoc = srcdocFor(doc);
        card.querySelector(".doc-title").textContent = doc.title || doc.doc_id;
        card._used = ++useTick;
        if (fresh) { docsBox.appendChild(card); pool.push(card); }
      });
    }).catch(function () { /* prefetching is optional */ });
  }

  // Only the outcomes the protocol accepts now are offered: "not relevant" applies to the
  // challenger of a Step-2 root comparison only (labeling.session.TopKSession.allowed_outcomes).
  function renderOutcomes(q) {
    var allowed = q.allowed_outcomes || null;
    var buttons = document.querySelectorAll("[data-action]");
    for (var i = 0; i < buttons.length; i++) {
      var b = buttons[i];
      var action = b.getAttribute("data-action");
      if (["left", "right", "tie", "not_relevant"].indexOf(action) < 0) continue;
      var ok = !allowed || allowed.indexOf(action) >= 0;
      b.disabled = !ok;
      b.setAttribute("aria-disabled", ok ? "false" : "true");
    }
    renderNotRelevant(challengerSide(q));
  }

  // The side of Step 2's new document, which "not relevant" refers to: the payload's
  // "challenger" is "left" | "right" | null (app.services.judging); a doc id is accepted too.
  // null when absent (an older server), so the label falls back to the generic text.
  function challengerSide(q) {
    var c = q.challenger;
    if (!c || !q.pair) return null;
    if (c === "left" || c === "right") return c;
    if (q.pair.left && c === q.pair.left.doc_id) return "left";
    if (q.pair.right && c === q.pair.right.doc_id) return "right";
    return null;
  }

  // "Left is not relevant" / "Right is not relevant" (Top / Bottom on a narrow screen, where
  // the documents are stacked), on the button and in the keys help line.
  function renderNotRelevant(side) {
    var targets = [$("nr-label"), $("nr-key-label")];
    for (var i = 0; i < targets.length; i++) {
      var el = targets[i];
      if (!el) continue;
      if (el.getAttribute("data-side") === (side || "")) continue;
      el.textContent = "";
      var names = side ? SIDES[side] : null;
      if (names) {
        appendSideNames(el, names);
        el.appendChild(document.createTextNode(" is not relevant"));
      } else {
        el.textContent = "New document is not relevant";
      }
      el.setAttribute("data-side", side || "");
    }
  }

  function outcomeAllowed(outcome) {
    var allowed = state.question && state.question.allowed_outcomes;
    return !allowed || allowed.indexOf(outcome) >= 0;
  }

  function renderProgress(p) {
    if (!p) return;
    var done = p.judgments || 0;
    var left = Math.max(0, Math.round(p.estimated_remaining || 0));
    var frac = done + left > 0 ? done / (done + left) : 1;
    els.fill.style.width = (100 * frac).toFixed(1) + "%";
    els.track.setAttribute("aria-valuenow", String(Math.round(100 * frac)));
    els.progressText.textContent = done + (done === 1 ? " judgment" : " judgments") +
      (state.question && state.question.done ? " · finished" : " · about " + left + " left");
  }

  function render(q) {
    state.question = q;
    if (q.done) {
      clearStored();
      main.setAttribute("data-done", "true");
      renderProgress(q.progress);
      window.location.assign(boot.done_url);
      return;
    }
    if (boot.method === "topk") {
      showDocs([["left", q.pair.left], ["right", q.pair.right]]);
      renderOutcomes(q);
    } else {
      showDocs([["single", q.document]]);
    }
    renderProgress(q.progress);
    // Fresh question: its own clock starts now.
    clock.questionMs = 0;
    clock.runningSince = null;
    syncClock();
    main.setAttribute("data-seq", String(q.seq));
    renderClock();
    setTimeout(function () { prefetch(q.seq); }, 0);
  }

  // ---------------------------------------------------------------- notices
  function notice(text, level, withRetry) {
    els.noticeText.textContent = text;
    els.notice.className = "notice notice-" + (level || "info");
    els.retry.hidden = !withRetry;
    els.notice.hidden = false;
  }
  function clearNotice() {
    els.notice.hidden = true;
    els.retry.hidden = true;
  }

  function stored() {
    try { return JSON.parse(window.sessionStorage.getItem(storeKey) || "null"); } catch (e) { return null; }
  }
  function store(req) {
    try { window.sessionStorage.setItem(storeKey, JSON.stringify(req)); } catch (e) { /* private mode */ }
  }
  function clearStored() {
    try { window.sessionStorage.removeItem(storeKey); } catch (e) { /* private mode */ }
  }

  // ---------------------------------------------------------------- requests
  function setBusy(busy) {
    state.inFlight = busy;
    main.setAttribute("aria-busy", busy ? "true" : "false");
  }

  function request(method, path, body) {
    var init = {
      method: method,
      credentials: "same-origin",
      cache: "no-store",
      headers: { "Accept": "application/json" }
    };
    if (method !== "GET") {
      init.headers["Content-Type"] = "application/json";
      init.headers["X-CSRF-Token"] = boot.csrf_token;
      init.body = JSON.stringify(body || {});
    }
    return fetch(api + path, init).then(function (resp) {
      return resp.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        return { status: resp.status, ok: resp.ok, data: data };
      });
    });
  }

  function currentFrom(data) {
    // A 409 carries the current question, either as the body itself or under a key.
    if (!data) return null;
    var cands = [data, data.current, data.question, data.detail && data.detail.current];
    for (var i = 0; i < cands.length; i++) {
      var c = cands[i];
      if (c && typeof c === "object" && typeof c.done === "boolean" &&
          (c.done || c.pair || c.document)) return c;
    }
    return null;
  }

  function detailText(data, fallback) {
    if (data && typeof data.detail === "string") return data.detail;
    if (data && data.detail && typeof data.detail.message === "string") return data.detail.message;
    return fallback;
  }

  function fail(req, message) {
    state.failed = req;
    store(req);
    notice(message + " Your judgment is kept and will be sent again.", "error", true);
    if (state.retryTimer) clearTimeout(state.retryTimer);
    req.attempts = (req.attempts || 0) + 1;
    var delay = Math.min(30000, 1000 * Math.pow(2, Math.min(req.attempts, 5)));
    state.retryTimer = setTimeout(retry, delay);
  }

  function send(req) {
    setBusy(true);
    var call;
    if (req.kind === "undo" && req.attempts) {
      // An undo is not idempotent: after a failure, look first whether it already happened.
      call = request("GET", "/next").then(function (r) {
        if (r.ok && r.data && !r.data.done && r.data.seq < req.undoFromSeq) return r;
        if (r.ok && r.data && r.data.seq !== req.undoFromSeq) return r;
        return request("POST", req.path, req.body);
      });
    } else {
      call = request(req.method || "POST", req.path, req.body);
    }
    return call.then(function (r) {
      setBusy(false);
      if (r.ok) {
        state.failed = null;
        if (state.retryTimer) { clearTimeout(state.retryTimer); state.retryTimer = null; }
        clearStored();
        clearNotice();
        if (req.kind === "judgment") clock.sessionMs += req.body.active_ms || 0;
        if (req.kind === "undo" && r.data && r.data.seq >= req.undoFromSeq) {
          notice("Nothing to undo.", "warning", false);
        }
        render(r.data);
        return;
      }
      if (r.status === 409) {
        state.failed = null;
        clearStored();
        var cur = currentFrom(r.data);
        if (!cur && /cancel/i.test(detailText(r.data, ""))) {
          notice("An administrator cancelled this task; nothing more can be judged here.",
            "error", false);
          return;
        }
        if (req.kind === "undo") {
          notice(detailText(r.data, "Nothing to undo."), "warning", false);
        } else {
          notice("This task moved on (another window or tab?). Showing the current question.",
            "warning", false);
        }
        if (cur) { render(cur); } else { reload(); }
        return;
      }
      if (r.status === 401) {
        state.failed = req;
        store(req);
        notice("Your session has ended. Log in again (in this tab) and your judgment will be " +
          "sent.", "error", false);
        var a = document.createElement("a");
        a.href = boot.login_url;
        a.textContent = " Log in";
        els.noticeText.appendChild(a);
        return;
      }
      if (r.status >= 500 || r.status === 0 || r.status === 429) {
        fail(req, "The server did not answer (" + r.status + ").");
        return;
      }
      // 403 / 404 / 422: not retryable; say what the server said.
      state.failed = null;
      clearStored();
      notice(detailText(r.data, "The server refused this (" + r.status + ")."), "error", false);
    }, function () {
      setBusy(false);
      fail(req, "Could not reach the server.");
    });
  }

  function retry() {
    if (state.retryTimer) { clearTimeout(state.retryTimer); state.retryTimer = null; }
    if (!state.failed || state.inFlight) return;
    notice("Sending again…", "warning", false);
    send(state.failed);
  }

  function reload() {
    setBusy(true);
    return request("GET", "/next").then(function (r) {
      setBusy(false);
      if (r.ok) { render(r.data); } else { notice(detailText(r.data, "Could not load the task."), "error", false); }
    }, function () {
      setBusy(false);
      notice("Could not reach the server. Reload the page to try again.", "error", false);
    });
  }

  // ---------------------------------------------------------------- actions
  function canAct() {
    return !state.inFlight && !state.failed && state.question !== null && !state.question.done &&
      !clock.paused && !clock.idle;
  }

  function judge(extra) {
    if (!canAct()) return;
    if (extra.outcome && !outcomeAllowed(extra.outcome)) {
      notice(extra.outcome === "not_relevant"
        ? "\u201cNot relevant\u201d is only offered when a new document is compared with the current top k."
        : "This answer is not available for this question.", "warning", false);
      return;
    }
    syncClock();
    var q = state.question;
    var body = { seq: q.seq, active_ms: questionActiveMs() };
    Object.keys(extra).forEach(function (k) { body[k] = extra[k]; });
    send({ kind: "judgment", path: "/judgments", body: body, seq: q.seq });
  }

  // One answer to the current pair question; the pair is read when the action fires.
  function pairAction(outcome) {
    return function () {
      var q = state.question;
      judge({ left: q.pair.left.doc_id, right: q.pair.right.doc_id, outcome: outcome });
    };
  }

  var actions = {
    left: pairAction("left"),
    right: pairAction("right"),
    tie: pairAction("tie"),
    not_relevant: pairAction("not_relevant"),
    undo: function () {
      if (!canAct()) return;
      if (state.question.seq === 0) { notice("Nothing to undo yet.", "warning", false); return; }
      send({ kind: "undo", path: "/undo", body: { seq: state.question.seq },
        undoFromSeq: state.question.seq });
    },
    pause: function () { setPaused(!clock.paused); }
  };
  function gradeAction(g) {
    return function () { judge({ doc_id: state.question.document.doc_id, grade: g }); };
  }
  for (var g = 0; g < 5; g++) actions["grade" + g] = gradeAction(g);

  var keymap = { "u": "undo", "U": "undo", "p": "pause", "P": "pause", " ": "pause" };
  if (boot.method === "topk") {
    keymap.ArrowLeft = "left"; keymap["1"] = "left";
    keymap.ArrowRight = "right"; keymap["2"] = "right";
    if (boot.allow_ties) keymap["="] = "tie";
    if (boot.not_relevant) { keymap.n = "not_relevant"; keymap.N = "not_relevant"; }
  } else {
    for (var k = 1; k <= 5; k++) keymap[String(k)] = "grade" + (k - 1);
  }

  function run(name) {
    var fn = actions[name];
    if (!fn) return;
    if (name !== "pause" && clock.paused) {
      notice("Paused. Press P or Space (or the clock) to resume.", "warning", false);
      return;
    }
    fn();
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var tag = e.target && e.target.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return;
    markInput();
    if (clock.idle) {
      // The key that answers "still there?" does nothing else.
      e.preventDefault();
      leaveIdle();
      return;
    }
    if ((e.key === "r" || e.key === "R") && state.failed) { e.preventDefault(); retry(); return; }
    var name = keymap[e.key];
    if (!name) return;
    e.preventDefault(); // no page scroll on arrows/space, no button "click" on space
    if (e.repeat) return; // a held key is one press
    run(name);
  });

  document.addEventListener("click", function (e) {
    var btn = e.target.closest ? e.target.closest("[data-action]") : null;
    if (!btn) return;
    e.preventDefault();
    // A double click is one press (as a held key is): its second click (detail 2) must not
    // answer the next pair, which a fast server has already shown by then.
    if (e.detail > 1) return;
    run(btn.getAttribute("data-action"));
  });
  els.retry.addEventListener("click", function () { retry(); });
  els.resume.addEventListener("click", function () { setPaused(false); });
  els.stillHere.addEventListener("click", function () { leaveIdle(); });

  // Keyboard focus must stay in this page: keys typed into a (script-free) document frame
  // never reach us. A click into a frame moves focus there; take it back right away.
  function focusHome() {
    var home = main;
    if (home && document.activeElement !== home) home.focus({ preventScroll: true });
  }
  function reclaimFocus() {
    var a = document.activeElement;
    if (a && a.tagName === "IFRAME") focusHome();
  }
  window.addEventListener("blur", function () { setTimeout(reclaimFocus, 0); });
  document.addEventListener("focusin", function () { setTimeout(reclaimFocus, 0); }, true);
  setInterval(reclaimFocus, 250); // not every browser reports focus entering a frame

  // ---------------------------------------------------------------- start
  function start(q) {
    // Documents of the first question are already in the (server-rendered) cards.
    render(q);
    focusHome();
    var saved = stored();
    if (saved && saved.kind === "judgment" && saved.body && saved.body.seq === q.seq && !q.done) {
      // A judgment that never got through (network, expired session): send it now.
      saved.attempts = 0;
      notice("Sending the judgment that did not get through…", "warning", false);
      send(saved);
    } else if (saved) {
      clearStored();
    }
  }

  if (boot.question) {
    start(boot.question);
  } else {
    request("GET", "/next").then(function (r) {
      if (r.ok) start(r.data);
      else notice(detailText(r.data, "Could not load the task."), "error", false);
    }, function () { notice("Could not reach the server. Reload the page to try again.", "error", false); });
  }
})();
