"""Use cases of the judging loop: next question, submit a judgment, undo, result.

The judgment log is the only state (DESIGN §1): every call replays the task's live judgments
(in ``seq`` order) through :func:`labeling.session.open_session` to find the pending question.

Submitting: the answer is validated against the pending question and inserted in ONE write
transaction in which that validation holds (DESIGN §4, anchors B1):

1. (read transaction, outside the write lock) replay the live log and compare the request's
   ``seq`` with the log length:

   - ``seq`` < length: the question was already answered. The *identical* answer (same pair
     and outcome, or same document and grade; ``active_ms`` is not compared) is a retry or a
     double click: nothing is stored and the current question is returned. Anything else is
     409 with the current question;
   - ``seq`` > length: 409 with the current question (the client is ahead of the log);
   - ``seq`` == length: the session validates the answer against the pending question
     (WrongQuestion / Finished -> 409 with the current question; InvalidAnswer -> 422);

2. (write transaction) lock the task (``FOR UPDATE`` on Postgres; SQLite's ``BEGIN
   IMMEDIATE`` holds the write lock already), so a concurrent undo cannot interleave, and
   check that the log version (live count, newest id) is still the one replayed; if not,
   step 1 is redone inside this transaction;
3. ``INSERT ... ON CONFLICT DO NOTHING`` against the partial unique index on live
   ``(task_id, seq)``: the database, not a pre-check, is the arbiter. If the row was not
   inserted, the stored row decides between "retry" and 409;
4. update the task status (pending -> active -> done) and build the next question.

Splitting off step 1 keeps the replay out of the write lock (SQLite admits one writer), which
is what bounds throughput with many assessors.

Replay cache (in-process, per :class:`Database` in ``db.caches``; a bounded LRU by task id):
after a request the replayed session is kept with the log version it was built from, ``(live
count, newest live id)``, and the task's ``created_at``. The next request for the task
re-reads that version *inside its write transaction* and uses the cached session only if it is
identical; any other writer (an undo, another worker process, a concurrent request) changes
the version and forces a fresh replay of the log read in that transaction. Live judgments form
a stack (undo pops the last, ids only grow), so equal (count, newest id) means an equal log.
An entry is *taken* out of the cache by the request that uses it (never shared between
threads, so a session mutated by a failed request never goes back) and put back only after
the commit. With a hit, a submit is one write transaction (the bearer token, the task state
and log version, the insert, on a status change an update) and no replay; validation still
happens against the pending question inside that transaction. (An entry taken by a request
that then could not start, ``WouldBlock``, goes back untouched.)

The hot statements run as prepared statements on raw DB-API cursors (:mod:`app.prepared`,
``Database.raw_read/raw_write``): the same SQL and types as the Core statements they are
compiled from, without SQLAlchemy's per-call machinery. Undo, rare, stays on the ORM.

Document payloads (title/text/html) are cached per (task id, task created_at, doc id) in a
second bounded LRU (the whole pool is loaded on the first miss): documents never change while
a task that references them exists (there is no document update path; deleting a collection
deletes its tasks, and a reused SQLite rowid comes with a new ``created_at``).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from app.db import Database, WouldBlock
from app.errors import Conflict, Invalid
from app.models import Document, Judgment, Task, utcnow
from app.prepared import Prepared
from app.security import Caller, Identity, caller_identity
from app.services.tasks import check_task_access, load_task_for
from labeling.errors import Finished, WrongQuestion
from labeling.session import open_session
from labeling.types import Answer, GradeAnswer, GradeQuestion, PairAnswer, PairQuestion

Payload = dict[str, Any]


# --------------------------------------------------------------------------- replay helpers


class LogRow(Protocol):
    """What replay and the payload need from a judgment (an ORM row or a Core row)."""

    id: int
    seq: int
    left_doc: str | None
    right_doc: str | None
    outcome: str | None
    doc_id: str | None
    grade: int | None
    active_ms: int


# The hot path uses the Core tables, not the ORM entities: statements over ORM attributes go
# through the ORM's compile and bulk-DML machinery even when they return plain rows, which
# cost more than the queries themselves here.
_J = Judgment.__table__
_T = Task.__table__
_D = Document.__table__
_LOG_COLUMNS = (
    _J.c.id,
    _J.c.seq,
    _J.c.left_doc,
    _J.c.right_doc,
    _J.c.outcome,
    _J.c.doc_id,
    _J.c.grade,
    _J.c.active_ms,
)


def answer_of(row: LogRow) -> Answer:
    """The protocol answer recorded in a judgment row."""
    if row.doc_id is not None:
        return GradeAnswer(row.doc_id, int(row.grade if row.grade is not None else -1))
    return PairAnswer(row.left_doc or "", row.right_doc or "", row.outcome)  # type: ignore[arg-type]


# Statements of the hot path are built once (building them per request cost as much as
# running them on this machine).
_LIVE_LOG = (
    select(*_LOG_COLUMNS)
    .where(_J.c.task_id == bindparam("task_id"), _J.c.undone.is_(False))
    .order_by(_J.c.seq)
)
_DOCUMENT = select(_D.c.external_id, _D.c.title, _D.c.text, _D.c.html).where(
    _D.c.query_id == bindparam("query_id"), _D.c.external_id == bindparam("doc_id")
)
#: Every column of a judgment row bound by name (a prepared statement has fixed columns; the
#: unused ones of a pair or a grade are bound to NULL).
_INSERT_VALUES = {
    name: bindparam(name)
    for name in (
        "task_id",
        "seq",
        "left_doc",
        "right_doc",
        "outcome",
        "doc_id",
        "grade",
        "active_ms",
        "created_at",
        "undone",
    )
}
_INSERT = {
    name: dialect.insert(_J).values(**_INSERT_VALUES).on_conflict_do_nothing().returning(_J.c.id)
    for name, dialect in (("postgresql", postgresql), ("sqlite", sqlite))
}


def live_judgments(s: Session, task_id: int) -> list[Any]:
    """The task's live log in seq order, as light Core rows (replay needs no ORM objects:
    building ~100 ORM instances per request was the largest cost of a submit)."""
    return list(s.execute(_LIVE_LOG, {"task_id": task_id}))


def replay_task(task: Any, rows: Sequence[LogRow]) -> Any:
    """Rebuild the protocol session of ``task`` from its live log."""
    return open_session(
        task.method,
        task.doc_ids,
        k=task.k,
        seed=task.seed,
        options=task.options,
        answers=[answer_of(r) for r in rows],
    )


def _doc_payload(doc: Any, doc_id: str) -> Payload:
    """A document as the client sees it; absent text/html are left out (not null)."""
    if doc is None:  # cannot happen for a consistent database; never fail the loop for it
        return {"doc_id": doc_id, "title": doc_id}
    out: Payload = {"doc_id": doc_id, "title": doc.title}
    if doc.text is not None:
        out["text"] = doc.text
    if doc.html is not None:
        out["html"] = doc.html
    return out


class _LRU:
    """A small thread-safe LRU map (bounded: at most ``size`` entries)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def take(self, key: Any) -> Any:
        """Remove and return the entry (None if absent): the caller owns it exclusively."""
        with self._lock:
            return self._data.pop(key, None)

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def __contains__(self, key: Any) -> bool:
        with self._lock:
            return key in self._data

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


