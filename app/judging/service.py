"""Use cases of the judging loop: the next question, submitting a judgment, undo.

The judgment log is the only state (``docs/architecture.md#the-judgment-log-is-the-only-state``):
a task's pending question is found by replaying its live judgments, in ``seq`` order, through
:func:`labeling.protocol.session.open_session`. The wire contract (seq echo, idempotent retries, 409
with ``current``) is ``docs/rest-api.md#the-judging-loop``.

Submitting validates the answer against the pending question and stores it in ONE write
transaction in which that validation holds:

1. the task is locked (``FOR UPDATE`` on Postgres; SQLite's ``BEGIN IMMEDIATE`` holds the
   write lock already) and its log version read (:data:`~app.judging.repository.LogVersion`);
2. the caller's access and the task's status are checked;
3. the session replayed from that exact log version is compared with the request's ``seq``:
   an earlier question answered identically is a retry (nothing stored, the current question
   returned); anything else answered, or a ``seq`` ahead of the log, is 409 with the current
   question; the pending question takes the answer (the labeling core validates it: 409 for a
   wrong pair or a finished task, 422 for an invalid answer);
4. ``INSERT ... ON CONFLICT DO NOTHING`` against the unique index on live ``(task_id, seq)``
   stores it (the database, not a pre-check, is the arbiter), and the task status moves on
   (pending -> active -> done).

Sessions cache (in-process, per :class:`~app.kernel.db.Database`): a replayed session is kept with
the log version it was built from, and used by the next request for the task only if the
version read under the lock is the same; any other writer (an undo, another worker process)
changes the version and forces a fresh replay. An entry is *taken* by the request that uses
it (never shared between threads) and goes back only if its session still matches the log
(after the commit, or unchanged). Without a cached session the log is replayed in a read
transaction first, outside the write lock (SQLite admits one writer, and replay is the
costly part); the write transaction then only confirms the version. So a warm submit is one
write transaction of four or five short statements and no replay.

On Postgres the common submit (a fresh answer from a cached session) has a form of its own,
:func:`submit_on_loop`, run on the event loop: the session takes the answer first and the
database stores it in one round trip only if the task, the caller and the log version are
still what the session assumed (the checks above, made by the storing statement itself:
:func:`app.judging.repository.store_if_current`). When they are not, it stores nothing and
:func:`submit_judgment` answers as above; so the semantics are the general path's.

A task with a machine judge (option ``machine``, docs/machine-judges.md#the-service) stores the
machine's answers in the same transactions: ``next`` becomes a write (the machine answers up
to a person's question), a person's submit is followed by the machine's answers, and undo
reverts the last person's answer with the machine's after it; such a task always takes the
general path, with its session replayed under the lock and with the machine."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from app.auth.tokens import BearerToken, Caller, Identity, caller_identity
from app.judging import routing
from app.judging.loop import (
    LOOP_CACHES,
    Payload,
    Replayed,
    authorise,
    comment_of,
    pending_ids,
    prepared_by_job,
    replay,
    replayed_body,
    routes,
    uses_machine,
)
from app.judging.opinions import request_opinions
from app.judging.repository import JudgmentStore, log_version, store_if_current
from app.kernel.db import Database
from app.kernel.errors import Conflict, DomainError, Invalid
from app.kernel.models import utcnow
from app.kernel.offload import executor
from app.machine import alarms
from app.machine import service as machines
from labeling.errors import Finished, LabelingError, WrongQuestion
from labeling.identifiers import normal_identifier
from labeling.protocol.topk import TopKSession
from labeling.protocol.types import Answer, BrokenAnswer, GradeAnswer, PairAnswer
from labeling.strategies.assist import AssistStrategy

# --------------------------------------------------------------------------- payloads


def _body(
    db: Database, r: Replayed, store: JudgmentStore | None = None, *, locked: bool = False
) -> Payload:
    """The body of ``/next`` (and of a successful submit or undo) for ``r``
    (:func:`app.judging.loop.replayed_body`). Documents come from the cache, else are read on
    ``store`` (or, after a commit, in a read transaction of their own).

    A deliberate repeat of a task with a second assessor may be routed to them: then the
    body is the waiting state (:func:`app.judging.routing.gate`), decided in
    ``store``'s transaction when ``locked`` (a write transaction holding the task's row lock),
    in one of its own when there is no ``store``, and by the caller when ``store`` is a read."""
    out = replayed_body(db, r, store)
    if locked or store is None:
        out = _gated(db, r, out, store.cursor if store is not None else None)
    return out


def _gated(db: Database, r: Replayed, body: Payload, cursor: Any | None = None) -> Payload:
    """``body``, or the waiting state when its question is routed to a second assessor
    (:func:`app.judging.routing.gate`: a write, in ``cursor``'s transaction or in one
    of its own)."""
    return routing.gate(db, r, body, cursor) if routes(r) else body


#: The fields of a judgment that name documents.
_DOC_FIELDS = ("left", "right", "doc_id")


def _as_shown(r: Replayed, seq: int, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with each document it names (``left``, ``right``, ``doc_id``) spelled as
    question ``seq`` showed it, when the two spellings have one Unicode NFC form
    (:func:`labeling.identifiers.normal_identifier`, docs/security.md#text-hygiene): a client
    that sends ``e`` + a combining accent for a shown ``é`` (or, for an identifier stored in
    that form before the rule, the other way round) answers that document."""
    answers = r.session.answers
    source: object = answers[seq] if seq < len(answers) else r.session.pending
    shown = [v for k in _DOC_FIELDS if isinstance(v := getattr(source, k, None), str)]
    by_form = {normal_identifier(doc): doc for doc in shown}
    out = dict(data)
    for key in _DOC_FIELDS:
        value = out.get(key)
        if isinstance(value, str) and value not in shown:
            out[key] = by_form.get(normal_identifier(value), value)
    return out


