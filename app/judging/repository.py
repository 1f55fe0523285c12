"""The judging loop's SQL: tasks, the judgment log and documents, as prepared statements.

Every statement is written once with SQLAlchemy Core (the same tables as the models, so a
schema change cannot drift from it) and compiled once per database into a
:class:`~app.kernel.prepared.Prepared` statement that runs on the raw DB-API cursor of a transaction
(``Database.raw_read`` / ``raw_write``). :class:`JudgmentStore` gives the use cases of
:mod:`app.judging.service` one named method per statement. On Postgres,
:func:`store_if_current` runs the common submit as one message on an asynchronous connection
(``Database.loop_connections``), its statements prepared with SQL ``PREPARE`` on the
connection.

The judgment log is a stack per task: live rows (``undone`` false) have contiguous ``seq``
from 0, an undo marks the newest live row undone, and ids only grow. So the pair
``(live count, newest live id)`` (:data:`LogVersion`) identifies a task's live log: any insert
or undo changes it. The partial unique index on live ``(task_id, seq)`` makes the database the
arbiter between two answers to one question (``INSERT ... ON CONFLICT DO NOTHING``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from sqlalchemy import (
    JSON,
    Select,
    String,
    Table,
    any_,
    bindparam,
    case,
    exists,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from app.auth.tokens import (
    TOUCH_DUE_TOKEN,
    TOUCH_INTERVAL,
    Caller,
    Identity,
    caller_identity,
    token_acts_for,
)
from app.kernel.caches import Slot
from app.kernel.db import Database, LoopConnection
from app.kernel.models import Document, Judgment, Query, Task
from app.kernel.prepared import Prepared, native
from app.machine.judges import prompt_hash_of
from labeling.protocol.types import Answer, BrokenAnswer, LogEntry, MachineAnswer, PairAnswer

#: ``(number of live judgments, id of the newest live judgment)`` of a task.
LogVersion = tuple[int, int]


class LogRow(Protocol):
    """A judgment as replay and the payloads read it (a prepared row or a Core row)."""

    id: int
    seq: int
    left_doc: str | None
    right_doc: str | None
    outcome: str | None
    doc_id: str | None
    grade: int | None
    active_ms: int
    reason: str | None
    source: str
    machine_version: str | None
    probability: float | None


# Core tables, not ORM entities: statements over ORM attributes go through the ORM's compile
# and DML machinery even when they return plain rows.
J = Judgment.__table__
T = Task.__table__
D = Document.__table__
Q = Query.__table__
# Declarative classes type __table__ as a FromClause; these are Tables, as update() needs.
assert isinstance(J, Table) and isinstance(T, Table) and isinstance(D, Table)

#: The columns replay and the payloads read, in seq order.
LIVE_LOG = (
    select(
        J.c.id,
        J.c.seq,
        J.c.left_doc,
        J.c.right_doc,
        J.c.outcome,
        J.c.doc_id,
        J.c.grade,
        J.c.active_ms,
        J.c.reason,
        J.c.source,
        J.c.machine_version,
        native(J.c.probability),
    )
    .where(J.c.task_id == bindparam("task_id"), J.c.undone.is_(False))
    .order_by(J.c.seq)
)
#: The live log with what the review list shows besides replay's columns.
REVIEW_LOG = LIVE_LOG.add_columns(J.c.comment, J.c.created_at)
TASK_ROW = select(
    T.c.id,
    T.c.collection_id,
    T.c.query_id,
    T.c.assessor_id,
    T.c.method,
    T.c.k,
    T.c.seed,
    T.c.options,
    T.c.doc_ids,
    T.c.status,
    T.c.created_at,
).where(T.c.id == bindparam("task_id"))
#: Documents of a query by a list of external ids, in one statement: a task's first question
#: reads its whole pool, and one statement per document made that a round trip per document
#: on Postgres (docs/architecture.md#postgres).
#: The list travels as one parameter: an array on Postgres, a JSON array unpacked by
#: ``json_each`` on SQLite (a prepared statement has no expanding ``IN``).
DOCUMENTS = {
    "postgresql": select(D.c.external_id, D.c.title, D.c.text, D.c.html).where(
        D.c.query_id == bindparam("query_id"),
        D.c.external_id == any_(bindparam("doc_ids", type_=postgresql.ARRAY(String))),
    ),
    "sqlite": select(D.c.external_id, D.c.title, D.c.text, D.c.html).where(
        D.c.query_id == bindparam("query_id"),
        D.c.external_id.in_(
            select(func.json_each(bindparam("doc_ids", type_=JSON)).table_valued("value").c.value)
        ),
    ),
}
QUERY_TEXT = select(Q.c.title, Q.c.description, Q.c.collection_id).where(
    Q.c.id == bindparam("query_id")
)
LIVE_VERSION = select(
    func.count().label("live"), func.coalesce(func.max(J.c.id), 0).label("newest")
).where(J.c.task_id == bindparam("task_id"), J.c.undone.is_(False))
TASK_STATE_FOR_UPDATE = (
    select(T.c.status, T.c.assessor_id, T.c.created_at)
    .where(T.c.id == bindparam("task_id"))
    .with_for_update()
)
# SQLite: BEGIN IMMEDIATE already serialises writers, so the task state and the log version
# come from one statement (one round trip less inside the write lock). On Postgres the version
# must be read by a statement that starts after the row lock is held (READ COMMITTED takes a
# snapshot per statement), so there it is two statements.
STATE_AND_VERSION = select(
    T.c.status,
    T.c.assessor_id,
    T.c.created_at,
    LIVE_VERSION.with_only_columns(func.count()).scalar_subquery().label("live"),
    LIVE_VERSION.with_only_columns(func.coalesce(func.max(J.c.id), 0))
    .scalar_subquery()
    .label("newest"),
).where(T.c.id == bindparam("task_id"))
#: Postgres with ``HEAPJUDGE_POSTGRES_ASYNC_COMMIT=1`` (off by default, so every acknowledged
#: judgment is on disk): this transaction's commit does not wait for its WAL record to reach
#: the disk, the durability of SQLite's ``synchronous=NORMAL`` in WAL mode. A crash of the
#: database server (not of the app) can then lose the judgments of its last fraction of a
#: second (``wal_writer_delay``), never corrupt or reorder the log; a lost judgment is the
#: pending question again. The flush is the slowest step of a judgment.
ASYNCHRONOUS_COMMIT = "SET LOCAL synchronous_commit TO OFF"
#: Every column of a judgment row bound by name (a prepared statement has fixed columns; the
#: unused ones of a pair or a grade are bound to NULL).
_ROW_COLUMNS = (
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
    "reason",
    "comment",
    "source",
    "machine_version",
    "prompt_hash",
    "probability",
)


def _insert(columns: Sequence[str]) -> dict[str, Any]:
    """Per dialect: insert a judgment row with ``columns`` bound by name; nothing on a
    conflict with the live ``(task_id, seq)`` (the arbiter between two answers), returning
    the new id."""
    return {
        name: dialect.insert(J)
        .values(**{c: bindparam(c) for c in columns})
        .on_conflict_do_nothing()
        .returning(J.c.id)
        for name, dialect in (("postgresql", postgresql), ("sqlite", sqlite))
    }


INSERT = _insert(_ROW_COLUMNS)
#: A judgment given by another than the task's assessor (a second opinion): + ``answered_by``.
INSERT_ANSWERED_BY = _insert((*_ROW_COLUMNS, "answered_by"))
#: The status change of a cached session's submit, sent before it is known whether the judgment
#: is stored (:func:`store_if_current`): ``"start"`` for an answer to an empty log (pending ->
#: active), ``"finish"`` for the last answer (-> done, and started now if it was pending).
MARK_IF = {
    "start": update(T)
    .where(T.c.id == bindparam("task_id"), T.c.status == "pending")
    .values(status="active", started_at=bindparam("now")),
    "finish": update(T)
    .where(T.c.id == bindparam("task_id"))
    .values(
        status="done",
        finished_at=bindparam("now"),
        started_at=case(
            (T.c.status == "pending", bindparam("now", type_=T.c.started_at.type)),
            else_=T.c.started_at,
        ),
    ),
}


def store_if_current_statement(caller: str, mark: str | None) -> Select[Any]:
    """Postgres: ONE statement that stores a judgment answered from a cached session, and
    only if everything the general path checks still holds (:func:`store_if_current`):

    - the task is the incarnation the session was replayed for (``task_created_at``), not
      cancelled (nor done), and the caller is its assessor: for ``caller`` ``"token"`` the
      token bound as ``digest`` is usable and its user's (:func:`app.auth.tokens.token_acts_for`),
      for ``"user"`` the assessor is ``user_id`` (a browser session, checked before);
    - its live log is still at the session's version (``live``, ``newest``);
    - no live judgment ``seq`` exists (``ON CONFLICT DO NOTHING`` on the unique index).

    Data-modifying CTEs do the rest in the same statement: the status change
    :data:`MARK_IF` ``[mark]`` if the row was inserted, and for a token its ``last_used_at``
    refresh when due (``app.auth.tokens``' rule; whether or not the row was inserted, as the
    general path's token check does). Returns the new id, or no row."""
    assert isinstance(J, Table)  # as at the top: module-level narrowing does not reach here
    acts = (
        token_acts_for(T.c.assessor_id)
        if caller == "token"
        else T.c.assessor_id == bindparam("user_id", type_=T.c.assessor_id.type)
    )
    current = (
        exists().where(
            T.c.id == bindparam("task_id"),
            T.c.created_at == bindparam("task_created_at", type_=T.c.created_at.type),
            or_(T.c.status == "pending", T.c.status == "active"),
            acts,
        ),
        LIVE_VERSION.with_only_columns(func.count()).scalar_subquery() == bindparam("live"),
        LIVE_VERSION.with_only_columns(func.coalesce(func.max(J.c.id), 0)).scalar_subquery()
        == bindparam("newest"),
    )
    row = select(*(bindparam(c, type_=J.c[c].type) for c in _ROW_COLUMNS)).where(*current)
    inserted = (
        postgresql.insert(J)
        .from_select(list(_ROW_COLUMNS), row)
        .on_conflict_do_nothing()
        .returning(J.c.id)
        .cte("inserted")
    )
    stored = select(inserted.c.id)
    if mark is not None:
        marked = MARK_IF[mark].where(exists(select(inserted.c.id))).cte("marked")
        stored = stored.add_cte(marked)
    if caller == "token":
        stored = stored.add_cte(TOUCH_DUE_TOKEN.cte("touched"))
    return stored


#: :data:`ASYNCHRONOUS_COMMIT` for a pipeline's implicit transaction, where ``SET LOCAL``
#: works but warns that it is outside a transaction block.
ASYNCHRONOUS_COMMIT_IMPLICIT = "SELECT set_config('synchronous_commit', 'off', true)"


#: Status changes of a submit: pending -> active on the first answer, -> done on the last.
MARK = {
    "active": update(T)
    .where(T.c.id == bindparam("task_id"))
    .values(status="active", started_at=bindparam("now")),
    "done": update(T)
    .where(T.c.id == bindparam("task_id"))
    .values(status="done", finished_at=bindparam("now")),
    "active+done": update(T)
    .where(T.c.id == bindparam("task_id"))
    .values(status="done", started_at=bindparam("now"), finished_at=bindparam("now")),
}
UNDO = (
    update(J)
    .where(J.c.task_id == bindparam("task_id"), J.c.seq == bindparam("seq"), J.c.undone.is_(False))
    .values(undone=True, undone_at=bindparam("now"))
)
#: Undo back to a point: every live judgment from ``seq`` on (the newest first or not: one
#: statement, so the log is never seen half undone).
UNDO_FROM = (
    update(J)
    .where(J.c.task_id == bindparam("task_id"), J.c.seq >= bindparam("seq"), J.c.undone.is_(False))
    .values(undone=True, undone_at=bindparam("now"))
)
REOPEN = (
    update(T)
    .where(T.c.id == bindparam("task_id"), T.c.status == "done")
    .values(status="active", finished_at=None)
)


def row_values(
    task_id: int,
    seq: int,
    answer: LogEntry,
    active_ms: int,
    now: datetime,
    comment: str | None = None,
) -> dict[str, Any]:
    """The bound values of :data:`INSERT` for ``answer`` to question ``seq`` (a broken
    document: outcome ``broken``, ``doc_id``, ``reason``, and the pair shown for topk)."""
    values: dict[str, Any] = {
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
        "reason": None,
        "comment": comment,
        "source": "person",
        "machine_version": None,
        "prompt_hash": None,
        "probability": None,
    }
    if isinstance(answer, PairAnswer):
        values |= {"left_doc": answer.left, "right_doc": answer.right, "outcome": answer.outcome}
    elif isinstance(answer, MachineAnswer):
        values |= {
            "left_doc": answer.left,
            "right_doc": answer.right,
            "outcome": answer.outcome,
            "source": "machine",
            "machine_version": answer.version,
            "prompt_hash": prompt_hash_of(answer.version),
            "probability": answer.probability,
        }
    elif isinstance(answer, BrokenAnswer):
        values |= {
            "left_doc": answer.left,
            "right_doc": answer.right,
            "outcome": "broken",
            "doc_id": answer.doc_id,
            "reason": answer.reason,
        }
    else:
        values |= {"doc_id": answer.doc_id, "grade": answer.grade}
    return values


def live_judgments(tx: Session, task_id: int) -> list[Any]:
    """The task's live log in seq order in an ORM transaction (for the read-only services:
    results, exports, pages), as light Core rows: replay needs no ORM objects."""
    return list(tx.execute(LIVE_LOG, {"task_id": task_id}))


def log_version(rows: Sequence[Any]) -> LogVersion:
    """The :data:`LogVersion` of a live log read in full."""
    return len(rows), max((r.id for r in rows), default=0)


class _Statements:
    """The statements above compiled for one database's dialect."""

    def __init__(self, db: Database) -> None:
        dialect = db.engine.dialect
        self.task = Prepared(TASK_ROW, dialect)
        self.task_for_update = Prepared(TASK_ROW.with_for_update(), dialect)
        self.live_log = Prepared(LIVE_LOG, dialect)
        self.review_log = Prepared(REVIEW_LOG, dialect)
        self.documents = Prepared(DOCUMENTS[db.dialect], dialect)
        self.query_text = Prepared(QUERY_TEXT, dialect)
        self.state_and_version = Prepared(STATE_AND_VERSION, dialect)
        self.state_for_update = Prepared(TASK_STATE_FOR_UPDATE, dialect)
        self.live_version = Prepared(LIVE_VERSION, dialect)
        self.insert = Prepared(INSERT[db.dialect], dialect)
        self.insert_answered_by = Prepared(INSERT_ANSWERED_BY[db.dialect], dialect)
        self.mark = {name: Prepared(stmt, dialect) for name, stmt in MARK.items()}
        self.undo = Prepared(UNDO, dialect)
        self.undo_from = Prepared(UNDO_FROM, dialect)
        self.reopen = Prepared(REOPEN, dialect)
        if db.dialect == "postgresql":
            self.store_if_current = {
                (caller, mark): Prepared(store_if_current_statement(caller, mark), dialect)
                for caller in ("token", "user")
                for mark in (None, "start", "finish")
            }


#: The judging loop's prepared statements of every :class:`Database` (two threads may both
#: compile them; either result is the same).
_STATEMENTS: Slot[_Statements] = Slot("judging statements", _Statements)


class QueryText(NamedTuple):
    """What the judging pages show of a task's query."""

    title: str
    description: str
    collection_id: int


class JudgmentStore:
    """The judging loop's reads and writes in one transaction (``cursor``, from
    ``db.raw_read()`` or ``db.raw_write()``)."""

    __slots__ = ("_sql", "async_commit", "cursor", "db", "is_sqlite")

    def __init__(self, db: Database, cursor: Any) -> None:
        self.db = db
        self._sql = _STATEMENTS.of(db)
        self.cursor = cursor
        self.is_sqlite = db.is_sqlite
        self.async_commit = db.settings.postgres_async_commit

    def task(self, task_id: int, *, lock: bool = False) -> Any:
        """The task's config and state (None if there is no such task); ``lock`` takes its
        row lock on Postgres (SQLite's write transaction holds the database lock already)."""
        stmt = self._sql.task_for_update if lock else self._sql.task
        return stmt.one_or_none(self.cursor, {"task_id": task_id})

    def query_text(self, query_id: int) -> QueryText:
        """A query's title and description (empty strings for what it lacks) and collection
        (0 for a query that does not exist)."""
        row = self._sql.query_text.one_or_none(self.cursor, {"query_id": query_id})
        if row is None:
            return QueryText("", "", 0)
        return QueryText(str(row.title or ""), str(row.description or ""), int(row.collection_id))

    def live_log(self, task_id: int) -> list[LogRow]:
        """The task's live judgments in seq order."""
        return self._sql.live_log.rows(self.cursor, {"task_id": task_id})

    def review_log(self, task_id: int) -> list[Any]:
        """The task's live judgments in seq order with their comment and time stored."""
        return self._sql.review_log.rows(self.cursor, {"task_id": task_id})

    def locked_state(
        self, task_id: int, caller: Caller | Identity
    ) -> tuple[Any, LogVersion, Identity]:
        """The task's status, assessor and ``created_at`` (None if missing) with its row
        locked, the log version read after the lock was taken, and the caller's identity
        (``caller`` itself when already known, else read on this store's cursor:
        :func:`app.auth.tokens.caller_identity`, 401 for a refused token).

        On Postgres each statement is a network round trip, so the lock, the version and the
        token's lookup go in one: psycopg's pipeline mode queues the first two (on cursors of
        their own) and sends them with the lookup, whose result the driver waits for. The
        server still runs them one after the other, so the version is read after the lock is
        held."""
        params = {"task_id": task_id}
        if self.is_sqlite:
            who = (
                caller
                if isinstance(caller, Identity)
                else caller_identity(self.db, self.cursor, caller, writable=True)
            )
            state = self._sql.state_and_version.one_or_none(self.cursor, params)
            return state, ((state.live, state.newest) if state is not None else (0, 0)), who
        conn = self.cursor.connection
        with conn.pipeline(), conn.cursor() as locked, conn.cursor() as counted:
            if self.async_commit:
                locked.execute(ASYNCHRONOUS_COMMIT)
            self._sql.state_for_update.send(locked, params)
            self._sql.live_version.send(counted, params)
            who = (
                caller
                if isinstance(caller, Identity)
                else caller_identity(self.db, self.cursor, caller, writable=True)
            )
            state = self._sql.state_for_update.fetch_one(locked)
            live = self._sql.live_version.fetch_one(counted)
        return state, (live.live, live.newest), who

    def insert(
        self,
        task_id: int,
        seq: int,
        answer: LogEntry,
        active_ms: int,
        now: datetime,
        comment: str | None = None,
        answered_by: int | None = None,
    ) -> int | None:
        """Store ``answer`` as live judgment ``seq`` (``answered_by``: a second assessor, if
        not the assessor); its id, or None if one exists already (nothing stored)."""
        values = row_values(task_id, seq, answer, active_ms, now, comment)
        insert = self._sql.insert if answered_by is None else self._sql.insert_answered_by
        row = insert.one_or_none(self.cursor, values | {"answered_by": answered_by})
        return None if row is None else int(row.id)

    def mark(self, task_id: int, change: str, now: datetime) -> None:
        """Apply a status change of :data:`MARK` (``"active"``, ``"done"``, ``"active+done"``)."""
        self._sql.mark[change].execute(self.cursor, {"task_id": task_id, "now": now})

    def undo(self, task_id: int, seq: int, now: datetime) -> bool:
        """Mark live judgment ``seq`` undone; False if it was not live (nothing changed)."""
        values = {"task_id": task_id, "seq": seq, "now": now}
        return self._sql.undo.execute(self.cursor, values) == 1

    def undo_from(self, task_id: int, seq: int, now: datetime) -> int:
        """Mark every live judgment with ``seq`` or later undone; how many were."""
        values = {"task_id": task_id, "seq": seq, "now": now}
        return int(self._sql.undo_from.execute(self.cursor, values))

    def reopen(self, task_id: int) -> None:
        """A done task becomes active again (its last judgment was undone)."""
        self._sql.reopen.execute(self.cursor, {"task_id": task_id})

    def documents(self, query_id: int, doc_ids: Sequence[str]) -> dict[str, Any]:
        """Documents of a query by external id, in one statement (a pool is read once per
        task and process, then served from the document cache); absent ids are left out."""
        if not doc_ids:
            return {}
        rows = self._sql.documents.rows(
            self.cursor, {"query_id": query_id, "doc_ids": list(doc_ids)}
        )
        return {row.external_id: row for row in rows}


async def store_if_current(
    db: Database,
    conn: LoopConnection,
    *,
    task_id: int,
    incarnation: datetime,
    version: LogVersion,
    seq: int,
    answer: Answer,
    active_ms: int,
    now: datetime,
    comment: str | None,
    finishes: bool,
    digest: str | None,
    user_id: int | None,
) -> int | None:
    """Postgres, on the event loop: a whole submit transaction from a cached session in ONE
    round trip on ``conn`` (an autocommit ``AsyncConnection``: ``db.loop_connections``).

    One simple query, two statements, one transaction (the protocol's implicit transaction:
    the statements of one query message, committed at its end, rolled back on an error; an
    explicit ``BEGIN`` from psycopg would cost a round trip of its own): the row lock
    (:data:`TASK_STATE_FOR_UPDATE`), then :func:`store_if_current_statement`, which inserts
    ``answer`` as live judgment ``seq`` only if the task (created at ``incarnation``), the
    caller (``digest`` of a bearer token, else ``user_id``) and the log ``version`` are as the
    session assumed, and changes the status (``finishes``: the last answer). The lock comes
    first, so the storing statement's snapshot (READ COMMITTED: one per statement) sees every
    writer that held the lock before.

    Both are prepared on the connection (``PREPARE``, in the same message the first time) and
    run as ``EXECUTE`` with their arguments bound by psycopg's client-side cursor (libpq
    quotes every value as a literal): one message and one wait, where the extended protocol
    (psycopg's pipeline) cost the event loop about as much CPU as the rest of the request.

    Returns the new judgment's id; None when nothing was stored (and nothing written but the
    token's refresh when due)."""
    import psycopg  # Postgres only: a SQLite server never loads it (memory at start)

    sql = _STATEMENTS.of(db)
    caller = "token" if digest is not None else "user"
    mark = "finish" if finishes else "start" if version[0] == 0 else None
    values = row_values(task_id, seq, answer, active_ms, now, comment)
    values |= {
        "task_created_at": incarnation,
        "live": version[0],
        "newest": version[1],
        "digest": digest,
        "user_id": user_id,
        "now": now,
        "touch_before": now - TOUCH_INTERVAL,
    }
    lock, store = sql.state_for_update, sql.store_if_current[caller, mark]
    names = {lock: "heapjudge_lock_task", store: f"heapjudge_store_{caller}_{mark or 'only'}"}
    statements = [p.server_prepare(n) for p, n in names.items() if n not in conn.prepared]
    if db.settings.postgres_async_commit:
        statements.append(ASYNCHRONOUS_COMMIT_IMPLICIT)
    statements += [lock.server_execute(names[lock]), store.server_execute(names[store])]
    params = lock.named_params({"task_id": task_id}) | store.named_params(values)
    async with psycopg.AsyncClientCursor(conn.connection) as cursor:
        await cursor.execute("; ".join(statements), params)
        while cursor.nextset():  # to the last statement's result: the store's
            pass
        rows = store.made(await cursor.fetchall())
    conn.prepared.update(names.values())
    return None if not rows else int(rows[0].id)