#: A submit runs on the event loop (``nowait``) only if the previous one on its session took
#: no more CPU than this: typical tasks take 0.1-0.5 ms; what takes longer goes to a thread.
NOWAIT_MAX_SECONDS = 0.002

#: Pools up to this size are loaded whole on the first miss.
_PREFETCH_MAX = 256


class _Caches:
    """The judging loop's caches of one :class:`Database` (``db.caches``)."""

    def __init__(self) -> None:
        #: Replayed sessions by task id (one entry per recently judged task).
        self.replay = _LRU(256)
        #: Document payloads by (task id, task created_at, doc id).
        self.docs = _LRU(4096)
        self._sql: _Sql | None = None

    def sql(self, db: Database) -> _Sql:
        """The prepared statements (compiled on first use; a race compiles them twice)."""
        if self._sql is None:
            self._sql = _Sql(db)
        return self._sql


def _caches(db: Database) -> _Caches:
    caches = db.caches.get(__name__)
    if caches is None:
        caches = db.caches.setdefault(__name__, _Caches())
    return caches


def clear_caches(db: Database) -> None:
    """Forget cached sessions and documents (tests; never needed for correctness)."""
    db.caches.pop(__name__, None)


Fetch = Callable[[Any, list[str]], dict[str, Any]]


def _fetch_with_cursor(sql: _Sql, cursor: Any) -> Fetch:
    """Documents by external id through a raw cursor (one prepared statement per document:
    a pool is fetched once per task and process, then served from the cache)."""

    def fetch(task: Any, ids: list[str]) -> dict[str, Any]:
        found = {}
        for doc_id in ids:
            row = sql.document.one_or_none(cursor, {"query_id": task.query_id, "doc_id": doc_id})
            if row is not None:
                found[doc_id] = row
        return found

    return fetch


