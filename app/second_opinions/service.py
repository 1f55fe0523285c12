"""Second opinions: a strategy's repeat of a pair routed to a second assessor's queue.

docs/noise.md#routing-re-asks-to-a-second-assessor is the design; in short:

* A top-k task whose option ``second_assessor`` names users (the planner sets it for a
  ``+robust`` task when its plan has other top-k assessors of the query; ``POST
  /api/v1/tasks`` may set it) routes each deliberate repeat of its strategy
  (:attr:`labeling.protocol.topk.TopKSession.pending_is_repeat`) to one of them.
* Routing happens when the question would be shown to the first assessor (:func:`gate`, from
  the judging loop's question body): the question, as that task shows it at ``seq`` (sides
  swapped relative to the pair's last showing), becomes an ``open`` :class:`SecondOpinion`
  row assigned to the second assessor with the fewest open ones (ties: the order of the
  option). The first assessor sees a waiting state instead of the question.
* The second assessor answers it (:func:`answer`): the answer is stored as the FIRST task's
  live judgment ``seq`` with ``answered_by`` set, in one write transaction that holds the
  first task's row lock and replays its log, exactly as a judgment of that task is stored
  (the partial unique index on live ``(task_id, seq)`` is the arbiter). An identical retry
  stores nothing; anything else for a decided question is 409.
* The question goes back to the first assessor when they reclaim it (:func:`reclaim`) or
  when ``second_opinion_timeout_s`` has passed (status ``expired``, decided when the first
  assessor next asks). An undo of the first assessor that goes back before a routed question
  cancels it (:func:`cancel_after`): the log up to ``seq`` determines the question at ``seq``,
  so a row at the new pending ``seq`` stays valid and rows after it are cancelled.

A task without ``second_assessor`` never reaches this module: the judging loop's check is one
dict lookup on the task's options. Everything here runs only for tasks that route.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Table, bindparam, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from app.judging.document_cache import Payload, document_payload
from app.judging.repository import INSERT_ANSWERED_BY, LIVE_VERSION, JudgmentStore, row_values
from app.kernel.caches import Slot
from app.kernel.db import Database
from app.kernel.errors import Conflict, Forbidden, Invalid, NotFound
from app.kernel.models import Judgment, Query, SecondOpinion, Task, User, utcnow
from app.kernel.prepared import Prepared
from app.users.tokens import Caller, Identity, caller_identity
from labeling.errors import Finished, InvalidAnswer, WrongQuestion
from labeling.protocol.options import DEFAULT_OPTIONS
from labeling.protocol.types import PairAnswer

SO = SecondOpinion.__table__
J = Judgment.__table__
U = User.__table__
T = Task.__table__
Q = Query.__table__
assert isinstance(SO, Table) and isinstance(J, Table) and isinstance(U, Table)
assert isinstance(T, Table) and isinstance(Q, Table)

#: Statuses of a row not decided for good: at most one per (task, seq) (partial unique index).
UNDECIDED = ("open", "reclaimed", "expired")
#: The default of the task option ``second_opinion_timeout_s`` (seconds).
DEFAULT_TIMEOUT_S = int(DEFAULT_OPTIONS["topk"]["second_opinion_timeout_s"])
#: Outcomes a second assessor may give: "not relevant" refers to the first task's Step-2
#: challenger, a role the pair has only in that task's heap, so it is left to the first
#: assessor; a second assessor says which document is better (or equal, with ties on).
SECOND_OUTCOMES = ("left", "right", "tie")


def _undecided() -> Any:
    # OR of equalities, not IN: a prepared statement has no expanding parameters.
    return or_(*(SO.c.status == status for status in UNDECIDED))


_COLUMNS = (
    SO.c.id,
    SO.c.task_id,
    SO.c.seq,
    SO.c.left_doc,
    SO.c.right_doc,
    SO.c.allowed,
    SO.c.assignee_id,
    SO.c.status,
    SO.c.created_at,
    SO.c.deadline_at,
    SO.c.decided_at,
    SO.c.outcome,
    SO.c.active_ms,
    SO.c.judgment_id,
)
UNDECIDED_ROW = (
    select(*_COLUMNS, U.c.username.label("assignee"))
    .join(U, U.c.id == SO.c.assignee_id)
    .where(
        SO.c.task_id == bindparam("task_id"),
        SO.c.seq == bindparam("seq"),
        _undecided(),
    )
)
ROW_BY_ID = select(*_COLUMNS).where(SO.c.id == bindparam("id"))
USER_BY_NAME = select(U.c.id, U.c.username, U.c.disabled).where(
    U.c.username == bindparam("username")
)
USER_BY_ID = select(U.c.username).where(U.c.id == bindparam("id"))
OPEN_LOAD = select(func.count()).where(
    SO.c.assignee_id == bindparam("assignee_id"),
    SO.c.status == "open",
    SO.c.deadline_at > bindparam("now"),
)
INSERT_ROW = {
    name: dialect.insert(SO)
    .values(
        task_id=bindparam("task_id"),
        seq=bindparam("seq"),
        left_doc=bindparam("left_doc"),
        right_doc=bindparam("right_doc"),
        allowed=bindparam("allowed", type_=SO.c.allowed.type),
        assignee_id=bindparam("assignee_id"),
        status="open",
        created_at=bindparam("now"),
        deadline_at=bindparam("deadline_at"),
        active_ms=0,
    )
    .on_conflict_do_nothing()
    .returning(SO.c.id)
    for name, dialect in (("postgresql", postgresql), ("sqlite", sqlite))
}
#: Decide a row that is still in status ``from`` (reclaimed, expired, cancelled).
DECIDE = (
    update(SO)
    .where(SO.c.id == bindparam("id"), SO.c.status == bindparam("from_status"))
    .values(status=bindparam("to_status"), decided_at=bindparam("now"))
)
ANSWERED = (
    update(SO)
    .where(SO.c.id == bindparam("id"), SO.c.status == "open")
    .values(
        status="answered",
        decided_at=bindparam("now"),
        outcome=bindparam("outcome"),
        active_ms=bindparam("active_ms"),
        judgment_id=bindparam("judgment_id"),
    )
)
#: An undo back to ``seq`` (the new pending question) invalidates every undecided row after it.
CANCEL_AFTER = (
    update(SO)
    .where(
        SO.c.task_id == bindparam("task_id"),
        SO.c.seq > bindparam("seq"),
        _undecided(),
    )
    .values(status="cancelled", decided_at=bindparam("now"))
)
QUERY_TITLE = select(Q.c.external_id, Q.c.title).where(Q.c.id == bindparam("id"))
ANSWERED_COUNT = select(func.count()).where(
    SO.c.assignee_id == bindparam("assignee_id"), SO.c.status == "answered"
)
#: An assignee's queue: open, not timed out, of a task not cancelled; oldest first.
OPEN_IDS = (
    select(SO.c.id)
    .join(T, T.c.id == SO.c.task_id)
    .where(
        SO.c.assignee_id == bindparam("assignee_id"),
        SO.c.status == "open",
        SO.c.deadline_at > bindparam("now"),
        T.c.status != "cancelled",
    )
    .order_by(SO.c.created_at, SO.c.id)
)


class _Statements:
    """The statements above compiled for one database's dialect."""

    def __init__(self, db: Database) -> None:
        dialect = db.engine.dialect
        self.undecided = Prepared(UNDECIDED_ROW, dialect)
        self.undecided_for_update = Prepared(UNDECIDED_ROW.with_for_update(of=SO), dialect)
        self.by_id = Prepared(ROW_BY_ID, dialect)
        self.by_id_for_update = Prepared(ROW_BY_ID.with_for_update(), dialect)
        self.user_by_name = Prepared(USER_BY_NAME, dialect)
        self.user_by_id = Prepared(USER_BY_ID, dialect)
        self.open_load = Prepared(OPEN_LOAD, dialect)
        self.insert_row = Prepared(INSERT_ROW[db.dialect], dialect)
        self.decide = Prepared(DECIDE, dialect)
        self.answered = Prepared(ANSWERED, dialect)
        self.cancel_after = Prepared(CANCEL_AFTER, dialect)
        self.insert_judgment = Prepared(INSERT_ANSWERED_BY[db.dialect], dialect)
        self.live_version = Prepared(LIVE_VERSION, dialect)
        self.query = Prepared(QUERY_TITLE, dialect)
        self.answered_count = Prepared(ANSWERED_COUNT, dialect)
        self.open_ids = Prepared(OPEN_IDS, dialect)