def _answer_from_request(r: Replayed, seq: int, data: dict[str, Any]) -> Answer:
    """The protocol answer of a request body for question ``seq`` of ``r`` (422 if its fields
    do not fit the method). Document ids outside ASCII are read as shown (:func:`_as_shown`);
    the test is one concatenation, so an ASCII judgment calls nothing more."""
    if not f"{data.get('left') or ''}{data.get('right') or ''}{data.get('doc_id') or ''}".isascii():
        data = _as_shown(r, seq, data)
    method = r.task.method
    if data.get("outcome") == "broken":
        return _broken_from_request(method, data)
    if data.get("reason") is not None:
        raise Invalid("reason is for a broken document only (outcome broken)")
    if method == "topk":
        missing = [k for k in ("left", "right", "outcome") if data.get(k) is None]
        if missing or data.get("doc_id") is not None or data.get("grade") is not None:
            raise Invalid(
                "a topk judgment needs left, right and outcome (and no doc_id/grade)"
                + (f"; missing: {', '.join(missing)}" if missing else "")
            )
        return PairAnswer(str(data["left"]), str(data["right"]), data["outcome"])
    missing = [k for k in ("doc_id", "grade") if data.get(k) is None]
    if missing or any(data.get(k) is not None for k in ("left", "right", "outcome")):
        raise Invalid(
            "a graded judgment needs doc_id and grade (and no left/right/outcome)"
            + (f"; missing: {', '.join(missing)}" if missing else "")
        )
    return GradeAnswer(str(data["doc_id"]), int(data["grade"]))


def _broken_from_request(method: str, data: dict[str, Any]) -> BrokenAnswer:
    """A broken-document answer (docs/protocols.md#broken-documents): ``doc_id`` and
    ``reason``, plus ``left``/``right`` as shown for topk; never a grade."""
    needed = ("left", "right", "doc_id", "reason") if method == "topk" else ("doc_id", "reason")
    missing = [k for k in needed if not data.get(k)]
    extra = [k for k in ("left", "right", "grade") if k not in needed and data.get(k) is not None]
    if missing or extra:
        raise Invalid(
            f"a broken document of a {method} task needs {', '.join(needed)}"
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + (f"; not allowed: {', '.join(extra)}" if extra else "")
        )
    reason = str(data["reason"]).strip()
    if not reason:
        raise Invalid("a broken document needs a reason (a short text)")
    return BrokenAnswer(str(data["doc_id"]), reason, data.get("left"), data.get("right"))


