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
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from app.judging.document_cache import DocumentCache, Payload
from app.judging.repository import (
    JudgmentStore,
    LogRow,
    LogVersion,
    live_judgments,
    log_version,
    store_if_current,
)
from app.kernel.caches import LRU, Slot
from app.kernel.db import Database
from app.kernel.errors import Conflict, DomainError, Invalid
from app.kernel.models import utcnow
from app.kernel.offload import executor
from app.second_opinions import service as second_opinions
from app.tasks.service import check_task_access
from app.users.tokens import BearerToken, Caller, Identity, caller_identity
from labeling.errors import Finished, LabelingError, WrongQuestion
from labeling.protocol.session import open_session
from labeling.protocol.topk import TopKSession
from labeling.protocol.types import (
    Answer,
    BrokenAnswer,
    GradeAnswer,
    GradeQuestion,
    PairAnswer,
    PairQuestion,
)

# live_judgments: the read-only services (results, exports, pages) replay with it too.
__all__ = [
    "Lookahead",
    "Payload",
    "TaskPage",
    "answer_of",
    "clear_caches",
    "live_judgments",
    "lookahead",
    "next_question",
    "replay_task",
    "review_answers",
    "submit_judgment",
    "submit_on_loop",
    "task_documents",
    "task_page",
    "undo_judgment",
]


# --------------------------------------------------------------------------- replay


def answer_of(row: LogRow) -> Answer:
    """The protocol answer recorded in a judgment row."""
    if row.outcome == "broken":
        return BrokenAnswer(row.doc_id or "", row.reason or "", row.left_doc, row.right_doc)
    if row.doc_id is not None:
        return GradeAnswer(row.doc_id, int(row.grade if row.grade is not None else -1))
    return PairAnswer(row.left_doc or "", row.right_doc or "", row.outcome)  # type: ignore[arg-type]


def replay_task(task: Any, rows: Sequence[LogRow]) -> Any:
    """Rebuild the protocol session of ``task`` (an ORM Task or a task row) from its live
    log."""
    return open_session(
        task.method,
        task.doc_ids,
        k=task.k,
        seed=task.seed,
        options=task.options,
        answers=[answer_of(r) for r in rows],
    )


@dataclass(frozen=True, slots=True)
class _TaskConfig:
    """What never changes in a task: its protocol config (status and assessor may)."""

    id: int
    query_id: int
    method: str
    k: int
    seed: int
    options: Any
    doc_ids: Any
    created_at: Any


@dataclass(slots=True)
class _Replayed:
    """A replayed session and the log version it was built from."""

    task: _TaskConfig
    session: Any
    version: LogVersion
    active_ms: int

    def matches(self, created_at: Any, version: LogVersion) -> bool:
        """True if this is the session of the task incarnation ``created_at`` at ``version``."""
        return self.task.created_at == created_at and self.version == version


def _replay(task: Any, rows: Sequence[LogRow]) -> _Replayed:
    active_ms = sum(r.active_ms for r in rows)
    return _Replayed(_config(task), replay_task(task, rows), log_version(rows), active_ms)


# --------------------------------------------------------------------------- caches


class _Caches:
    """The judging loop's caches of one :class:`Database` (:data:`LOOP_CACHES`)."""

    def __init__(self) -> None:
        #: Replayed sessions by task id (one entry per recently judged task).
        self.sessions = LRU(256)
        self.documents = DocumentCache()


#: The judging loop's caches of every :class:`Database`.
LOOP_CACHES: Slot[_Caches] = Slot("judging loop", lambda db: _Caches())


def clear_caches(db: Database) -> None:
    """Forget cached sessions and documents (tests; never needed for correctness)."""
    LOOP_CACHES.clear(db)


# --------------------------------------------------------------------------- payloads