_SQL: Slot[_Statements] = Slot("second opinions statements", _Statements)


# --------------------------------------------------------------------------- options


def second_assessors(options: Any) -> list[str]:
    """The usernames of a task's option ``second_assessor`` ([] when it routes nothing)."""
    names = options.get("second_assessor") if isinstance(options, dict) else None
    return list(names) if names else []


def timeout_s(options: Any) -> int:
    value = options.get("second_opinion_timeout_s") if isinstance(options, dict) else None
    return int(value) if value else DEFAULT_TIMEOUT_S


def check_second_assessors(s: Any, names: Sequence[str], own: str) -> None:
    """Invalid unless every name is an existing, active user other than the task's own
    assessor ``own`` (``s``: an ORM session)."""
    for name in names:
        if name == own:
            raise Invalid(
                f"second_assessor {name!r} is the task's own assessor; name another assessor"
            )
        user = s.scalar(select(User).where(User.username == name))
        if user is None:
            raise Invalid(f"second_assessor: no user named {name!r}")
        if user.disabled:
            raise Invalid(f"second_assessor: user {name!r} is disabled")


# --------------------------------------------------------------------------- the first task


def gate(db: Database, replayed: Any, body: Payload, cursor: Any | None = None) -> Payload:
    """The body to show the first assessor when their pending question is a deliberate repeat
    of a task that routes (the judging loop calls this only then): the waiting body while a
    second opinion is open, else ``body`` (the question is theirs: reclaimed, expired, or no
    active second assessor).

    ``cursor``: the caller's write transaction, with the task's row locked and ``replayed``
    matching its log (submit, undo); None opens one here, locks the task and checks that the
    log is still the one ``replayed`` was built from (if not, the body is rebuilt under the
    lock)."""
    if cursor is not None:
        return _gate(db, cursor, replayed, body)
    with db.raw_write() as own:
        store = JudgmentStore(db, own)
        task = store.task(replayed.task.id, lock=True)
        if task is None:
            return body
        live = _SQL.of(db).live_version.one_or_none(own, {"task_id": task.id})
        if not replayed.matches(task.created_at, (live.live, live.newest)):
            # The log moved since the body was built (another request): build it again here,
            # under the lock; the judging loop's body routes through this module again.
            from app.judging import service as judging

            fresh = judging._replay(task, store.live_log(task.id))
            return judging._body(db, fresh, store, locked=True)
        return _gate(db, own, replayed, body)


