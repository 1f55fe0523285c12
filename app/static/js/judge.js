/* heapjudge judging loop (tools T1 pairwise and T2 five-grade).
 *
 * The server is the source of truth: every question shown comes from the REST API
 * (/api/v1/tasks/{id}/next, /judgments, /undo), this script only posts what the assessor
 * chose for the question it was shown (with its seq) and swaps in the answer. Documents are
 * rendered on the server for their sandboxed frames (query words marked, text reflowed,
 * reading anchors; /tasks/{id}/frames and /lookahead), since nothing may run inside a frame.
 *
 * Honest time: `active_ms` sent with a judgment is the time the question was on screen while
 * the clock ran. The clock stops when the assessor pauses (clock button or P), when the tab is
 * hidden, and after `idle_seconds` without input; idle time is cut back to the last input, so
 * nothing after it counts. Reading counts as input: keys, pointer movement and the wheel over
 * a document (the frames take no pointer events, so these reach this page).
 *
 * Scrolling a document from the keyboard: the page may not touch a frame's content (opaque
 * origin), but it may navigate it. Every rendered document carries empty anchors (hj-a0,
 * hj-a1, ... every few words, and hj-end); a scroll key navigates the frame to
 * about:srcdoc#hj-aN, a same-document navigation that scrolls and reloads nothing. The page
 * keeps each frame's anchor index; wheel turns are converted the same way.
 *
 * Preloaded documents wait in hidden cards that are laid out at a slot's size (app.css), so
 * showing one is only a paint; a document that was not preloaded is loaded out of sight and
 * swapped in once its frame has loaded, so no frame is shown blank. Performance marks (hj-key,
 * hj-sent, hj-response, hj-shown, and hj-load when the documents had not been preloaded; read
 * by benchmarks/ui_latency.py) time the path key -> request -> response -> documents swapped.
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
  // A second opinion (another assessor's routed question) runs the same loop on its own URL.
  var api = boot.api_url || "/api/v1/tasks/" + encodeURIComponent(boot.task_id);
  var storeKey = "heapjudge.pending." + (boot.store_key || boot.task_id);

  // The tasks API (documents: "refs" on answers, the assessor tools), unless the boot names
  // another URL to answer on.
  var taskApi = !boot.api_url;

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
    undo: $("undo-button"),
    highlight: $("highlight-button"),
    commentButton: $("comment-button"),
    commentText: $("comment-text"),
    answersStatus: $("answers-status"),
    answersList: $("answers-list"),
    brokenForm: $("broken-form"),
    brokenDetail: $("broken-detail"),
    brokenError: $("broken-error")
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
    renderCover();
    if (!paused) {
      clock.lastInput = now();
      if (state.noticeKind === "paused") clearNotice();
      focusHome();
    } else {
      els.resume.focus();
    }
    renderClock();
  }

  // Paused or idle: the documents are hidden (not only covered), so nothing can be read.
  function renderCover() {
    if (clock.paused || clock.idle) main.classList.add("covered");
    else main.classList.remove("covered");
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
    renderCover();
    els.stillHere.focus();
    renderClock();
  }

  function leaveIdle() {
    if (!clock.idle) return;
    clock.idle = false;
    clock.lastInput = now();
    els.idleOverlay.hidden = true;
    renderCover();
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
    retryTimer: null,
    noticeKind: null,   // what the notice on screen is about ("paused", "undo", ...)
    noticeTimer: null,
    renderToken: 0,     // the latest render; an older one whose frames arrive late stops
    shownIds: [],       // doc ids of the question on screen, for the "new" marker
    panel: null         // the open tool panel ("guidelines", "answers", "broken", "comment")
  };

  function mark(name) {
    if (window.performance && performance.mark) performance.mark(name);
  }

  // Rendered documents by doc_id ({srcdoc, anchors}) from /frames and /lookahead.
  var frameCache = {};
  var frameCacheOrder = [];
  var FRAME_CACHE_MAX = 24;
  function cacheFrame(doc) {
    if (!frameCache[doc.doc_id]) frameCacheOrder.push(doc.doc_id);
    frameCache[doc.doc_id] = { srcdoc: doc.srcdoc, anchors: doc.anchors || 1, title: doc.title };
    while (frameCacheOrder.length > FRAME_CACHE_MAX) delete frameCache[frameCacheOrder.shift()];
  }

  function hlParam() { return boot.highlight ? "1" : "0"; }

  // Fetch the rendered frames of the documents not yet cached (one request).
  function fetchFrames(ids) {
    var missing = ids.filter(function (id) { return !frameCache[id]; });
    if (!missing.length) return Promise.resolve(true);
    var qs = missing.map(function (id) { return "ids=" + encodeURIComponent(id); }).join("&");
    return fetch(boot.frames_url + "?" + qs + "&hl=" + hlParam(), {
      credentials: "same-origin", cache: "no-store", headers: { "Accept": "application/json" }
    }).then(function (resp) { return resp.ok ? resp.json() : null; }).then(function (data) {
      (data && data.docs || []).forEach(cacheFrame);
      return true;
    }, function () { return false; });
  }

  // Document cards are pooled by doc_id: a document that stays on screen, or moves to the
  // other side, keeps its already-loaded frame (placed with CSS `order`, never re-inserted,
  // which would reload it) and its scroll position.
  var docsBox = document.querySelector(".docs");
  var pool = Array.prototype.slice.call(docsBox.querySelectorAll(".doc"));
  var POOL_MAX = boot.method === "topk" ? 8 : 4;
  var useTick = 0;
  var SIDES = { left: ["Left", "Top"], right: ["Right", "Bottom"] };
  var current = null; // the card the scroll keys act on

  function initCard(card) {
    var frame = card.querySelector("iframe");
    card._anchors = parseInt(card.getAttribute("data-anchors") || "1", 10) || 1;
    card._pos = 0;
    card._loaded = false;
    frame.addEventListener("load", function () {
      card._loaded = true;
      if (card._pos > 0) navigateFrame(card);
    });
  }
  pool.forEach(initCard);
  // The server-rendered frames may have loaded before this script ran (their load event then
  // went unseen); the window's load event comes after every frame's.
  function initialFramesLoaded() {
    pool.forEach(function (c) {
      if (c._initial && !c._loaded) { c._loaded = true; if (c._pos > 0) navigateFrame(c); }
      c._initial = false;
    });
  }
  pool.forEach(function (c) { c._initial = true; });
  if (document.readyState === "complete") initialFramesLoaded();
  else window.addEventListener("load", initialFramesLoaded);

  // A card out of view keeps the `hidden` attribute (app.css lays it out, transparent, under
  // the shown ones) and is kept from assistive technology too.
  function setShown(card, shown) {
    card.hidden = !shown;
    if (shown) card.removeAttribute("aria-hidden");
    else card.setAttribute("aria-hidden", "true");
  }

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
    var badge = document.createElement("span");
    badge.className = "doc-badge";
    badge.hidden = true;
    head.appendChild(badge);
    card.appendChild(head);
    var frame = document.createElement("iframe");
    // Attributes first: the sandbox and csp apply from the frame's first navigation.
    frame.setAttribute("sandbox", "");
    frame.setAttribute("csp", boot.frame_csp);
    frame.setAttribute("referrerpolicy", "no-referrer");
    frame.setAttribute("tabindex", "-1");
    card.appendChild(frame);
    initCard(card);
    return card;
  }

  // Load a rendered document into a card (a property assignment, not markup: the document
  // stays inside the sandboxed frame).
  function loadCard(card, docId, rendered) {
    card._initial = false;
    card.setAttribute("data-doc-id", docId);
    card._anchors = rendered.anchors || 1;
    card._pos = 0;
    card._loaded = false;
    card.setAttribute("data-anchors", String(card._anchors));
    card.setAttribute("data-pos", "0");
    card.querySelector("iframe").srcdoc = rendered.srcdoc;
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

  function spareCard(keep) {
    var spare = pool.filter(function (c) { return keep.indexOf(c) < 0; })
      .sort(function (x, y) { return (x._used || 0) - (y._used || 0); });
    if (pool.length < POOL_MAX || spare.length === 0) {
      var card = makeCard();
      setShown(card, false);
      docsBox.appendChild(card);
      pool.push(card);
      return card;
    }
    return spare[0];
  }

  // Give `el` the class `cls` for `ms`: a state shown for a moment (two repaints), not an
  // animation (a repaint every frame while the next answer is awaited and swapped in), and no
  // forced layout to restart one.
  function briefly(el, cls, ms) {
    el.classList.add(cls);
    if (el._briefly) clearTimeout(el._briefly);
    el._briefly = setTimeout(function () { el.classList.remove(cls); el._briefly = null; }, ms);
  }

  // "New" on a document that was not in the previous question; "Moved" on one that stayed
  // but changed sides. (Which side a document is shown on is decided per question by the
  // labeling core; the page only says what changed.)
  function setBadge(card, text, kind) {
    var badge = card.querySelector(".doc-badge");
    if (!badge) return;
    badge.hidden = !text;
    badge.textContent = text || "";
    badge.className = "doc-badge" + (kind ? " badge-" + kind : "");
    if (kind === "new") briefly(card, "doc-new", 600);
    else if (card._briefly) { clearTimeout(card._briefly); card._briefly = null; card.classList.remove("doc-new"); }
  }

  // assign: [[slot, doc], ...] in display order. Every document's frame is cached or pooled.
  function showDocs(assign) {
    var wanted = assign.map(function (a) { return cardOf(a[1].doc_id); });
    var prevSlots = {};
    pool.forEach(function (c) {
      if (!c.hidden) prevSlots[c.getAttribute("data-doc-id")] = c.getAttribute("data-slot");
    });
    var previous = state.shownIds;
    var shown = [];
    assign.forEach(function (a, i) {
      var slot = a[0], doc = a[1];
      var card = wanted[i];
      if (!card) {
        card = spareCard(wanted.concat(shown));
        loadCard(card, doc.doc_id, frameCache[doc.doc_id] || { srcdoc: "", anchors: 1 });
      }
      var name = doc.title || doc.doc_id;
      card.querySelector(".doc-title").textContent = name;
      card.querySelector(".doc-title").title = name;
      card.querySelector("iframe").setAttribute("title",
        (SIDES[slot] ? SIDES[slot][0] + " document: " : "Document: ") + name);
      setSide(card, slot);
      card.style.order = String(i);
      setShown(card, true);
      card._used = ++useTick;
      if (boot.method === "topk" && previous.length) {
        if (previous.indexOf(doc.doc_id) < 0) setBadge(card, "New", "new");
        else if (prevSlots[doc.doc_id] && prevSlots[doc.doc_id] !== slot) {
          setBadge(card, "Moved", "moved");
        } else setBadge(card, "", "");
      }
      shown.push(card);
    });
    pool.forEach(function (c) {
      if (shown.indexOf(c) < 0) { setShown(c, false); c.removeAttribute("data-slot"); }
    });
    state.shownIds = assign.map(function (a) { return a[1].doc_id; });
    if (!current || shown.indexOf(current) < 0) setCurrent(shown[0]);
  }

  // Preload the documents that may come next (GET /tasks/{id}/lookahead, rendered) into
  // hidden cards, so the next pair usually shows without waiting. Best effort: errors are
  // ignored, and the server's answer decides what is shown.
  function prefetch(seq) {
    if (!window.fetch) return;
    fetch(boot.lookahead_url + "?seq=" + encodeURIComponent(seq) + "&hl=" + hlParam(), {
      credentials: "same-origin", cache: "no-store", headers: { "Accept": "application/json" }
    }).then(function (resp) { return resp.ok ? resp.json() : null; }).then(function (data) {
      if (!data || !state.question || state.question.seq !== seq) return;
      var visible = pool.filter(function (c) { return !c.hidden; });
      (data.docs || []).forEach(function (doc) {
        cacheFrame(doc);
        if (cardOf(doc.doc_id)) return;
        var card = spareCard(visible);
        setShown(card, false);
        card.removeAttribute("data-slot");
        loadCard(card, doc.doc_id, frameCache[doc.doc_id]);
        card.querySelector(".doc-title").textContent = doc.title || doc.doc_id;
        card._used = ++useTick;
        visible.push(card);
      });
    }).catch(function () { /* prefetching is optional */ });
  }

  // ---------------------------------------------------------------- scrolling documents
  function setCurrent(card) {
    if (!card || card === current) return;
    if (current) current.classList.remove("doc-current");
    current = card;
    if (boot.method === "topk") card.classList.add("doc-current");
  }

  function cardInSlot(slot) {
    for (var i = 0; i < pool.length; i++) {
      if (!pool[i].hidden && pool[i].getAttribute("data-slot") === slot) return pool[i];
    }
    return null;
  }

  // About how many anchors fit in the frame: text at 16px/1.6 with ~7.5px per character and
  // ANCHOR_WORDS (24) words of ~6 characters between anchors (labeling/retrieval/highlight.py).
  function anchorsPerScreen(card) {
    var f = card.querySelector("iframe");
    var w = Math.max(120, f.clientWidth - 36);
    var linesPerAnchor = Math.max(1, (24 * 6.2 * 7.5) / w);
    var pxPerAnchor = linesPerAnchor * 25.6;
    return Math.max(1, Math.floor((0.8 * f.clientHeight) / pxPerAnchor));
  }

  function navigateFrame(card) {
    // "#top" is the document's top by definition (HTML: no element needed).
    var frag = card._pos >= card._anchors ? "hj-end" : card._pos === 0 ? "top" : "hj-a" + card._pos;
    card.setAttribute("data-pos", String(card._pos));
    if (!card._loaded) return; // applied on load
    try {
      card.querySelector("iframe").contentWindow.location.replace("about:srcdoc#" + frag);
    } catch (e) { /* a frame being replaced */ }
  }

  // how: a number of anchors (+ down, - up), or "page" / "-page" / "home" / "end".
  function scrollCard(card, how) {
    if (!card) return;
    setCurrent(card);
    var pos = card._pos || 0;
    var n = card._anchors || 1;
    if (how === "home") pos = 0;
    else if (how === "end") pos = n;
    else if (how === "page") pos += anchorsPerScreen(card);
    else if (how === "-page") pos -= anchorsPerScreen(card);
    else pos += how;
    pos = Math.max(0, Math.min(n, pos));
    if (pos === card._pos) return;
    card._pos = pos;
    navigateFrame(card);
  }

  var wheelAcc = 0;
  docsBox.addEventListener("wheel", function (e) {
    var card = e.target.closest ? e.target.closest(".doc") : null;
    if (!card) return;
    e.preventDefault();
    markInput();
    setCurrent(card);
    var px = e.deltaMode === 1 ? e.deltaY * 25.6 : e.deltaMode === 2 ? e.deltaY * 400 : e.deltaY;
    wheelAcc += px;
    var f = card.querySelector("iframe");
    var pxPerAnchor = Math.max(8, (0.8 * f.clientHeight) / anchorsPerScreen(card));
    var steps = wheelAcc > 0 ? Math.floor(wheelAcc / pxPerAnchor) : Math.ceil(wheelAcc / pxPerAnchor);
    if (steps !== 0) { wheelAcc -= steps * pxPerAnchor; scrollCard(card, steps); }
  }, { passive: false });
  docsBox.addEventListener("pointerover", function (e) {
    var card = e.target.closest ? e.target.closest(".doc") : null;
    if (card) setCurrent(card);
  });

  // Only the outcomes the protocol accepts now are offered: "not relevant" applies to the
  // challenger of a Step-2 root comparison only (labeling.protocol.topk.TopKSession.allowed_outcomes).
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
  // "challenger" is "left" | "right" | null (app.judging.service); a doc id is accepted too.
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

  function escapeHtml(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  // Only when the server's rendering could not be fetched: the plain text, escaped (a question
  // from /next carries it; one from an answer names its documents only).
  function fallbackFrame(doc) {
    var body = doc.html ? doc.html
      : doc.text !== undefined ? '<div style="white-space:pre-wrap">' + escapeHtml(doc.text) + "</div>"
      : "<p>This document could not be loaded. Reload the page to try again.</p>";
    return { srcdoc: boot.frame_prefix + body, anchors: 1 };
  }

  // Show question q: first make sure every document is in a card whose frame has loaded
  // (pooled, or loaded now into a hidden card from the cache or one /frames request), then swap
  // everything in one go, so no frame is ever shown blank. Until then the previous question
  // stays on screen and keys are ignored (state.loading).
  function render(q) {
    var token = ++state.renderToken;
    if (q.done) { paint(q); return; }
    // The question went to a second assessor: the page shows the waiting state.
    if (q.waiting) { clearStored(); window.location.reload(); return; }
    var docs = questionDocs(q);
    // Server-rendered cards (the first question) are shown as they are: their frames load
    // with the page.
    if (docs.every(function (d) {
      var c = cardOf(d.doc_id);
      return c && (c._loaded || c._initial);
    })) {
      paint(q);
      return;
    }
    state.loading = true;
    mark("hj-load"); // not preloaded: the documents are loaded now, before the swap
    var need = docs.filter(function (d) { return !cardOf(d.doc_id); })
      .map(function (d) { return d.doc_id; });
    fetchFrames(need).then(function () {
      if (token !== state.renderToken) return null;
      var keep = pool.filter(function (c) { return !c.hidden; });
      var cards = docs.map(function (d) {
        var card = cardOf(d.doc_id);
        if (!card) {
          var rendered = frameCache[d.doc_id] || fallbackFrame(d);
          card = spareCard(keep);
          setShown(card, false);
          card.removeAttribute("data-slot");
          loadCard(card, d.doc_id, rendered);
          card._used = ++useTick;
        }
        keep.push(card);
        return card;
      });
      return Promise.all(cards.map(function (c) { return whenLoaded(c, 3000); }));
    }).then(function (loaded) {
      if (loaded === null || token !== state.renderToken) return;
      state.loading = false;
      paint(q);
    });
  }

  function questionDocs(q) {
    return boot.method === "topk" ? [q.pair.left, q.pair.right] : [q.document];
  }

  // Resolves when the card's frame has loaded (or after `ms`, not to hang on a lost event).
  function whenLoaded(card, ms) {
    if (card._loaded) return Promise.resolve();
    return new Promise(function (resolve) {
      var frame = card.querySelector("iframe");
      var timer = setTimeout(resolve, ms);
      frame.addEventListener("load", function () { clearTimeout(timer); resolve(); },
        { once: true });
    });
  }

  function paint(q) {
    state.loading = false;
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
    mark("hj-shown");
    renderClock();
    setTimeout(function () { prefetch(q.seq); }, 0);
  }

  // ---------------------------------------------------------------- notices
  // One notice at a time, floating over the documents (it moves nothing). `kind` names what it
  // is about so that it can be cleared when that is over; `autoHideMs` for passing news.
  function notice(text, level, withRetry, kind, autoHideMs) {
    if (state.noticeTimer) { clearTimeout(state.noticeTimer); state.noticeTimer = null; }
    els.noticeText.textContent = text;
    els.notice.className = "notice notice-float notice-" + (level || "info");
    els.retry.hidden = !withRetry;
    els.notice.hidden = false;
    state.noticeKind = kind || null;
    if (autoHideMs) state.noticeTimer = setTimeout(clearNotice, autoHideMs);
  }
  function clearNotice() {
    if (state.noticeTimer) { clearTimeout(state.noticeTimer); state.noticeTimer = null; }
    els.notice.hidden = true;
    els.retry.hidden = true;
    state.noticeKind = null;
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
    if (req.kind === "judgment") mark("hj-sent");
    var call;
    if (req.kind === "undo" && req.attempts) {
      // After a failure, look first whether the undo already happened (then show that
      // question as it is now, rather than sending the request again).
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
      mark("hj-response");
      if (r.ok) {
        state.failed = null;
        if (state.retryTimer) { clearTimeout(state.retryTimer); state.retryTimer = null; }
        clearStored();
        clearNotice();
        if (req.kind === "judgment") clock.sessionMs += req.body.active_ms || 0;
        if (req.kind === "judgment" && req.body.comment) commentSent(req.body.comment);
        if (req.kind === "undo" && r.data && r.data.seq >= req.undoFromSeq) {
          notice("Nothing to undo.", "warning", false);
        } else if (req.kind === "undo" && req.undoFromSeq - r.data.seq > 1) {
          notice("Undone: your last " + (req.undoFromSeq - r.data.seq) + " answers were taken " +
            "back; answer " + (r.data.seq + 1) + "'s question is asked again.", "info", false,
            "undo", 5000);
        } else if (req.kind === "undo") {
          notice("Undone: your last answer was taken back; the question is asked again.",
            "info", false, "undo", 4000);
        } else if (req.kind === "judgment" && req.body.outcome === "broken") {
          notice("Marked as broken: \u201c" + req.brokenTitle + "\u201d will not be asked again.",
            "info", false, "broken", 4000);
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
    return !state.inFlight && !state.loading && !state.failed && state.question !== null && !state.question.done &&
      !clock.paused && !clock.idle;
  }

  // One answer to the question on screen; `brokenTitle` names the document of a broken answer
  // (for the note shown once it is stored).
  function judge(extra, brokenTitle) {
    if (!canAct()) return;
    if (extra.outcome && extra.outcome !== "broken" && !outcomeAllowed(extra.outcome)) {
      notice(extra.outcome === "not_relevant"
        ? "\u201cNot relevant\u201d is only offered when a new document is compared with the current top k."
        : "This answer is not available for this question.", "warning", false);
      return;
    }
    syncClock();
    var q = state.question;
    // documents "refs": the answer names the next documents without their texts, which the
    // page does not use (it shows the server's rendering from /frames and /lookahead).
    var body = { seq: q.seq, active_ms: questionActiveMs() };
    if (taskApi) body.documents = "refs";
    Object.keys(extra).forEach(function (k) { body[k] = extra[k]; });
    // The comment box's text goes with this answer (docs/rest-api.md#the-judging-loop: any
    // judgment may carry a comment); it is cleared once the server has stored the answer.
    var comment = pendingComment();
    if (comment) body.comment = comment;
    send({ kind: "judgment", path: "/judgments", body: body, seq: q.seq, brokenTitle: brokenTitle });
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
      // Undo back to the last answer (to_seq): the same request twice undoes it once.
      var undoBody = { to_seq: state.question.seq - 1 };
      if (taskApi) undoBody.documents = "refs";
      send({ kind: "undo", path: "/undo", body: undoBody,
        undoFromSeq: state.question.seq });
    },
    pause: function () { setPaused(!clock.paused); },
    highlight: function () { setHighlight(!boot.highlight); },
    broken: function () { togglePanel("broken"); },
    comment: function () { togglePanel("comment"); },
    answers: function () { togglePanel("answers"); },
    guidelines: function () { togglePanel("guidelines", true); }
  };

  // Highlighting on/off: the frames are rendered again by the server (nothing runs in them)
  // and each goes back to its anchor. The choice is kept in a cookie for the next pages.
  function setHighlight(on) {
    boot.highlight = on;
    document.cookie = boot.highlight_cookie + "=" + (on ? "1" : "0") +
      "; path=/; max-age=31536000; samesite=strict";
    if (els.highlight) els.highlight.setAttribute("aria-pressed", on ? "true" : "false");
    frameCache = {};
    frameCacheOrder = [];
    var visible = pool.filter(function (c) { return !c.hidden; });
    // Preloaded frames have the old rendering: drop them (the next lookahead refills).
    pool.filter(function (c) { return c.hidden; }).forEach(function (c) {
      c.parentNode.removeChild(c);
    });
    pool = visible;
    var ids = visible.map(function (c) { return c.getAttribute("data-doc-id"); });
    fetchFrames(ids).then(function () {
      visible.forEach(function (c) {
        var r = frameCache[c.getAttribute("data-doc-id")];
        if (!r) return;
        var pos = c._pos;
        loadCard(c, c.getAttribute("data-doc-id"), r);
        c._pos = Math.min(pos, c._anchors); // restored when the frame has loaded
        c.setAttribute("data-pos", String(c._pos));
      });
      if (state.question) prefetch(state.question.seq);
    });
    notice(on ? "Query words highlighted (H to turn off)." : "Highlighting off (H to turn on).",
      "info", false, "highlight", 2500);
  }
  function gradeAction(g) {
    return function () { judge({ doc_id: state.question.document.doc_id, grade: g }); };
  }
  for (var g = 0; g < 5; g++) actions["grade" + g] = gradeAction(g);

  var keymap = { "u": "undo", "U": "undo", "p": "pause", "P": "pause", "h": "highlight",
    "H": "highlight", "b": "broken", "B": "broken", "c": "comment", "C": "comment",
    "a": "answers", "A": "answers", "g": "guidelines", "G": "guidelines", "?": "guidelines" };
  if (boot.method === "topk") {
    keymap.ArrowLeft = "left"; keymap["1"] = "left";
    keymap.ArrowRight = "right"; keymap["2"] = "right";
    if (boot.allow_ties) keymap["="] = "tie";
    if (boot.not_relevant) { keymap.n = "not_relevant"; keymap.N = "not_relevant"; }
  } else {
    for (var k = 1; k <= 5; k++) keymap[String(k)] = "grade" + (k - 1);
  }

  // The answer button of an action flashes when it is sent (by key or click).
  function flash(name) {
    var b = document.querySelector('.actions [data-action="' + name + '"]');
    if (!b) return;
    briefly(b, "pressed", 160);
  }

  // The answers (what hj-key times and the answer bar flashes for); every other action is a
  // tool of the toolbar.
  var ANSWERS = { left: 1, right: 1, tie: 1, not_relevant: 1, grade0: 1, grade1: 1, grade2: 1,
    grade3: 1, grade4: 1 };

  function run(name) {
    var fn = actions[name];
    if (!fn) return;
    if (name !== "pause" && name !== "highlight" && clock.paused) {
      notice("Paused. Press P (or the clock) to resume.", "warning", false, "paused");
      return;
    }
    if ((ANSWERS[name] || name === "undo") && MODAL[state.panel]) {
      // An answer while "my answers", the comment or the broken dialog is open would change
      // the question under it: close it first.
      notice("Close the open panel first (Esc).", "warning", false, "panel", 3000);
      return;
    }
    if (ANSWERS[name] && canAct()) {
      mark("hj-key");
      flash(name);
    }
    fn();
  }

  // Scroll keys (never the outer page, which fits the screen): Shift+Down/Up the left (top)
  // document, J/K the right (bottom) one, and Down/Up, PageDown/PageUp, Space/Shift+Space,
  // Home/End the current one (outlined: last pointed at or scrolled). True when handled.
  function scrollKey(e) {
    var k = e.key;
    var target = null, how = null;
    if (e.shiftKey && (k === "ArrowDown" || k === "ArrowUp") && boot.method === "topk") {
      target = cardInSlot("left"); how = k === "ArrowDown" ? "page" : "-page";
    } else if ((k === "j" || k === "J" || k === "k" || k === "K") && boot.method === "topk") {
      target = cardInSlot("right"); how = (k === "j" || k === "J") ? "page" : "-page";
    } else {
      var map = { ArrowDown: 2, ArrowUp: -2, PageDown: "page", PageUp: "-page", Home: "home",
        End: "end", " ": e.shiftKey ? "-page" : "page" };
      if (!(k in map)) return false;
      target = current; how = map[k];
    }
    scrollCard(target, how);
    return true;
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    markInput(); // typing a comment or a reason is work too
    if (e.key === "Escape" && state.panel && !clock.idle) {
      e.preventDefault();
      closePanel();
      return;
    }
    if (!clock.idle && panelKey(e)) return;
    var tag = e.target && e.target.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return;
    if (clock.idle) {
      // The key that answers "still there?" does nothing else.
      e.preventDefault();
      leaveIdle();
      return;
    }
    if ((e.key === "r" || e.key === "R") && state.failed) { e.preventDefault(); retry(); return; }
    if (!clock.paused && scrollKey(e)) { e.preventDefault(); return; }
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
  // Frames take no pointer events on desktop, so focus enters one only by touch; then take it
  // back on the next focus change. (No polling: that fought the assessor's own focus.)
  window.addEventListener("blur", function () { setTimeout(reclaimFocus, 0); });
  document.addEventListener("focusin", function () { setTimeout(reclaimFocus, 0); }, true);


  // ---------------------------------------------------------------- assessor tools
  // Four panels over the documents (templates/assess/_judge_common.html): the guidelines (a
  // side panel; answering stays possible while it is open), my answers, the broken-document
  // dialog and the comment box (these three hold the keyboard until closed: Esc). One at a
  // time; the toolbar button and key of a panel toggle it.
  var panels = {
    guidelines: $("guidelines-panel"),
    answers: $("answers-panel"),
    broken: $("broken-panel"),
    comment: $("comment-panel")
  };
  var panelButtons = {
    guidelines: $("guidelines-button"),
    answers: $("answers-button"),
    broken: $("broken-button"),
    comment: $("comment-button")
  };
  var MODAL = { answers: true, broken: true, comment: true };
  // The tools belong to the assessor's own task: a page whose boot names another answering
  // URL (boot.api_url) answers a question that is not in a task of its own, so it has none.
  if (!taskApi) {
    Object.keys(panels).forEach(function (name) { panels[name] = null; });
    var toolBar = document.querySelector(".tool-buttons");
    if (toolBar) toolBar.hidden = true;
  }
  // A link in the guidelines opens in a new tab: following it here would leave the task.
  if (panels.guidelines) {
    Array.prototype.forEach.call(panels.guidelines.querySelectorAll("a[href]"), function (a) {
      a.target = "_blank";
    });
  }
  var TOGGLE_KEYS = { guidelines: "gG?", answers: "aA" };

  function togglePanel(name, focusIt) {
    if (state.panel === name) { closePanel(); return; }
    if (name !== "guidelines" && (!state.question || state.question.done)) return;
    openPanel(name, focusIt !== false);
  }

  function openPanel(name, focusIt) {
    var el = panels[name];
    if (!el) return;
    if (state.panel) closePanel(true);
    state.panel = name;
    el.hidden = false;
    var b = panelButtons[name];
    if (b && b.hasAttribute("aria-expanded")) b.setAttribute("aria-expanded", "true");
    if (name === "answers") loadAnswers();
    if (name === "broken") prepareBroken();
    if (!focusIt) return;
    var target = name === "guidelines" ? $("guidelines-body")
      : name === "comment" ? els.commentText
      : name === "broken" ? el.querySelector("input[type=radio]:checked")
      : $("answers-body");
    if (target) target.focus({ preventScroll: true });
  }

  // Close the open panel; focus goes back to the judging area (unless another panel opens).
  function closePanel(opening) {
    var name = state.panel;
    if (!name) return false;
    panels[name].hidden = true;
    state.panel = null;
    var b = panelButtons[name];
    if (b && b.hasAttribute("aria-expanded")) b.setAttribute("aria-expanded", "false");
    if (name === "comment") renderCommentButton();
    if (state.noticeKind === "panel") clearNotice();
    if (!opening) focusHome();
    return true;
  }

  // Keys typed inside an open panel belong to it (radio arrows, Enter, Space, typing), except
  // its own toggle key outside text fields; true when the page must not act on the key.
  function panelKey(e) {
    var inPanel = e.target && e.target.closest ? e.target.closest(".tool-panel") : null;
    if (!inPanel || !state.panel) return false;
    var typing = e.target.tagName === "TEXTAREA" ||
      (e.target.tagName === "INPUT" && e.target.type === "text");
    var toggles = TOGGLE_KEYS[state.panel] || "";
    if (!typing && e.key.length === 1 && toggles.indexOf(e.key) >= 0) {
      e.preventDefault();
      closePanel();
      return true;
    }
    if (state.panel === "broken" && e.key === "Enter" && e.target.tagName !== "BUTTON") {
      e.preventDefault();
      submitBroken();
    }
    return true;
  }

  // Guidelines open by themselves on the first visit to a collection's task, and again after
  // the admin changed them: the version seen is kept in this browser's localStorage per user
  // and collection (boot.guidelines_key). They do not take the focus: keys keep answering.
  function autoGuidelines() {
    if (!boot.guidelines_version || !panels.guidelines) return;
    var seen = null;
    try { seen = window.localStorage.getItem(boot.guidelines_key); } catch (e) { seen = null; }
    if (seen === boot.guidelines_version) return;
    openPanel("guidelines", false);
    try { window.localStorage.setItem(boot.guidelines_key, boot.guidelines_version); } catch (e) { /* private mode */ }
  }

  // -- comment
  function pendingComment() {
    return els.commentText ? els.commentText.value.trim() : "";
  }
  function renderCommentButton() {
    if (!els.commentButton) return;
    var on = pendingComment() !== "";
    els.commentButton.setAttribute("aria-pressed", on ? "true" : "false");
    els.commentButton.title = on ? "A comment goes with your next answer (C to edit)"
      : "Add a comment to your next answer (C)";
  }
  function commentSent(text) {
    if (els.commentText && els.commentText.value.trim() === text) els.commentText.value = "";
    renderCommentButton();
  }

  // -- broken document
  function prepareBroken() {
    var q = state.question;
    els.brokenError.hidden = true;
    var titles = panels.broken.querySelectorAll(".broken-doc-title");
    for (var i = 0; i < titles.length; i++) {
      var side = titles[i].getAttribute("data-side");
      var doc = side === "single" ? q.document : q.pair && q.pair[side];
      titles[i].textContent = doc ? (doc.title || doc.doc_id) : "";
    }
  }
  function checkedValue(name) {
    var el = els.brokenForm.querySelector("input[name=" + name + "]:checked");
    return el ? el.value : null;
  }
  function brokenError(text) {
    els.brokenError.textContent = text;
    els.brokenError.hidden = false;
  }
  function submitBroken() {
    var q = state.question;
    if (!q || q.done) return;
    var doc = boot.method === "topk" ? q.pair[checkedValue("broken-side") || "left"] : q.document;
    var reason = checkedValue("broken-reason") || "Other";
    var detail = els.brokenDetail.value.replace(/\s+/g, " ").trim();
    if (reason === "Other" && !detail) {
      brokenError("Say what is wrong with it in Details.");
      els.brokenDetail.focus();
      return;
    }
    if (!canAct()) { brokenError("The page is still busy; try again in a moment."); return; }
    var text = (reason === "Other" ? detail : detail ? reason + ": " + detail : reason).slice(0, 500);
    var extra = { outcome: "broken", doc_id: doc.doc_id, reason: text };
    if (boot.method === "topk") { extra.left = q.pair.left.doc_id; extra.right = q.pair.right.doc_id; }
    closePanel();
    els.brokenForm.reset();
    judge(extra, doc.title || doc.doc_id);
  }
  if (els.brokenForm) {
    els.brokenForm.addEventListener("submit", function (e) { e.preventDefault(); submitBroken(); });
  }

  // -- my answers
  var OUTCOME_TEXT = { left: ["Left better", "Top better"], right: ["Right better", "Bottom better"],
    tie: ["Equal", "Equal"], not_relevant: ["Not relevant", "Not relevant"] };

  function textEl(tag, cls, text) {
    var el = document.createElement(tag);
    if (cls) el.className = cls;
    if (text !== undefined) el.textContent = text;
    return el;
  }
  // A wording in its wide-screen and narrow-screen forms ([wide, narrow]).
  function sideTextOf(names) {
    var span = document.createElement("span");
    appendSideNames(span, names);
    return span;
  }
  function docName(ref) { return ref ? (ref.title || ref.doc_id) : "?"; }

  function loadAnswers() {
    els.answersStatus.textContent = "Loading…";
    els.answersStatus.hidden = false;
    els.answersList.textContent = "";
    request("GET", "/answers").then(function (r) {
      if (state.panel !== "answers") return;
      if (!r.ok || !Array.isArray(r.data)) {
        els.answersStatus.textContent = detailText(r.data, "Your answers could not be loaded.");
        return;
      }
      renderAnswers(r.data);
    }, function () {
      els.answersStatus.textContent = "Could not reach the server.";
    });
  }

  // Newest first; every answer can be the point to undo back to (it and every later one).
  function renderAnswers(rows) {
    var list = els.answersList;
    list.textContent = "";
    var live = rows.length;
    els.answersStatus.textContent = live === 0 ? "No answers yet for this query."
      : live + (live === 1 ? " answer" : " answers") + ", newest first. " +
        "“Undo back to here” takes back that answer and every later one.";
    rows.slice().reverse().forEach(function (a) {
      var li = textEl("li");
      li.setAttribute("data-seq", String(a.seq));
      var line = textEl("div", "answer-line");
      line.appendChild(textEl("span", "answer-no", "#" + (a.seq + 1)));
      var what = textEl("span", "answer-what");
      if (a.kind === "pair") {
        what.appendChild(sideTextOf(SIDES.left));
        what.appendChild(document.createTextNode(": " + docName(a.left) + " · "));
        what.appendChild(sideTextOf(SIDES.right));
        what.appendChild(document.createTextNode(": " + docName(a.right) + " → "));
        var o = OUTCOME_TEXT[a.outcome] || [a.outcome, a.outcome];
        what.appendChild(sideTextOf(o)).className = "answer-outcome";
      } else if (a.kind === "grade") {
        what.appendChild(document.createTextNode(docName(a.document) + " → "));
        what.appendChild(textEl("span", "answer-outcome",
          (boot.grade_names && boot.grade_names[a.grade]) || String(a.grade)));
      } else {
        what.appendChild(textEl("span", "answer-broken", "Broken: "));
        what.appendChild(document.createTextNode(docName(a.document) + " (" + (a.reason || "") + ")"));
      }
      line.appendChild(what);
      line.appendChild(textEl("span", "muted", fmt(a.active_ms || 0)));
      var undo = textEl("button", "btn btn-small", "Undo back to here");
      undo.type = "button";
      undo.setAttribute("data-tool", "undo-to");
      undo.setAttribute("data-seq", String(a.seq));
      var later = live - 1 - a.seq;
      undo.setAttribute("aria-label", "Undo back to answer " + (a.seq + 1) +
        (later > 0 ? " (and the " + later + " after it)" : ""));
      line.appendChild(undo);
      li.appendChild(line);
      if (a.comment) li.appendChild(textEl("p", "answer-comment", "Comment: " + a.comment));
      list.appendChild(li);
    });
  }

  // "Undo back to here" asks first, in place: what will be taken back, Yes / Cancel.
  function confirmUndo(button) {
    var li = button.closest("li");
    var old = li.querySelector(".answer-confirm");
    if (old) old.parentNode.removeChild(old);
    var seq = parseInt(button.getAttribute("data-seq"), 10);
    var n = state.question.seq - seq;
    var box = textEl("div", "answer-confirm");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "Confirm undo");
    box.appendChild(textEl("p", "", n > 1
      ? "Take back answer #" + (seq + 1) + " and the " + (n - 1) + " after it? Its question is asked again."
      : "Take back answer #" + (seq + 1) + "? Its question is asked again."));
    var yes = textEl("button", "btn btn-small btn-primary", "Yes, undo " + n + (n === 1 ? " answer" : " answers"));
    yes.type = "button";
    yes.setAttribute("data-tool", "undo-confirm");
    yes.setAttribute("data-seq", String(seq));
    var no = textEl("button", "btn btn-small", "Cancel");
    no.type = "button";
    no.setAttribute("data-tool", "undo-cancel");
    box.appendChild(yes);
    box.appendChild(document.createTextNode(" "));
    box.appendChild(no);
    li.appendChild(box);
    yes.focus();
  }

  function undoTo(seq) {
    if (!canAct()) { notice("The page is still busy; try again in a moment.", "warning", false); return; }
    var from = state.question.seq;
    if (seq >= from) return;
    closePanel();
    send({ kind: "undo", path: "/undo", body: { to_seq: seq, documents: "refs" },
      undoFromSeq: from });
  }

  document.addEventListener("click", function (e) {
    var t = e.target.closest ? e.target.closest("[data-tool]") : null;
    if (!t) return;
    var tool = t.getAttribute("data-tool");
    if (tool === "close") closePanel();
    else if (tool === "clear-comment") { els.commentText.value = ""; els.commentText.focus(); }
    else if (tool === "undo-to") confirmUndo(t);
    else if (tool === "undo-cancel") {
      var li = t.closest("li");
      t.closest(".answer-confirm").remove();
      var back = li && li.querySelector("[data-tool=undo-to]");
      if (back) back.focus();
    } else if (tool === "undo-confirm") undoTo(parseInt(t.getAttribute("data-seq"), 10));
  });

  // ---------------------------------------------------------------- start
  function start(q) {
    // Documents of the first question are already in the (server-rendered) cards.
    render(q);
    focusHome();
    if (!q.done) autoGuidelines();
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