def _body(
    db: Database, r: _Replayed, store: JudgmentStore | None = None, *, locked: bool = False
) -> Payload:
    """The body of ``/next`` (and of a successful submit or undo) for ``r``. Documents come
    from the cache, else are read on ``store`` (or, after a commit, in a read transaction of
    their own).

    A deliberate repeat of a task with a second assessor may be routed to them: then the
    body is the waiting state (:func:`app.second_opinions.service.gate`), decided in
    ``store``'s transaction when ``locked`` (a write transaction holding the task's row lock),
    in one of its own when there is no ``store``, and by the caller when ``store`` is a read.

    ``progress.estimated_remaining`` is ``ceil(expected_remaining)``, 0 once done.
    ``challenger`` (topk) is the side, ``"left"`` or ``"right"``, showing Step 2's new
    document (the stream item "not relevant" refers to; ``TopKSession.pending_challenger``),
    null otherwise."""

    def documents(doc_ids: Sequence[str]) -> dict[str, Payload]:
        return _documents(db, r.task, doc_ids, store)

    body = _question_body(r.task, r.session, r.active_ms, documents)
    if locked or store is None:
        body = _gated(db, r, body, store.cursor if store is not None else None)
    return body


def _routes(r: _Replayed) -> bool:
    """Whether the pending question of ``r`` is a repeat its task routes to a second assessor
    (docs/noise.md#routing-re-asks-to-a-second-assessor). One dict lookup for a task that
    routes nothing, so the hot path of every other task stays as it was."""
    return bool(r.task.options.get("second_assessor")) and r.session.pending_is_repeat


def _gated(db: Database, r: _Replayed, body: Payload, cursor: Any | None = None) -> Payload:
    """``body``, or the waiting state when its question is routed to a second assessor
    (:func:`app.second_opinions.service.gate`: a write, in ``cursor``'s transaction or in one
    of its own)."""
    return second_opinions.gate(db, r, body, cursor) if _routes(r) else body


def _documents(
    db: Database, task: Any, doc_ids: Sequence[str], store: JudgmentStore | None = None
) -> dict[str, Payload]:
    """Payloads of the task's documents ``doc_ids``, from the document cache; what is not
    cached is read on ``store`` (or in a read transaction of its own)."""

    def fetch(query_id: int, ids: Sequence[str]) -> dict[str, Any]:
        if store is not None:
            return store.documents(query_id, ids)
        with db.raw_read() as cursor:
            return JudgmentStore(db, cursor).documents(query_id, ids)

    return LOOP_CACHES.of(db).documents.payloads(task, doc_ids, fetch)


def _question_body(
    task: Any,
    session: Any,
    active_ms: int,
    documents: Callable[[Sequence[str]], dict[str, Payload]],
) -> Payload:
    """The question body of ``session`` (see :func:`_body`); ``documents(ids)`` gives the
    document payloads."""
    p = session.progress()
    body: Payload = {
        "task_id": task.id,
        "method": task.method,
        "done": bool(session.done),
        "progress": {
            "judgments": p.judgments,
            "estimated_remaining": math.ceil(p.expected_remaining - 1e-9) if not p.done else 0,
            "expected_remaining": p.expected_remaining,
            "max_remaining": p.max_remaining,
            "done": p.done,
        },
        "active_ms": active_ms,
    }
    q = session.pending
    if isinstance(q, PairQuestion):
        docs = documents([q.left, q.right])
        challenger = session.pending_challenger
        body["seq"] = q.seq
        body["pair"] = {"left": docs[q.left], "right": docs[q.right]}
        body["allowed_outcomes"] = list(session.allowed_outcomes)
        body["challenger"] = (
            "left" if challenger == q.left else "right" if challenger == q.right else None
        )
    elif isinstance(q, GradeQuestion):
        body["seq"] = q.seq
        body["document"] = documents([q.doc_id])[q.doc_id]
    return body


def documents_as_refs(body: Payload) -> Payload:
    """``body`` with its documents as ``{doc_id, title}`` (no text or html): the answer a
    client asks for with ``"documents": "refs"`` when it renders documents itself (the judging
    page, from /tasks/{id}/frames), which saves it reading and parsing both texts on every
    answer."""
    out = dict(body)
    if "pair" in out:
        out["pair"] = {side: _ref(doc) for side, doc in out["pair"].items()}
    if "document" in out:
        out["document"] = _ref(out["document"])
    return out