def _gate(db: Database, cursor: Any, replayed: Any, body: Payload) -> Payload:
    session = replayed.session
    question = session.pending
    task = replayed.task
    sql = _SQL.of(db)
    now = utcnow()
    row = sql.undecided_for_update.one_or_none(cursor, {"task_id": task.id, "seq": question.seq})
    if row is not None and (row.left_doc, row.right_doc) != (question.left, question.right):
        # Cannot happen while the log decides the question at seq (undo cancels the rows after
        # it); a stale row never blocks the task.
        _decide(sql, cursor, row, "cancelled", now)
        row = None
    if row is None:
        row = _route(db, cursor, replayed, question, now)
        if row is None:
            return body  # nobody to ask: the question is the first assessor's
    if row.status == "open" and row.deadline_at <= now:
        _decide(sql, cursor, row, "expired", now)
        return body
    if row.status != "open":
        return body  # reclaimed or expired: the first assessor answers it
    return waiting_body(body, row)


def _route(db: Database, cursor: Any, replayed: Any, question: Any, now: datetime) -> Any:
    """Create the open row of ``question`` for the least loaded active second assessor; the
    row (with ``assignee``), or None when no second assessor is active."""
    sql = _SQL.of(db)
    task = replayed.task
    best: tuple[int, int, Any] | None = None
    for position, name in enumerate(second_assessors(task.options)):
        user = sql.user_by_name.one_or_none(cursor, {"username": name})
        if user is None or user.disabled:
            continue
        load = sql.open_load.one_or_none(cursor, {"assignee_id": user.id, "now": now})
        key = (int(load[0]), position, user)
        if best is None or key[:2] < best[:2]:
            best = key
    if best is None:
        return None
    allowed = [o for o in replayed.session.allowed_outcomes if o in SECOND_OUTCOMES]
    deadline = now + timedelta(seconds=timeout_s(task.options))
    sql.insert_row.one_or_none(
        cursor,
        {
            "task_id": task.id,
            "seq": question.seq,
            "left_doc": question.left,
            "right_doc": question.right,
            "allowed": allowed,
            "assignee_id": best[2].id,
            "now": now,
            "deadline_at": deadline,
        },
    )
    # Read back (also when a concurrent request inserted it first: the index arbitrated).
    return sql.undecided.one_or_none(cursor, {"task_id": task.id, "seq": question.seq})