def _is_retry(r: Replayed, seq: int, answer: Answer, conflict: Callable[[str], Conflict]) -> bool:
    """Whether ``answer`` to question ``seq`` repeats a stored one (True: store nothing) or
    answers the pending question (False); raises ``conflict(message)`` otherwise."""
    answers = r.session.answers
    if seq < len(answers):
        if answers[seq] == answer:
            return True
        raise conflict(f"question {seq} was already answered differently")
    if seq > len(answers):
        raise conflict(f"question {seq} is not open yet; the current question is {len(answers)}")
    return False


# --------------------------------------------------------------------------- use cases


def next_question(*, db: Database, user: Caller, task_id: int) -> Payload:
    """The pending question of a task (or done), rebuilt from its log. A task with a machine
    first lets the machine answer what it may (:func:`_next_with_machine`)."""
    with db.raw_read() as cursor:
        store = JudgmentStore(db, cursor)
        who = caller_identity(db, cursor, user, writable=False)
        task = store.task(task_id)
        authorise(task, who, task_id, judge=False)
        if uses_machine(task):
            replayed = None
        else:
            replayed = replay(task, store.live_log(task_id))
            body = _body(db, replayed, store)
    if replayed is None:
        return _next_with_machine(db, user, task_id)
    # Warms the cache for the submit that follows.
    LOOP_CACHES.of(db).sessions.put(task_id, replayed)
    return _gated(db, replayed, body)  # after the read transaction: routing writes


# --------------------------------------------------------------------------- the machine


def _replay_locked(db: Database, store: JudgmentStore, task_id: int) -> Replayed:
    """The task's session replayed from its log in ``store``'s write transaction, with the
    task's machine when it has one (its study calibration frozen now if it was not)."""
    task = store.task(task_id)
    machine = machines.task_opinion(db, store.cursor, task) if uses_machine(task) else None
    return replay(task, store.live_log(task_id), machine)


def _machine_answers(store: JudgmentStore, r: Replayed, now: Any) -> int:
    """Let ``r``'s machine answer every question it may from the pending one on
    (:meth:`labeling.protocol.topk.TopKSession.let_machine_answer`) and store each answer as
    a judgment with source ``machine``, in ``store``'s write transaction; ``r.version``
    follows. How many were stored (0 without a machine). A conflict on the live
    ``(task, seq)`` index (never under the row lock) is a 409 and the transaction rolls
    back."""
    session = r.session
    if not isinstance(session, TopKSession) or session.machine is None:
        return 0
    judge = machines.machine_judge(session)
    if judge is not None and alarms.stopped(store.db, store.cursor, r.task.collection_id, judge):
        return 0  # the audits showed the machine worse than it claims: people answer
    if prepared_by_job(r.task):
        # Opinions a job stored since the session was built are used from now on.
        machines.refresh_opinions(store.db, store.cursor, r.task.id, session.machine)
    start = len(session.answers)
    new = session.let_machine_answer()
    newest = r.version[1]
    for i, answer in enumerate(new):
        stored = store.insert(r.task.id, start + i, answer, 0, now)
        if stored is None:
            raise Conflict(f"question {start + i} was answered concurrently")
        newest = stored
    r.version = (r.version[0] + len(new), newest)
    return len(new)


def _audit_count(session: Any) -> int:
    """How many audits the session's assist rule has recorded (0 without one)."""
    state = getattr(session, "state", None)
    return len(state.audit_records) if isinstance(state, AssistStrategy) else 0


def _store_audits(
    store: JudgmentStore, r: Replayed, before: int, judgment_id: int, now: Any
) -> None:
    """Store the audit a person's answer (judgment ``judgment_id``) gave, if any, and raise
    the study's alarm when its test rejects the machine (:func:`app.machine.alarms
    .record_audits`), in the answer's transaction."""
    state = getattr(r.session, "state", None)
    judge = machines.machine_judge(r.session)
    if not isinstance(state, AssistStrategy) or judge is None:
        return
    new = state.audit_records[before:]
    if new:
        alarms.record_audits(store.db, store.cursor, r.task, judge, judgment_id, new, now)


def _with_machine(r: Replayed | None) -> Replayed | None:
    """``r``, unless its task has a machine its session was replayed without (then the
    session is replayed again, with the machine, under the lock)."""
    if r is not None and uses_machine(r.task) and getattr(r.session, "machine", None) is None:
        return None
    return r


def _status_change(status: str, done: bool) -> str:
    """The :data:`app.judging.repository.MARK` change after judgments were stored on a task
    in ``status`` ("" for none)."""
    change = "active" if status == "pending" else ""
    if done:
        change = "active+done" if change else "done"
    return change


