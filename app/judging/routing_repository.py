"""The SQL of second opinions: their rows, the first task's log and the assignees, as prepared
statements compiled once per database (:data:`STATEMENTS`; the judging loop's statements are
:mod:`app.judging.repository`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table, bindparam, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from app.judging.repository import LIVE_VERSION
from app.kernel.caches import Slot
from app.kernel.db import Database
from app.kernel.models import Judgment, Query, SecondOpinion, Task, User
from app.kernel.prepared import Prepared

SO = SecondOpinion.__table__
J = Judgment.__table__
U = User.__table__
T = Task.__table__
Q = Query.__table__
assert isinstance(SO, Table) and isinstance(J, Table) and isinstance(U, Table)
assert isinstance(T, Table) and isinstance(Q, Table)

#: Statuses of a row not decided for good: at most one per (task, seq) (partial unique index).
UNDECIDED = ("open", "reclaimed", "expired")


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


class Statements:
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
        self.live_version = Prepared(LIVE_VERSION, dialect)
        self.query = Prepared(QUERY_TITLE, dialect)
        self.answered_count = Prepared(ANSWERED_COUNT, dialect)
        self.open_ids = Prepared(OPEN_IDS, dialect)


STATEMENTS: Slot[Statements] = Slot("second opinions statements", Statements)