def _decide(sql: _Statements, cursor: Any, row: Any, status: str, now: datetime) -> bool:
    values = {"id": row.id, "from_status": row.status, "to_status": status, "now": now}
    return sql.decide.execute(cursor, values) == 1


def waiting_body(body: Payload, row: Any) -> Payload:
    """``body`` (a question body of the first task) without its question, with ``waiting``:
    the routed question's id and seq, who was asked, since and until when."""
    out = {key: body[key] for key in ("task_id", "method", "done", "progress", "active_ms")}
    out["waiting"] = {
        "second_opinion_id": row.id,
        "seq": row.seq,
        "assessor": row.assignee,
        "since": row.created_at.isoformat(),
        "until": row.deadline_at.isoformat(),
    }
    return out


def check_submit(db: Database, cursor: Any, task_id: int, seq: int) -> Payload | None:
    """Inside the first assessor's submit (task row locked), when the pending question is a
    routed repeat: the open row's waiting info if the question waits for a second opinion
    (the submit is then a 409), else None (an expired row is marked so on the way)."""
    sql = _SQL.of(db)
    row = sql.undecided_for_update.one_or_none(cursor, {"task_id": task_id, "seq": seq})
    if row is None or row.status != "open":
        return None
    now = utcnow()
    if row.deadline_at <= now:
        _decide(sql, cursor, row, "expired", now)
        return None
    return {"message": f"question {seq} waits for a second opinion from {row.assignee}"}


def cancel_after(db: Database, cursor: Any, task_id: int, seq: int) -> int:
    """In an undo's transaction: cancel the undecided rows of the task after ``seq`` (the new
    pending question); how many."""
    values = {"task_id": task_id, "seq": seq, "now": utcnow()}
    return _SQL.of(db).cancel_after.execute(cursor, values)


def reclaim(*, db: Database, user: Caller, task_id: int) -> Payload:
    """ "Ask me instead": the first assessor takes back the routed question now pending in
    their task, if any (an open row becomes ``reclaimed``); returns the task's question body.
    Idempotent: with nothing routed it only returns the current question."""
    from app.judging import service as judging

    with db.raw_write() as cursor:
        store = JudgmentStore(db, cursor)
        who = caller_identity(db, cursor, user, writable=True)
        task = store.task(task_id, lock=True)
        judging._authorise(task, who, task_id, judge=True)
        replayed = judging._replay(task, store.live_log(task_id))
        session = replayed.session
        if getattr(session, "pending_is_repeat", False):
            sql = _SQL.of(db)
            seq = session.pending.seq
            row = sql.undecided_for_update.one_or_none(cursor, {"task_id": task_id, "seq": seq})
            if row is not None and row.status == "open":
                _decide(sql, cursor, row, "reclaimed", utcnow())
        return judging._body(db, replayed, store, locked=True)


# --------------------------------------------------------------------------- the second assessor


def _item(db: Database, cursor: Any, row: Any) -> Payload:
    """The question body of a second opinion (the judging loop's shape, so the judging page
    shows it): ``seq``, ``pair``, ``allowed_outcomes`` while it is open; ``done`` once it is
    decided; ``second_opinion`` (id, task, query, whose task, status, times, outcome);
    ``progress`` counts the assignee's answered and open second opinions."""
    store = JudgmentStore(db, cursor)
    task = store.task(row.task_id)
    q = _SQL.of(db).query.one_or_none(cursor, {"id": task.query_id})
    owner = _SQL.of(db).user_by_id.one_or_none(cursor, {"id": task.assessor_id})
    now = utcnow()
    is_open = row.status == "open" and row.deadline_at > now and task.status != "cancelled"
    answered, waiting = _counts(db, cursor, row.assignee_id, now)
    body: Payload = {
        "task_id": task.id,
        "method": "topk",
        "done": not is_open,
        "progress": {
            "judgments": answered,
            "estimated_remaining": waiting,
            "expected_remaining": float(waiting),
            "max_remaining": waiting,
            "done": waiting == 0,
        },
        "active_ms": 0,
        "second_opinion": {
            "id": row.id,
            "task_id": task.id,
            "seq": row.seq,
            "query_id": q.external_id if q is not None else "",
            "query": q.title if q is not None else "",
            "first_assessor": owner.username if owner is not None else "",
            "status": _status(row, now),
            "created_at": row.created_at.isoformat(),
            "deadline_at": row.deadline_at.isoformat(),
            "decided_at": row.decided_at.isoformat() if row.decided_at else None,
            "outcome": row.outcome,
        },
    }
    if is_open:
        docs = store.documents(task.query_id, [row.left_doc, row.right_doc])
        body["seq"] = row.seq
        body["pair"] = {
            "left": document_payload(docs.get(row.left_doc), row.left_doc),
            "right": document_payload(docs.get(row.right_doc), row.right_doc),
        }
        body["allowed_outcomes"] = list(row.allowed)
        body["challenger"] = None
    return body