def _next_with_machine(db: Database, user: Caller, task_id: int) -> Payload:
    """The pending question of a task with a machine: in one write transaction (the task's
    row locked), the session (cached, or replayed with the machine), the machine's answers
    up to a person's question stored (a pending or active task only), then the question."""
    sessions = LOOP_CACHES.of(db).sessions
    cached = _with_machine(sessions.take(task_id))
    with db.raw_write() as cursor:
        store = JudgmentStore(db, cursor)
        who = caller_identity(db, cursor, user, writable=True)
        task = store.task(task_id, lock=True)
        authorise(task, who, task_id, judge=False)
        rows = store.live_log(task_id)
        replayed = cached
        if replayed is None or not replayed.matches(task.created_at, log_version(rows)):
            replayed = replay(task, rows, machines.task_opinion(db, cursor, task))
        if task.status in ("pending", "active"):
            now = utcnow()
            if _machine_answers(store, replayed, now):
                change = _status_change(task.status, bool(replayed.session.done))
                if change:
                    store.mark(task_id, change, now)
        body = _body(db, replayed, store, locked=True)
    sessions.put(task_id, replayed)
    request_opinions(db, task_id, replayed.session)  # after the commit
    return body


def _replay_outside_lock(
    db: Database, user: Caller, task_id: int
) -> tuple[Identity, Replayed | None]:
    """The caller's identity and, if the task is theirs, its session replayed in a read
    transaction (so the replay is not done under the write lock). Authorisation is the
    write transaction's: a task that is not the caller's is simply not replayed here."""
    with db.raw_read() as cursor:
        store = JudgmentStore(db, cursor)
        who = caller_identity(db, cursor, user, writable=False)
        task = store.task(task_id)
        if task is None or task.assessor_id != who.id or uses_machine(task):
            # A task with a machine is replayed under the lock, with the machine.
            return who, None
        return who, replay(task, store.live_log(task_id))


def _fresh_answer(r: Replayed, seq: int, data: dict[str, Any]) -> Answer | None:
    """The request's answer if it is a fresh answer to ``r``'s pending question that the
    protocol accepts, now submitted to ``r.session``; None otherwise (a retry, a conflict or
    an invalid answer, which the general path answers), ``r`` unchanged."""
    try:
        answer = _answer_from_request(r, seq, data)
    except (DomainError, ValueError):
        return None
    if seq != len(r.session.answers):
        return None
    try:
        r.session.submit(answer)  # validates; unchanged if it raises
    except LabelingError:
        return None
    return answer


async def submit_on_loop(
    *, db: Database, user: Caller, task_id: int, data: dict[str, Any]
) -> Payload | None:
    """:func:`submit_judgment` for the common case on Postgres, run on the event loop in one
    round trip; None where it does not apply, with nothing stored (the caller then runs
    :func:`submit_judgment`, which makes every check itself).

    It applies to a fresh answer (:func:`_fresh_answer`) to a task whose session is cached.
    The session takes the answer, then
    :func:`app.judging.repository.store_if_current` stores it in one transaction, only if
    the task, the caller and the log are still what the session assumed: the general path's
    checks, made by the database in the storing statement. Anything else (a refused caller, a
    cancelled task, a log that moved on through another process or an undo) stores nothing
    and returns None, the session dropped; so does a driver error (a dead connection), after
    which the general path finds the judgment stored (an identical retry) or not."""
    # Imported here, not with the module: only Postgres comes here, where the engine has
    # loaded psycopg already; a SQLite server never loads it (memory at start,
    # docs/performance.md#imports).
    import psycopg

    sessions = LOOP_CACHES.of(db).sessions
    r: Replayed | None = sessions.take(task_id)
    if r is None:
        return None
    seq = int(data["seq"])
    # A repeat routed to a second assessor is not the first assessor's to answer: the general
    # path says so (docs/noise.md#routing-re-asks-to-a-second-assessor). A task with a machine
    # stores the machine's answers with the person's: the general path does.
    answer = None if routes(r) or uses_machine(r.task) else _fresh_answer(r, seq, data)
    if answer is None:
        sessions.put(task_id, r)
        return None
    # From here the session is ahead of the log until the judgment is stored: on any exit
    # without storing, it is dropped (the general path replays).
    connections = db.loop_connections
    assert connections is not None  # Postgres only (app.kernel.offload)
    if isinstance(user, BearerToken):
        digest, user_id = user.digest, None
    else:
        digest, user_id = None, user.id
    active_ms = int(data.get("active_ms") or 0)
    now = utcnow()
    try:
        async with connections.connection() as conn:
            inserted = await store_if_current(
                db,
                conn,
                task_id=task_id,
                incarnation=r.task.created_at,
                version=r.version,
                seq=seq,
                answer=answer,
                active_ms=active_ms,
                now=now,
                comment=comment_of(data),
                finishes=bool(r.session.done),
                digest=digest,
                user_id=user_id,
            )
    except psycopg.Error:
        return None
    if inserted is None:
        return None
    r.version = (r.version[0] + 1, inserted)
    r.active_ms += active_ms
    sessions.put(task_id, r)
    if not routes(r) and LOOP_CACHES.of(db).documents.has(r.task, pending_ids(r.session)):
        return _body(db, r)
    # The next question's documents must be read (not cached yet, or evicted), or the next
    # question is routed to a second assessor (a write): blocking, so on a worker thread,
    # not on the loop.
    return await asyncio.get_running_loop().run_in_executor(executor(), _body, db, r)


