"""Routing a top-k task's deliberate repeats to a second assessor: the task's options, and
the first task's side (docs/noise.md#routing-re-asks-to-a-second-assessor).

Routing happens when the question would be shown to the first assessor (:func:`gate`, from
the judging loop's question body): the question, as that task shows it at ``seq`` (sides
swapped relative to the pair's last showing), becomes an ``open`` second opinion row
assigned to the second assessor with the fewest open ones (ties: the order of the option).
The first assessor sees a waiting state instead of the question. An undo that goes back
before a routed question cancels it (:func:`cancel_after`).

A task without ``second_assessor`` never reaches this module: the judging loop's check is one
dict lookup on the task's options.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select

from app.judging import loop
from app.judging.loop import Payload, Replayed
from app.judging.repository import JudgmentStore
from app.judging.routing_repository import STATEMENTS, Statements
from app.kernel.db import Database
from app.kernel.errors import Invalid
from app.kernel.models import User, utcnow
from labeling.protocol.spec import DEFAULT_SECOND_OPINION_TIMEOUT, Routing, parse_routing

#: The default of the task option ``second_opinion_timeout_s`` (seconds).
DEFAULT_TIMEOUT_S = DEFAULT_SECOND_OPINION_TIMEOUT
#: Outcomes a second assessor may give: "not relevant" refers to the first task's Step-2
#: challenger, a role the pair has only in that task's heap, so it is left to the first
#: assessor; a second assessor says which document is better (or equal, with ties on).
SECOND_OUTCOMES = ("left", "right", "tie")


# --------------------------------------------------------------------------- options


def _routing(options: Any) -> Routing:
    """The routing of a task's stored options (:class:`labeling.protocol.spec.Routing`)."""
    return parse_routing(options) if isinstance(options, dict) else Routing()


def second_assessors(options: Any) -> list[str]:
    """The usernames of a task's option ``second_assessor`` ([] when it routes nothing)."""
    return list(_routing(options).second_assessor or ())


def timeout_s(options: Any) -> int:
    """How long a routed question of the task waits (option ``second_opinion_timeout_s``)."""
    return _routing(options).timeout_s


def check_second_assessors(s: Any, names: Sequence[str], own: str) -> None:
    """Invalid unless every name is an existing, active user other than the task's own
    assessor ``own`` (``s``: a database transaction)."""
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
        live = STATEMENTS.of(db).live_version.one_or_none(own, {"task_id": task.id})
        if not replayed.matches(task.created_at, (live.live, live.newest)):
            # The log moved since the body was built (another request): build it again here,
            # under the lock.
            return locked_body(db, loop.replay(task, store.live_log(task.id)), store)
        return _gate(db, own, replayed, body)


def locked_body(db: Database, replayed: Replayed, store: JudgmentStore) -> Payload:
    """The question body of ``replayed`` (:func:`app.judging.loop.replayed_body`) in
    ``store``'s write transaction, which holds the task's row lock and matches ``replayed``:
    the waiting state when the question is routed to a second assessor (:func:`gate`)."""
    body = loop.replayed_body(db, replayed, store)
    return _gate(db, store.cursor, replayed, body) if loop.routes(replayed) else body


def _gate(db: Database, cursor: Any, replayed: Any, body: Payload) -> Payload:
    session = replayed.session
    question = session.pending
    task = replayed.task
    sql = STATEMENTS.of(db)
    now = utcnow()
    row = sql.undecided_for_update.one_or_none(cursor, {"task_id": task.id, "seq": question.seq})
    if row is not None and (row.left_doc, row.right_doc) != (question.left, question.right):
        # Cannot happen while the log decides the question at seq (undo cancels the rows after
        # it); a stale row never blocks the task.
        decide(sql, cursor, row, "cancelled", now)
        row = None
    if row is None:
        row = _route(db, cursor, replayed, question, now)
        if row is None:
            return body  # nobody to ask: the question is the first assessor's
    if row.status == "open" and row.deadline_at <= now:
        decide(sql, cursor, row, "expired", now)
        return body
    if row.status != "open":
        return body  # reclaimed or expired: the first assessor answers it
    return waiting_body(body, row)


def _route(db: Database, cursor: Any, replayed: Any, question: Any, now: datetime) -> Any:
    """Create the open row of ``question`` for the least loaded active second assessor; the
    row (with ``assignee``), or None when no second assessor is active."""
    sql = STATEMENTS.of(db)
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


def decide(sql: Statements, cursor: Any, row: Any, status: str, now: datetime) -> bool:
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
    sql = STATEMENTS.of(db)
    row = sql.undecided_for_update.one_or_none(cursor, {"task_id": task_id, "seq": seq})
    if row is None or row.status != "open":
        return None
    now = utcnow()
    if row.deadline_at <= now:
        decide(sql, cursor, row, "expired", now)
        return None
    return {"message": f"question {seq} waits for a second opinion from {row.assignee}"}


def cancel_after(db: Database, cursor: Any, task_id: int, seq: int) -> int:
    """In an undo's transaction: cancel the undecided rows of the task after ``seq`` (the new
    pending question); how many."""
    values = {"task_id": task_id, "seq": seq, "now": utcnow()}
    return STATEMENTS.of(db).cancel_after.execute(cursor, values)