def _ref(doc: Payload) -> Payload:
    return {"doc_id": doc["doc_id"], "title": doc.get("title", "")}


# --------------------------------------------------------------------------- checks


def _authorise(task: Any, who: Identity, task_id: int, *, judge: bool) -> None:
    """404 / 403 unless ``who`` may act on ``task`` (a row, or None if missing); with
    ``judge`` also 409 for a cancelled task."""
    check_task_access(task, who, task_id, judge=judge)
    if judge and task.status == "cancelled":
        raise Conflict(f"task {task_id} is cancelled")


def _answer_from_request(method: str, data: dict[str, Any]) -> Answer:
    """The protocol answer of a request body (422 if its fields do not fit the method)."""
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


def _comment_of(data: dict[str, Any]) -> str | None:
    """The request's comment, trimmed; None when absent or blank."""
    comment = data.get("comment")
    if comment is None:
        return None
    comment = str(comment).strip()
    return comment or None


def _is_retry(r: _Replayed, seq: int, answer: Answer, conflict: Callable[[str], Conflict]) -> bool:
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
    """The pending question of a task (or done), rebuilt from its log."""
    with db.raw_read() as cursor:
        store = JudgmentStore(db, cursor)
        who = caller_identity(db, cursor, user, writable=False)
        task = store.task(task_id)
        _authorise(task, who, task_id, judge=False)
        replayed = _replay(task, store.live_log(task_id))
        body = _body(db, replayed, store)
    # Warms the cache for the submit that follows.
    LOOP_CACHES.of(db).sessions.put(task_id, replayed)
    return _gated(db, replayed, body)  # after the read transaction: routing writes


def _replay_outside_lock(
    db: Database, user: Caller, task_id: int
) -> tuple[Identity, _Replayed | None]:
    """The caller's identity and, if the task is theirs, its session replayed in a read
    transaction (so the replay is not done under the write lock). Authorisation is the
    write transaction's: a task that is not the caller's is simply not replayed here."""
    with db.raw_read() as cursor:
        store = JudgmentStore(db, cursor)
        who = caller_identity(db, cursor, user, writable=False)
        task = store.task(task_id)
        if task is None or task.assessor_id != who.id:
            return who, None
        return who, _replay(task, store.live_log(task_id))


def _fresh_answer(r: _Replayed, seq: int, data: dict[str, Any]) -> Answer | None:
    """The request's answer if it is a fresh answer to ``r``'s pending question that the
    protocol accepts, now submitted to ``r.session``; None otherwise (a retry, a conflict or
    an invalid answer, which the general path answers), ``r`` unchanged."""
    try:
        answer = _answer_from_request(r.task.method, data)
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
    sessions = LOOP_CACHES.of(db).sessions
    r: _Replayed | None = sessions.take(task_id)
    if r is None:
        return None
    seq = int(data["seq"])
    # A repeat routed to a second assessor is not the first assessor's to answer: the general
    # path says so (docs/noise.md#routing-re-asks-to-a-second-assessor).
    answer = None if _routes(r) else _fresh_answer(r, seq, data)
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
                comment=_comment_of(data),
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
    if not _routes(r) and LOOP_CACHES.of(db).documents.has(r.task, _pending_ids(r.session)):
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
    replayed: _Replayed | None = sessions.take(task_id)
    if replayed is None:
        who, replayed = _replay_outside_lock(db, user, task_id)
    # ``replayed`` goes back to the cache at the end unless its session got ahead of the log.
    dirty = False
    try:
        with db.raw_write() as cursor:
            store = JudgmentStore(db, cursor)
            known = who

            def identify() -> Identity:
                return known or caller_identity(db, cursor, user, writable=True)

            state, version, checked = store.locked_state(task_id, identify)
            _authorise(state, checked, task_id, judge=True)
            if replayed is None or not replayed.matches(state.created_at, version):
                # Someone changed the log since it was replayed (or the entry is for another
                # incarnation of this id): replay the log as it is now, under the lock.
                replayed = _replay(store.task(task_id), store.live_log(task_id))
            current = replayed

            def conflict(message: str) -> Conflict:
                return Conflict(message, extra={"current": _body(db, current, store, locked=True)})

            answer = _answer_from_request(replayed.task.method, data)
            if _is_retry(replayed, seq, answer, conflict):
                return _body(db, replayed, store, locked=True)
            if seq == len(replayed.session.answers) and _routes(replayed):
                waiting = second_opinions.check_submit(db, cursor, task_id, seq)
                if waiting is not None:
                    raise conflict(waiting["message"])
            try:
                replayed.session.submit(answer)  # validates; unchanged if it raises
            except (WrongQuestion, Finished) as exc:
                raise conflict(str(exc)) from exc
            dirty = True
            now = utcnow()
            inserted = store.insert(task_id, seq, answer, active_ms, now, _comment_of(data))
            if inserted is None:
                # Only if the row lock failed to serialise us: the stored row decides.
                current = _replay(store.task(task_id), store.live_log(task_id))
                if _is_retry(current, seq, answer, conflict):
                    return _body(db, current, store, locked=True)
                raise conflict(f"question {seq} was answered concurrently")
            change = "active" if state.status == "pending" else ""
            if replayed.session.done:
                change = "active+done" if change else "done"
            if change:
                store.mark(task_id, change, now)
        replayed.version = (version[0] + 1, inserted)
        replayed.active_ms += active_ms
        dirty = False
        # After the commit: documents come from the cache (or one read outside the lock).
        return _body(db, replayed)
    finally:
        if replayed is not None and not dirty:
            sessions.put(task_id, replayed)