def _fetch_in_own_read(db: Database) -> Fetch:
    """Like :func:`_fetch_with_cursor`, in a read transaction of its own opened only if a
    document is not cached (after a submit's commit, outside the write lock)."""

    def fetch(task: Any, ids: list[str]) -> dict[str, Any]:
        with db.raw_read() as cursor:
            return _fetch_with_cursor(_caches(db).sql(db), cursor)(task, ids)

    return fetch


def _documents(fetch: Fetch, cache: _LRU, task: Any, ids: Sequence[str]) -> dict[str, Payload]:
    """Payloads of the documents ``ids`` of ``task``'s query (cached in ``cache``; read
    with ``fetch``)."""
    out: dict[str, Payload] = {}
    missing: list[str] = []
    for doc_id in ids:
        cached = cache.get((task.id, task.created_at, doc_id))
        if cached is None:
            missing.append(doc_id)
        else:
            out[doc_id] = dict(cached)  # a copy: callers may decorate the payload
    if missing:
        # Fetch the whole pool the first time (once per task instead of once per question);
        # very large pools only what is asked for.
        pool = list(task.doc_ids or ())
        if len(pool) <= _PREFETCH_MAX:
            key = (task.id, task.created_at)
            missing = list(dict.fromkeys([*missing, *(d for d in pool if (*key, d) not in cache)]))
        found = fetch(task, missing)
        for doc_id in missing:
            doc = found.get(doc_id)
            payload = _doc_payload(doc, doc_id)
            if doc_id in ids:
                out[doc_id] = payload
            if doc is not None:
                cache.put((task.id, task.created_at, doc_id), dict(payload))
    return out


def _payload(
    task: Any,
    session: Any,
    active_ms: int,
    documents: Callable[[Sequence[str]], dict[str, Payload]],
) -> Payload:
    """The body of ``/next`` (and of a successful submit/undo); ``documents(ids)`` gives the
    document payloads. ``challenger`` (topk) is the side, ``"left"`` or ``"right"``, showing
    Step 2's new document (the stream item "not relevant" refers to;
    ``TopKSession.pending_challenger``), null otherwise; clients may ignore it."""
    p = session.progress()
    progress = {
        "judgments": p.judgments,
        "estimated_remaining": math.ceil(p.expected_remaining - 1e-9) if not p.done else 0,
        "expected_remaining": p.expected_remaining,
        "max_remaining": p.max_remaining,
        "done": p.done,
    }
    body: Payload = {
        "task_id": task.id,
        "method": task.method,
        "done": bool(session.done),
        "progress": progress,
        "active_ms": active_ms,
    }
    q = session.pending
    if isinstance(q, PairQuestion):
        docs = documents([q.left, q.right])
        body["seq"] = q.seq
        body["pair"] = {"left": docs[q.left], "right": docs[q.right]}
        body["allowed_outcomes"] = list(session.allowed_outcomes)
        challenger = session.pending_challenger
        body["challenger"] = (
            "left" if challenger == q.left else "right" if challenger == q.right else None
        )
    elif isinstance(q, GradeQuestion):
        body["seq"] = q.seq
        body["document"] = documents([q.doc_id])[q.doc_id]
    return body


# --------------------------------------------------------------------------- use cases