def submit_judgment(*, db: Database, user: Caller, task_id: int, data: dict[str, Any]) -> Payload:
    """Record one judgment (the module docstring gives the exact semantics); returns the
    next question (or, for an identical retry, the current one)."""
    seq = int(data["seq"])
    active_ms = int(data.get("active_ms") or 0)
    sessions = LOOP_CACHES.of(db).sessions
    who: Identity | None = None
    replayed = _with_machine(sessions.take(task_id))
    if replayed is None:
        who, replayed = _replay_outside_lock(db, user, task_id)
    # ``replayed`` goes back to the cache at the end unless its session got ahead of the log.
    dirty = False
    try:
        with db.raw_write() as cursor:
            store = JudgmentStore(db, cursor)
            state, version, checked = store.locked_state(task_id, who or user)
            authorise(state, checked, task_id, judge=True)
            if replayed is None or not replayed.matches(state.created_at, version):
                # Someone changed the log since it was replayed (or the entry is for another
                # incarnation of this id): replay the log as it is now, under the lock.
                replayed = _replay_locked(db, store, task_id)
            current = replayed

            def conflict(message: str) -> Conflict:
                return Conflict(message, extra={"current": _body(db, current, store, locked=True)})

            answer = _answer_from_request(replayed, seq, data)
            if _is_retry(replayed, seq, answer, conflict):
                return _body(db, replayed, store, locked=True)
            if seq == len(replayed.session.answers) and routes(replayed):
                waiting = routing.check_submit(db, cursor, task_id, seq)
                if waiting is not None:
                    raise conflict(waiting["message"])
            audited = _audit_count(replayed.session)
            try:
                replayed.session.submit(answer)  # validates; unchanged if it raises
            except (WrongQuestion, Finished) as exc:
                raise conflict(str(exc)) from exc
            dirty = True
            now = utcnow()
            inserted = store.insert(task_id, seq, answer, active_ms, now, comment_of(data))
            if inserted is None:
                # Only if the row lock failed to serialise us: the stored row decides.
                current = replay(store.task(task_id), store.live_log(task_id))
                if _is_retry(current, seq, answer, conflict):
                    return _body(db, current, store, locked=True)
                raise conflict(f"question {seq} was answered concurrently")
            replayed.version = (version[0] + 1, inserted)
            _store_audits(store, replayed, audited, inserted, now)
            # The machine answers what it may up to the next person's question (a task with
            # a machine; docs/machine-judges.md#the-service), in this transaction.
            _machine_answers(store, replayed, now)
            change = _status_change(state.status, bool(replayed.session.done))
            if change:
                store.mark(task_id, change, now)
        replayed.active_ms += active_ms
        dirty = False
        request_opinions(db, task_id, replayed.session)  # after the commit
        # After the commit: documents come from the cache (or one read outside the lock).
        return _body(db, replayed)
    finally:
        if replayed is not None and not dirty:
            sessions.put(task_id, replayed)