def _status(row: Any, now: datetime) -> str:
    """The row's status as its assignee sees it: an open row past its deadline is
    ``expired`` already (the first task's next request records that)."""
    return "expired" if row.status == "open" and row.deadline_at <= now else str(row.status)


def _counts(db: Database, cursor: Any, assignee_id: int, now: datetime) -> tuple[int, int]:
    """(answered, open) second opinions of an assignee."""
    sql = _SQL.of(db)
    answered = sql.answered_count.one_or_none(cursor, {"assignee_id": assignee_id})
    open_ids = sql.open_ids.rows(cursor, {"assignee_id": assignee_id, "now": now})
    return int(answered[0]), len(open_ids)


def next_item(*, db: Database, user: Caller) -> Payload:
    """The caller's oldest open second opinion (its question body), or ``{"done": true}``
    with ``progress`` when none is open."""
    with db.raw_read() as cursor:
        who = caller_identity(db, cursor, user, writable=False)
        ids = _SQL.of(db).open_ids.rows(cursor, {"assignee_id": who.id, "now": utcnow()})
        if ids:
            row = _SQL.of(db).by_id.one_or_none(cursor, {"id": ids[0].id})
            return _item(db, cursor, row)
        answered, _ = _counts(db, cursor, who.id, utcnow())
        return {
            "done": True,
            "method": "topk",
            "progress": {
                "judgments": answered,
                "estimated_remaining": 0,
                "expected_remaining": 0.0,
                "max_remaining": 0,
                "done": True,
            },
            "active_ms": 0,
        }


def get_item(*, db: Database, user: Caller, item_id: int) -> Payload:
    """One second opinion of the caller (404 unknown; 403 another user's, admins included:
    the question is the assignee's to answer, and its pair is part of another task)."""
    with db.raw_read() as cursor:
        who = caller_identity(db, cursor, user, writable=False)
        row = _owned(db, cursor, who, item_id)
        return _item(db, cursor, row)


def _owned(db: Database, cursor: Any, who: Identity, item_id: int, *, lock: bool = False) -> Any:
    sql = _SQL.of(db)
    row = (sql.by_id_for_update if lock else sql.by_id).one_or_none(cursor, {"id": item_id})
    if row is None:
        raise NotFound(f"no second opinion with id {item_id}")
    if row.assignee_id != who.id:
        raise Forbidden(f"second opinion {item_id} is assigned to another assessor")
    return row


def list_items(*, db: Database, user: User, include_decided: bool = False) -> list[Payload]:
    """``user``'s open second opinions, oldest first (with ``include_decided``, every one),
    without their documents: id, task, seq, query, whose task, status and times."""
    owner = User.__table__.alias("owner")
    stmt = (
        select(SecondOpinion, Query.external_id, Query.title, owner.c.username)
        .join(Task, Task.id == SecondOpinion.task_id)
        .join(Query, Query.id == Task.query_id)
        .join(owner, owner.c.id == Task.assessor_id)
        .where(SecondOpinion.assignee_id == user.id)
        .order_by(SecondOpinion.created_at, SecondOpinion.id)
    )
    now = utcnow()
    if not include_decided:
        stmt = stmt.where(
            SecondOpinion.status == "open",
            SecondOpinion.deadline_at > now,
            Task.status != "cancelled",
        )
    out = []
    with db.read() as s:
        for row, qid, title, first in s.execute(stmt):
            out.append(
                {
                    "id": row.id,
                    "task_id": row.task_id,
                    "seq": row.seq,
                    "query_id": qid,
                    "query": title,
                    "first_assessor": first,
                    "status": _status(row, now),
                    "created_at": row.created_at,
                    "deadline_at": row.deadline_at,
                    "decided_at": row.decided_at,
                    "outcome": row.outcome,
                }
            )
    return out