_TASK_ROW = select(
    _T.c.id,
    _T.c.query_id,
    _T.c.assessor_id,
    _T.c.method,
    _T.c.k,
    _T.c.seed,
    _T.c.options,
    _T.c.doc_ids,
    _T.c.status,
    _T.c.created_at,
).where(_T.c.id == bindparam("task_id"))
_TASK_STATE_FOR_UPDATE = (
    select(_T.c.status, _T.c.assessor_id, _T.c.created_at)
    .where(_T.c.id == bindparam("task_id"))
    .with_for_update()
)
_LIVE_VERSION = select(
    func.count().label("live"), func.coalesce(func.max(_J.c.id), 0).label("newest")
).where(_J.c.task_id == bindparam("task_id"), _J.c.undone.is_(False))
# SQLite: BEGIN IMMEDIATE already serialises writers, so the task state and the log version
# come from one statement (one round trip less inside the write lock). On Postgres the version
# must be read by a statement that starts after the row lock is held (READ COMMITTED takes a
# snapshot per statement), so there it stays two statements.
_STATE_AND_VERSION = select(
    _T.c.status,
    _T.c.assessor_id,
    _T.c.created_at,
    _LIVE_VERSION.with_only_columns(func.count()).scalar_subquery().label("live"),
    _LIVE_VERSION.with_only_columns(func.coalesce(func.max(_J.c.id), 0))
    .scalar_subquery()
    .label("newest"),
).where(_T.c.id == bindparam("task_id"))
_MARK = {
    "active": update(_T)
    .where(_T.c.id == bindparam("task_id"))
    .values(status="active", started_at=bindparam("now")),
    "done": update(_T)
    .where(_T.c.id == bindparam("task_id"))
    .values(status="done", finished_at=bindparam("now")),
    "active+done": update(_T)
    .where(_T.c.id == bindparam("task_id"))
    .values(status="done", started_at=bindparam("now"), finished_at=bindparam("now")),
}


class _Sql:
    """The judging loop's statements, prepared for one database's dialect (app.prepared)."""

    def __init__(self, db: Database) -> None:
        dialect = db.engine.dialect
        self.task = Prepared(_TASK_ROW, dialect)
        self.live_log = Prepared(_LIVE_LOG, dialect)
        self.document = Prepared(_DOCUMENT, dialect)
        self.state_and_version = Prepared(_STATE_AND_VERSION, dialect)
        self.state_for_update = Prepared(_TASK_STATE_FOR_UPDATE, dialect)
        self.live_version = Prepared(_LIVE_VERSION, dialect)
        self.insert = Prepared(_INSERT[db.dialect], dialect)
        self.mark = {name: Prepared(stmt, dialect) for name, stmt in _MARK.items()}


@dataclass(frozen=True, slots=True)
class _TaskConfig:
    """What never changes in a task (its protocol config; status and assessor may)."""

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
    """A replayed session and the log version it was built from (see the module docstring)."""

    task: _TaskConfig
    session: Any
    version: tuple[int, int]
    active_ms: int
    #: CPU seconds the last submit on this session took (decides whether the next one may run
    #: on the event loop: ``nowait``).
    cost: float = 0.0

    def matches(self, created_at: Any, version: tuple[int, int]) -> bool:
        return self.task.created_at == created_at and self.version == version


def _replayed(task: Any, rows: Sequence[LogRow]) -> _Replayed:
    """``task`` (an ORM Task or a row) replayed from its live log ``rows``."""
    config = _TaskConfig(
        task.id,
        task.query_id,
        task.method,
        task.k,
        task.seed,
        task.options,
        task.doc_ids,
        task.created_at,
    )
    return _Replayed(
        config, replay_task(task, rows), _log_version(rows), sum(r.active_ms for r in rows)
    )


class _Tx:
    """One transaction of the judging loop: a raw cursor, the prepared statements and the
    document cache; what the helpers below need to read the task, its log and documents."""

    __slots__ = ("cache", "cursor", "sql")

    def __init__(self, db: Database, cursor: Any) -> None:
        caches = _caches(db)
        self.cursor = cursor
        self.sql = caches.sql(db)
        self.cache = caches.docs

    def task_for(self, user: Identity, task_id: int, *, judge: bool = False) -> Any:
        """The task's config and state, if ``user`` may act on it (404 / 403); the rules of
        :func:`app.services.tasks.load_task_for`."""
        task = self.sql.task.one_or_none(self.cursor, {"task_id": task_id})
        check_task_access(task, user, task_id, judge=judge)
        return task

    def replay(self, task: Any) -> _Replayed:
        """Read the task's live log and replay it."""
        rows = self.sql.live_log.rows(self.cursor, {"task_id": task.id})
        return _replayed(task, rows)

    def body(self, r: _Replayed) -> Payload:
        fetch = _fetch_with_cursor(self.sql, self.cursor)
        return _payload(
            r.task, r.session, r.active_ms, lambda ids: _documents(fetch, self.cache, r.task, ids)
        )

    def conflict(self, message: str, r: _Replayed) -> Conflict:
        return Conflict(message, extra={"current": self.body(r)})