def undo_judgment(
    *, db: Database, user: Caller, task_id: int, to_seq: int | None = None
) -> Payload:
    """Revert the last live judgment, or with ``to_seq`` every live judgment from that seq on
    (kept in the log, marked undone), in one transaction; returns the question then pending.

    Without ``to_seq``: 409 if there is nothing to undo. With it: nothing live at or after
    ``to_seq`` (a repeated request, a double click) changes nothing and returns the current
    question, so the request is idempotent."""
    sessions = LOOP_CACHES.of(db).sessions
    sessions.take(task_id)  # its version is about to be stale; frees the entry
    with db.raw_write() as cursor:
        store = JudgmentStore(db, cursor)
        who = caller_identity(db, cursor, user, writable=True)
        task = store.task(task_id, lock=True)
        _authorise(task, who, task_id, judge=True)
        rows = store.live_log(task_id)
        if to_seq is None:
            if not rows:
                current = _body(db, _replay(task, rows), store, locked=True)
                raise Conflict("nothing to undo", extra={"current": current})
            if not store.undo(task_id, rows[-1].seq, utcnow()):
                raise Conflict("the last judgment was undone concurrently")
            kept = rows[:-1]
        else:
            kept = rows[:to_seq]
            if len(kept) < len(rows):
                store.undo_from(task_id, to_seq, utcnow())
        if len(kept) < len(rows) and task.status == "done":
            store.reopen(task_id)
        if task.options.get("second_assessor"):
            # Routed questions after the new pending one are no longer asked (docs/noise.md).
            second_opinions.cancel_after(db, cursor, task_id, len(kept))
        replayed = _replay(task, kept)
        body = _body(db, replayed, store, locked=True)
    sessions.put(task_id, replayed)
    return body


def review_answers(*, db: Database, user: Caller, task_id: int) -> list[Payload]:
    """The task's live answers, oldest first, for the assessor's review list (read-only): per
    answer its ``seq``, ``kind`` (``pair``, ``grade`` or ``broken``), the pair as shown or the
    document (ids and titles), the outcome or grade, a broken document's ``reason``, the
    ``comment``, ``active_ms`` and the time stored. Its assessor or an admin may read it."""
    with db.raw_read() as cursor:
        store = JudgmentStore(db, cursor)
        who = caller_identity(db, cursor, user, writable=False)
        task = store.task(task_id)
        _authorise(task, who, task_id, judge=False)
        rows = store.review_log(task_id)
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