def answer(*, db: Database, user: Caller, item_id: int, data: dict[str, Any]) -> Payload:
    """Record the assignee's answer to second opinion ``item_id`` as the first task's judgment
    ``seq`` (``answered_by`` = the assignee) and return the item's body (``done``).

    ``data``: ``seq`` (echo), ``left``, ``right`` (as shown), ``outcome``, optional
    ``active_ms`` and ``comment``. An identical retry of a recorded answer stores nothing;
    409 for a different answer to a decided question, a question no longer open (reclaimed,
    expired, cancelled, its task cancelled or moved on) or a wrong seq or pair; 422 for an
    outcome the question does not accept; 403 for anyone but the assignee."""
    from app.judging import service as judging

    seq = int(data["seq"])
    left, right, outcome = data.get("left"), data.get("right"), data.get("outcome")
    if not left or not right or not outcome:
        raise Invalid("a second opinion needs seq, left, right and outcome")
    active_ms = int(data.get("active_ms") or 0)
    comment = judging._comment_of(data)
    sql = _SQL.of(db)
    with db.raw_write() as cursor:
        store = JudgmentStore(db, cursor)
        who = caller_identity(db, cursor, user, writable=True)
        row = _owned(db, cursor, who, item_id)
        task = store.task(row.task_id, lock=True)  # the first task's lock serialises its log
        row = sql.by_id_for_update.one_or_none(cursor, {"id": item_id})
        now = utcnow()

        def conflict(message: str) -> Conflict:
            return Conflict(message, extra={"current": _item(db, cursor, row)})

        if seq != row.seq:
            raise conflict(f"second opinion {item_id} is question {row.seq}, not {seq}")
        if (left, right) != (row.left_doc, row.right_doc):
            raise conflict(
                f"second opinion {item_id} shows ({row.left_doc!r}, {row.right_doc!r}); echo "
                "left/right as shown"
            )
        if row.status == "answered":
            if row.outcome == outcome:
                return _item(db, cursor, row)  # a retry: stored once already
            raise conflict(f"second opinion {item_id} was already answered differently")
        if row.status != "open":
            raise conflict(f"second opinion {item_id} is {row.status}: it went back to its task")
        if task is None or task.status == "cancelled":
            raise conflict(f"the task of second opinion {item_id} is cancelled")
        if row.deadline_at <= now:
            raise conflict(
                f"second opinion {item_id} timed out: the question went back to its task"
            )
        if outcome not in row.allowed:
            raise Invalid(
                f"outcome {outcome!r} is not offered for this question; expected one of "
                f"{', '.join(row.allowed)}"
            )
        replayed = judging._replay(task, store.live_log(task.id))
        session = replayed.session
        question = session.pending
        if (
            question is None
            or question.seq != row.seq
            or (question.left, question.right) != (row.left_doc, row.right_doc)
            or not getattr(session, "pending_is_repeat", False)
        ):
            # The task moved past this question without it (cannot happen while undo cancels
            # and the assignee is the only other writer): withdraw it.
            _decide(sql, cursor, row, "cancelled", now)
            raise conflict(f"second opinion {item_id} no longer matches its task's question")
        pair = PairAnswer(left, right, outcome)
        try:
            session.submit(pair)
        except (WrongQuestion, Finished) as exc:
            raise conflict(str(exc)) from exc
        except InvalidAnswer as exc:
            raise Invalid(str(exc)) from exc
        values = row_values(task.id, row.seq, pair, active_ms, now, comment)
        values["answered_by"] = who.id
        inserted = sql.insert_judgment.one_or_none(cursor, values)
        if inserted is None:
            raise conflict(f"question {row.seq} of task {task.id} was answered concurrently")
        sql.answered.execute(
            cursor,
            {
                "id": row.id,
                "now": now,
                "outcome": outcome,
                "active_ms": active_ms,
                "judgment_id": int(inserted.id),
            },
        )
        if session.done:
            store.mark(task.id, "done", now)
        decided = sql.by_id.one_or_none(cursor, {"id": item_id})
        return _item(db, cursor, decided)


def refuse_undo(*, db: Database, user: Caller, item_id: int) -> Payload:
    """A second opinion cannot be taken back by its assignee (it is a judgment of another
    assessor's task; that assessor may undo it): always 409 with the item as ``current``."""
    with db.raw_read() as cursor:
        who = caller_identity(db, cursor, user, writable=False)
        row = _owned(db, cursor, who, item_id)
        current = _item(db, cursor, row)
    raise Conflict(
        "a second opinion cannot be undone here: it is recorded in another assessor's task",
        extra={"current": current},
    )