def next_question(*, db: Database, user: Caller, task_id: int) -> Payload:
    """The pending question of a task (or done), rebuilt from its log."""
    with db.raw_read() as cursor:
        tx = _Tx(db, cursor)
        task = tx.task_for(caller_identity(db, cursor, user, writable=False), task_id)
        replayed = tx.replay(task)
        body = tx.body(replayed)
    _caches(db).replay.put(task_id, replayed)  # warms the cache for the submit that follows
    return body


def _answer_from_request(task: Any, data: dict[str, Any]) -> Answer:
    if task.method == "topk":
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


def _log_version(rows: Sequence[Any]) -> tuple[int, int]:
    """(number of live judgments, id of the newest): changes with every insert and undo, and
    an undo followed by a new answer gets a new id, so equal versions mean an equal log."""
    return len(rows), max((r.id for r in rows), default=0)


def _apply(tx: _Tx, r: _Replayed, seq: int, answer: Answer) -> bool:
    """Check ``answer`` for question ``seq`` against the replayed log and submit it to
    ``r.session``. Returns False for an identical retry (nothing to store); raises 409 (with
    the current question) or the labeling core's InvalidAnswer (422) otherwise. On any error
    the session is unchanged (the labeling core's contract)."""
    answers = r.session.answers
    if seq < len(answers):
        if answers[seq] == answer:
            return False
        raise tx.conflict(f"question {seq} was already answered differently", r)
    if seq > len(answers):
        raise tx.conflict(
            f"question {seq} is not open yet; the current question is {len(answers)}", r
        )
    try:
        r.session.submit(answer)
    except (WrongQuestion, Finished) as exc:
        raise tx.conflict(str(exc), r) from exc
    return True


def _row_values(task_id: int, seq: int, answer: Answer, active_ms: int, now: Any) -> Payload:
    values: Payload = {
        "task_id": task_id,
        "seq": seq,
        "left_doc": None,
        "right_doc": None,
        "outcome": None,
        "doc_id": None,
        "grade": None,
        "active_ms": active_ms,
        "created_at": now,
        "undone": False,
    }
    if isinstance(answer, PairAnswer):
        values |= {"left_doc": answer.left, "right_doc": answer.right, "outcome": answer.outcome}
    else:
        values |= {"doc_id": answer.doc_id, "grade": answer.grade}
    return values


