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
dict lookup on the task's options. Everything here runs only for tasks that route."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import select

from app.auth.tokens import Caller, Identity, caller_identity
from app.judging import loop
from app.judging.answers import record_answer
from app.judging.loop import Payload, document_payload
from app.judging.repository import JudgmentStore
from app.judging.routing import decide, locked_body
from app.judging.routing_repository import STATEMENTS
from app.kernel.db import Database
from app.kernel.errors import Conflict, Forbidden, Invalid, NotFound
from app.kernel.models import Query, SecondOpinion, Task, User, utcnow
from labeling.errors import InvalidAnswer
from labeling.identifiers import same_identifier
from labeling.protocol.topk import TopKSession
from labeling.protocol.types import PairAnswer, PairQuestion

# --------------------------------------------------------------------------- the first assessor


def reclaim(*, db: Database, user: Caller, task_id: int) -> Payload:
    """ "Ask me instead": the first assessor takes back the routed question now pending in
    their task, if any (an open row becomes ``reclaimed``); returns the task's question body.
    Idempotent: with nothing routed it only returns the current question."""
    with db.raw_write() as cursor:
        store = JudgmentStore(db, cursor)
        who = caller_identity(db, cursor, user, writable=True)
        task = store.task(task_id, lock=True)
        loop.authorise(task, who, task_id, judge=True)
        replayed = loop.replay(task, store.live_log(task_id))
        session = replayed.session
        pending = session.pending
        if isinstance(session, TopKSession) and session.pending_is_repeat and pending is not None:
            sql = STATEMENTS.of(db)
            seq = pending.seq
            row = sql.undecided_for_update.one_or_none(cursor, {"task_id": task_id, "seq": seq})
            if row is not None and row.status == "open":
                decide(sql, cursor, row, "reclaimed", utcnow())
        return locked_body(db, replayed, store)


# --------------------------------------------------------------------------- the second assessor


def _item(db: Database, cursor: Any, row: Any) -> Payload:
    """The question body of a second opinion (the judging loop's shape, so the judging page
    shows it): ``seq``, ``pair``, ``allowed_outcomes`` while it is open; ``done`` once it is
    decided; ``second_opinion`` (id, task, query, whose task, status, times, outcome);
    ``progress`` counts the assignee's answered and open second opinions."""
    store = JudgmentStore(db, cursor)
    task = store.task(row.task_id)
    q = STATEMENTS.of(db).query.one_or_none(cursor, {"id": task.query_id})
    owner = STATEMENTS.of(db).user_by_id.one_or_none(cursor, {"id": task.assessor_id})
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
    sql = STATEMENTS.of(db)
    answered = sql.answered_count.one_or_none(cursor, {"assignee_id": assignee_id})
    open_ids = sql.open_ids.rows(cursor, {"assignee_id": assignee_id, "now": now})
    return int(answered[0]), len(open_ids)


def next_item(*, db: Database, user: Caller) -> Payload:
    """The caller's oldest open second opinion (its question body), or ``{"done": true}``
    with ``progress`` when none is open."""
    with db.raw_read() as cursor:
        who = caller_identity(db, cursor, user, writable=False)
        ids = STATEMENTS.of(db).open_ids.rows(cursor, {"assignee_id": who.id, "now": utcnow()})
        if ids:
            row = STATEMENTS.of(db).by_id.one_or_none(cursor, {"id": ids[0].id})
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
    sql = STATEMENTS.of(db)
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
    seq = int(data["seq"])
    left, right, outcome = data.get("left"), data.get("right"), data.get("outcome")
    if not left or not right or not outcome:
        raise Invalid("a second opinion needs seq, left, right and outcome")
    active_ms = int(data.get("active_ms") or 0)
    comment = loop.comment_of(data)
    sql = STATEMENTS.of(db)
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
        shown = (row.left_doc, row.right_doc)
        if not all(map(same_identifier, (left, right), shown)):
            raise conflict(
                f"second opinion {item_id} shows ({row.left_doc!r}, {row.right_doc!r}); echo "
                "left/right as shown"
            )
        left, right = shown  # as sent, or its other Unicode spelling
        if row.status == "answered":
            if row.outcome == outcome:
                return _item(db, cursor, row)  # a retry: stored once already
            raise conflict(f"second opinion {item_id} was already answered differently")
        _check_open(row, task, item_id, outcome, now, conflict)
        replayed = loop.replay(task, store.live_log(task.id))
        session = replayed.session
        question = session.pending
        if (
            not isinstance(question, PairQuestion)
            or question.seq != row.seq
            or (question.left, question.right) != (row.left_doc, row.right_doc)
            or not getattr(session, "pending_is_repeat", False)
        ):
            # The task moved past this question without it (cannot happen while undo cancels
            # and the assignee is the only other writer): withdraw it.
            decide(sql, cursor, row, "cancelled", now)
            raise conflict(f"second opinion {item_id} no longer matches its task's question")
        pair = PairAnswer(left, right, outcome)
        try:
            inserted = record_answer(
                store, replayed, row.seq, pair, status=task.status, active_ms=active_ms,
                now=now, comment=comment, conflict=conflict, answered_by=who.id,
            )  # fmt: skip
        except InvalidAnswer as exc:
            raise Invalid(str(exc)) from exc
        if inserted is None:
            raise conflict(f"question {row.seq} of task {task.id} was answered concurrently")
        sql.answered.execute(
            cursor,
            {
                "id": row.id,
                "now": now,
                "outcome": outcome,
                "active_ms": active_ms,
                "judgment_id": inserted,
            },
        )
        decided = sql.by_id.one_or_none(cursor, {"id": item_id})
        return _item(db, cursor, decided)


def _check_open(
    row: Any,
    task: Any,
    item_id: int,
    outcome: str,
    now: datetime,
    conflict: Callable[[str], Conflict],
) -> None:
    """409 (``conflict(message)``) unless second opinion ``row`` is open, its ``task`` not
    cancelled and its deadline not passed; 422 for an ``outcome`` it does not offer."""
    if row.status != "open":
        raise conflict(f"second opinion {item_id} is {row.status}: it went back to its task")
    if task is None or task.status == "cancelled":
        raise conflict(f"the task of second opinion {item_id} is cancelled")
    if row.deadline_at <= now:
        raise conflict(f"second opinion {item_id} timed out: the question went back to its task")
    if outcome not in row.allowed:
        raise Invalid(
            f"outcome {outcome!r} is not offered for this question; expected one of "
            f"{', '.join(row.allowed)}"
        )


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