def undo_judgment(
    *, db: Database, user: Caller, task_id: int, to_seq: int | None = None
) -> Payload:
    """Revert the last live judgment a person gave, or with ``to_seq`` every live judgment
    from that seq on (kept in the log, marked undone), in one transaction; returns the
    question then pending.

    A machine's answers are derived, not given: undoing a person's answer also marks undone
    the machine's answers after it, and the machine then answers anew what it may
    (docs/machine-judges.md#the-service). Without ``to_seq``: 409 if no person's answer is
    live. With it: nothing live at or after ``to_seq`` (a repeated request, a double click)
    changes nothing and returns the current question, so the request is idempotent."""
    sessions = LOOP_CACHES.of(db).sessions
    sessions.take(task_id)  # its version is about to be stale; frees the entry
    with db.raw_write() as cursor:
        store = JudgmentStore(db, cursor)
        who = caller_identity(db, cursor, user, writable=True)
        task = store.task(task_id, lock=True)
        authorise(task, who, task_id, judge=True)
        rows = store.live_log(task_id)
        now = utcnow()
        if to_seq is None:
            people = [r.seq for r in rows if r.source != "machine"]
            if not people:
                current = _body(db, replay(task, rows), store, locked=True)
                raise Conflict("nothing to undo", extra={"current": current})
            last = people[-1]
            if last == rows[-1].seq:
                if not store.undo(task_id, last, now):
                    raise Conflict("the last judgment was undone concurrently")
            else:
                store.undo_from(task_id, last, now)
            kept = rows[:last]
        else:
            kept = rows[:to_seq]
            if len(kept) < len(rows):
                store.undo_from(task_id, to_seq, now)
        status = task.status
        if len(kept) < len(rows) and status == "done":
            store.reopen(task_id)
            status = "active"
        if task.options.get("second_assessor"):
            # Routed questions after the new pending one are no longer asked (docs/noise.md).
            routing.cancel_after(db, cursor, task_id, len(kept))
        machine = machines.task_opinion(db, cursor, task) if uses_machine(task) else None
        replayed = replay(task, kept, machine)
        if status in ("pending", "active") and _machine_answers(store, replayed, now):
            change = _status_change(status, bool(replayed.session.done))
            if change:
                store.mark(task_id, change, now)
        body = _body(db, replayed, store, locked=True)
    sessions.put(task_id, replayed)
    return body


def review_answers(*, db: Database, user: Caller, task_id: int) -> list[Payload]:
    """The task's live answers, oldest first, for the assessor's review list (read-only): per
    answer its ``seq``, ``kind`` (``pair``, ``grade`` or ``broken``), the pair as shown or the
    document (ids and titles), the outcome or grade, a broken document's ``reason``, the
    ``comment``, ``active_ms`` and the time stored. Its assessor or an admin may read it. A
    machine's answers are left out (docs/machine-judges.md#the-service)."""
    with db.raw_read() as cursor:
        store = JudgmentStore(db, cursor)
        who = caller_identity(db, cursor, user, writable=False)
        task = store.task(task_id)
        authorise(task, who, task_id, judge=False)
        # A person reviews their own answers: a machine's are not shown (blind: they would
        # tell its opinion of pairs a repeat may ask again; docs/machine-judges.md).
        rows = [r for r in store.review_log(task_id) if r.source != "machine"]
        wanted = {d for r in rows for d in (r.left_doc, r.right_doc, r.doc_id) if d is not None}
        titles = {
            doc: row.title for doc, row in store.documents(task.query_id, sorted(wanted)).items()
        }
    out: list[Payload] = []
    for r in rows:
        kind = "broken" if r.outcome == "broken" else "grade" if r.grade is not None else "pair"
        out.append(
            {
                "seq": r.seq,
                "kind": kind,
                "left": _doc_ref(r.left_doc, titles),
                "right": _doc_ref(r.right_doc, titles),
                "document": _doc_ref(r.doc_id, titles),
                "outcome": r.outcome if kind == "pair" else None,
                "grade": r.grade,
                "reason": r.reason,
                "comment": r.comment,
                "active_ms": r.active_ms,
                "time": r.created_at,
            }
        )
    return out


def _doc_ref(doc_id: str | None, titles: dict[str, str]) -> Payload | None:
    return None if doc_id is None else {"doc_id": doc_id, "title": titles.get(doc_id, "")}