# --------------------------------------------------------------------------- the assessor's pages
# Read-only views for the judging page, its done page and the page's preloading
# (app/web/assess.py): the same statements, replay, question body and document cache
# as the REST judging loop, and only for the task's own assessor (an admin reads tasks
# through the REST API).


@dataclass(frozen=True, slots=True)
class TaskPage:
    """What the judging page and the done page show about one of the caller's tasks."""

    task_id: int
    method: str
    k: int
    options: dict[str, Any]
    status: str
    collection_id: int
    query_title: str
    query_description: str
    question: Payload
    """The body of ``GET /api/v1/tasks/{id}/next`` (:func:`next_question`): ``done``,
    ``progress``, ``active_ms`` and the pending question."""
    result: Any
    """The protocol's result once the log is complete (``session.result()``), else None."""
    documents: dict[str, Payload]
    """Payloads of the documents of a finished top-k list (for their titles)."""

    @property
    def done(self) -> bool:
        return bool(self.question["done"])


def _own_task(store: JudgmentStore, who: Identity, task_id: int) -> Any:
    """The task row if ``who`` is its assessor: 404 if it does not exist, 403 otherwise."""
    task = store.task(task_id)
    check_task_access(task, who, task_id, judge=True)
    return task


def task_page(*, db: Database, user: Caller, task_id: int) -> TaskPage:
    """The caller's task replayed from its log, with its query's text and (as
    :func:`next_question`) the pending question; 404 / 403 for a missing or foreign task."""
    with db.raw_read() as cursor:
        store = JudgmentStore(db, cursor)
        task = _own_task(store, caller_identity(db, cursor, user, writable=False), task_id)
        replayed = _replay(task, store.live_log(task_id))
        question = _body(db, replayed, store)
        result = replayed.session.result() if replayed.session.done else None
        top = list(result.top) if result is not None and task.method == "topk" else []
        documents = _documents(db, replayed.task, top, store) if top else {}
        query = store.query_text(task.query_id)
    if result is None:
        LOOP_CACHES.of(db).sessions.put(task_id, replayed)  # warms the cache for the first submit
        question = _gated(db, replayed, question)  # after the read transaction: routing writes
    return TaskPage(
        task_id=task.id,
        method=task.method,
        k=task.k,
        options=dict(task.options or {}),
        status=task.status,
        collection_id=query.collection_id,
        query_title=query.title,
        query_description=query.description,
        question=question,
        result=result,
        documents=documents,
    )


def task_documents(
    *, db: Database, user: Caller, task_id: int, doc_ids: Sequence[str]
) -> tuple[str, list[Payload]]:
    """(query text, payloads of the task's documents among ``doc_ids`` in the order asked;
    ids not in the task are left out) for the caller's task; 404 / 403 as :func:`task_page`."""
    with db.raw_read() as cursor:
        store = JudgmentStore(db, cursor)
        task = _own_task(store, caller_identity(db, cursor, user, writable=False), task_id)
        pool = set(task.doc_ids)
        wanted = [d for d in dict.fromkeys(doc_ids) if d in pool]
        found = _documents(db, task, wanted, store) if wanted else {}
        title = store.query_text(task.query_id).title
    return title, [found[d] for d in wanted]


@dataclass(frozen=True, slots=True)
class Lookahead:
    """What may come after the pending question: the documents to preload and, per answer,
    the next question itself (for showing it the moment the key is pressed)."""

    docs: list[Payload]
    """Payloads of the documents that may be shown next, not those shown now."""
    next: dict[str, Payload]
    """Answer key -> the next question in the shape of the API's question body, reduced to what
    the page draws: ``seq``, ``pair`` (``left``/``right``: ``doc_id``, ``title``) or
    ``document``, ``allowed_outcomes``, ``challenger`` and ``progress``. Keys: the outcomes
    allowed now (topk) or ``"grade"`` (graded: the next document does not depend on the grade).
    An answer after which the task is done is left out (the page then waits for the server)."""