def submit_judgment(
    *, db: Database, user: Caller, task_id: int, data: dict[str, Any], nowait: bool = False
) -> Payload:
    """Record one judgment (see the module docstring for the exact semantics).

    Without a cached session, the log is read, replayed and the answer validated in a read
    transaction first (phase 1), so the replay stays out of the write lock. The write
    transaction then locks the task, reads the log version and, if it differs from the
    replayed (or cached) one, re-reads and replays the log inside the transaction before
    validating: the outcome is the same as if everything had happened under the lock.

    A bearer-token ``user`` is checked in the first transaction (with a cached session, the
    write transaction is the only one: token, task state, log version, insert).

    ``nowait=True`` (app.hotpath, on the event loop thread): only the short path is taken, a
    cached session whose last submit took at most :data:`NOWAIT_MAX_SECONDS` (huge pools or
    heaps make the protocol step itself slower) and a write lock free at once
    (:meth:`Database.raw_write_nowait`); otherwise :class:`~app.db.WouldBlock` is raised with
    nothing done, and the caller makes the ordinary call from a worker thread.
    """
    seq = int(data["seq"])
    active_ms = int(data.get("active_ms") or 0)
    caches = _caches(db)
    replayed: _Replayed | None = caches.replay.take(task_id)
    if nowait and (replayed is None or replayed.cost > NOWAIT_MAX_SECONDS):
        if replayed is not None:
            caches.replay.put(task_id, replayed)
        raise WouldBlock(busy=False)
    started = time.thread_time()  # CPU time: waiting for a lock must not count as cost
    answer: Answer | None = None
    applied = False
    who: Identity | None = None
    if replayed is None:
        with db.raw_read() as cursor:
            tx = _Tx(db, cursor)
            who = caller_identity(db, cursor, user, writable=False)
            task = tx.task_for(who, task_id, judge=True)
            if task.status == "cancelled":
                raise Conflict(f"task {task_id} is cancelled")
            answer = _answer_from_request(task, data)
            replayed = tx.replay(task)
            if not _apply(tx, replayed, seq, answer):  # identical retry: store nothing
                body = tx.body(replayed)
                caches.replay.put(task_id, replayed)
                return body
            applied = True
    config = replayed.task
    with ExitStack() as transaction:
        try:
            cursor = transaction.enter_context(db.raw_write_nowait() if nowait else db.raw_write())
        except WouldBlock:
            caches.replay.put(task_id, replayed)  # untouched: the transaction never began
            raise
        tx = _Tx(db, cursor)
        sql = tx.sql
        if who is None:
            who = caller_identity(db, cursor, user, writable=True)
        if db.is_sqlite:
            state = sql.state_and_version.one_or_none(cursor, {"task_id": task_id})
            version = (state.live, state.newest) if state is not None else (0, 0)
        else:
            state = sql.state_for_update.one_or_none(cursor, {"task_id": task_id})
            live = sql.live_version.one_or_none(cursor, {"task_id": task_id})
            version = (live.live, live.newest)
        check_task_access(state, who, task_id, judge=True)
        if state.status == "cancelled":
            raise Conflict(f"task {task_id} is cancelled")
        if answer is None:
            answer = _answer_from_request(config, data)
        if not replayed.matches(state.created_at, version):
            # Someone changed the log since it was replayed (or the cached entry is for
            # another incarnation of this id): replay the log as it is now, under the lock.
            replayed = tx.replay(tx.task_for(who, task_id, judge=True))
            config, applied = replayed.task, False
            answer = _answer_from_request(config, data)
        if not applied and not _apply(tx, replayed, seq, answer):
            body = tx.body(replayed)
            caches.replay.put(task_id, replayed)
            return body
        now = utcnow()
        inserted = sql.insert.one_or_none(cursor, _row_values(task_id, seq, answer, active_ms, now))
        if inserted is None:
            # Lost a race the row lock should have prevented; the stored row decides.
            current = tx.replay(tx.task_for(who, task_id, judge=True))
            stored = current.session.answers
            if seq < len(stored) and stored[seq] == answer:
                return tx.body(current)
            raise tx.conflict(f"question {seq} was answered concurrently", current)
        replayed.version = (version[0] + 1, inserted.id)
        replayed.active_ms += active_ms
        mark = "active" if state.status == "pending" else ""
        if replayed.session.done:
            mark = "active+done" if mark else "done"
        if mark:
            sql.mark[mark].execute(cursor, {"task_id": task_id, "now": now})
    # After the commit: the documents come from the cache (or one read outside the lock).
    fetch = _fetch_in_own_read(db)
    body = _payload(
        replayed.task,
        replayed.session,
        replayed.active_ms,
        lambda ids: _documents(fetch, caches.docs, replayed.task, ids),
    )
    replayed.cost = time.thread_time() - started
    caches.replay.put(task_id, replayed)
    return body


def undo_judgment(*, db: Database, user: Caller, task_id: int) -> Payload:
    """Revert the last live judgment (kept in the log, marked undone); 409 if there is none."""
    _caches(db).replay.take(task_id)  # not needed for correctness (versions differ); frees it
    with db.write() as s:
        # The token is checked, and documents are read, in this transaction on its DB-API
        # connection (the judging loop's prepared statements).
        tx = _Tx(db, s.connection().connection.driver_connection.cursor())
        user = caller_identity(db, tx.cursor, user, writable=True)
        task = load_task_for(s, user, task_id, lock=True, judge=True)
        if task.status == "cancelled":
            raise Conflict(f"task {task_id} is cancelled")
        rows = live_judgments(s, task.id)
        if not rows:
            raise Conflict("nothing to undo", extra={"current": tx.body(_replayed(task, rows))})
        last = rows[-1]
        now = utcnow()
        changed = s.execute(
            update(Judgment)
            .where(
                Judgment.task_id == task.id,
                Judgment.seq == last.seq,
                Judgment.undone.is_(False),
            )
            .values(undone=True, undone_at=now)
            .execution_options(synchronize_session=False)
        ).rowcount
        if changed != 1:
            raise Conflict("the last judgment was undone concurrently")
        if task.status == "done":
            task.status = "active"
            task.finished_at = None
        return tx.body(_replayed(task, rows[:-1]))