def lookahead(
    *, db: Database, user: Caller, task_id: int, seq: int
) -> tuple[str, Lookahead | None]:
    """(query text, what the assessor may see after answering question ``seq``) for
    preloading; 404 / 403 as :func:`task_page`.

    For a topk task: the next question after each answer the protocol accepts now (replayed
    hypothetically; nothing is stored). For a graded task: the next two documents (their order
    does not depend on the grades). The lookahead is None when ``seq`` is not the pending
    question (the page is stale)."""
    with db.raw_read() as cursor:
        store = JudgmentStore(db, cursor)
        task = _own_task(store, caller_identity(db, cursor, user, writable=False), task_id)
        title = store.query_text(task.query_id).title
        rows = store.live_log(task_id)
        session = replay_task(task, rows)
        pending = session.pending
        if pending is None or pending.seq != seq:
            return title, None
        answers = [answer_of(r) for r in rows]
        upcoming: list[str] = []
        branches: dict[str, Any] = {}
        current: set[str]
        if isinstance(pending, PairQuestion):
            current = {pending.left, pending.right}
            for outcome in session.allowed_outcomes:
                answer = PairAnswer(pending.left, pending.right, outcome)
                after = _hypothetical(task, [*answers, answer])
                nxt = after.pending
                if isinstance(nxt, PairQuestion):
                    upcoming += [nxt.left, nxt.right]
                    branches[outcome] = after
        else:
            current = {pending.doc_id}
            hypothetical = list(answers)
            q: Any = pending
            for step in range(2):
                hypothetical.append(GradeAnswer(q.doc_id, 0))
                after = _hypothetical(task, hypothetical)
                q = after.pending
                if q is None:
                    break
                if step == 0:
                    branches["grade"] = after
                upcoming.append(q.doc_id)
        wanted = list(dict.fromkeys(d for d in upcoming if d not in current))
        shown = {d for b in branches.values() for d in _pending_ids(b)}
        found = _documents(db, task, sorted(set(wanted) | shown), store)
    titles = {d: str(p.get("title") or "") for d, p in found.items()}
    nxt_bodies = {key: _next_body(b, titles) for key, b in branches.items()}
    return title, Lookahead(
        [found[d] for d in wanted], {key: b for key, b in nxt_bodies.items() if b is not None}
    )


def _config(task: Any) -> _TaskConfig:
    return _TaskConfig(
        task.id,
        task.query_id,
        task.method,
        task.k,
        task.seed,
        task.options,
        task.doc_ids,
        task.created_at,
    )


def _hypothetical(task: Any, answers: Sequence[Answer]) -> Any:
    """The session of ``task`` after ``answers`` (none of them stored)."""
    return open_session(
        task.method, task.doc_ids, k=task.k, seed=task.seed, options=task.options, answers=answers
    )


def _pending_ids(session: Any) -> list[str]:
    q = session.pending
    if isinstance(q, PairQuestion):
        return [q.left, q.right]
    return [q.doc_id] if q is not None else []


def _next_body(session: Any, titles: dict[str, str]) -> Payload | None:
    """The page's view of ``session.pending`` (see :attr:`Lookahead.next`); None when done."""
    q = session.pending
    if q is None:
        return None
    p = session.progress()
    body: Payload = {
        "seq": q.seq,
        "done": False,
        "progress": {
            "judgments": p.judgments,
            "estimated_remaining": math.ceil(p.expected_remaining - 1e-9),
            "expected_remaining": p.expected_remaining,
            "max_remaining": p.max_remaining,
            "done": False,
        },
    }
    if isinstance(q, PairQuestion):
        assert isinstance(session, TopKSession)  # a pair question comes from a top-k session
        challenger = session.pending_challenger
        body["pair"] = {
            side: {"doc_id": d, "title": titles.get(d, "")}
            for side, d in (("left", q.left), ("right", q.right))
        }
        body["allowed_outcomes"] = list(session.allowed_outcomes)
        body["challenger"] = (
            "left" if challenger == q.left else "right" if challenger == q.right else None
        )
    else:
        body["document"] = {"doc_id": q.doc_id, "title": titles.get(q.doc_id, "")}
    return body
