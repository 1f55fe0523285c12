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
Undo marks the last live judgment ``undone`` (it stays in the log) with a compare-and-set.
Results live in :mod:`app.services.results`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, Protocol

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from app.db import Database
from app.errors import Conflict, Forbidden, Invalid, NotFound
from app.models import Document, Judgment, Task, User, utcnow
from app.services.tasks import load_task_for
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
_DOCUMENTS = select(_D.c.external_id, _D.c.title, _D.c.text, _D.c.html).where(
    _D.c.query_id == bindparam("query_id"),
    _D.c.external_id.in_(bindparam("ids", expanding=True)),
)
_INSERT = {
    name: dialect.insert(_J).on_conflict_do_nothing().returning(_J.c.id)
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


def _documents(s: Session, task: Any, ids: Sequence[str]) -> dict[str, Any]:
    rows = s.execute(_DOCUMENTS, {"query_id": task.query_id, "ids": list(ids)})
    return {d.external_id: d for d in rows}


def question_payload(s: Session, task: Any, session: Any, rows: Sequence[LogRow]) -> Payload:
    """The body of ``/next`` (and of a successful submit/undo)."""
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
        "active_ms": sum(r.active_ms for r in rows),
    }
    q = session.pending
    if isinstance(q, PairQuestion):
        docs = _documents(s, task, [q.left, q.right])
        body["seq"] = q.seq
        body["pair"] = {
            "left": _doc_payload(docs.get(q.left), q.left),
            "right": _doc_payload(docs.get(q.right), q.right),
        }
        body["allowed_outcomes"] = list(session.allowed_outcomes)
    elif isinstance(q, GradeQuestion):
        docs = _documents(s, task, [q.doc_id])
        body["seq"] = q.seq
        body["document"] = _doc_payload(docs.get(q.doc_id), q.doc_id)
    return body


# --------------------------------------------------------------------------- use cases


def next_question(*, db: Database, user: User, task_id: int) -> Payload:
    """The pending question of a task (or done), rebuilt from its log."""
    with db.read() as s:
        task = _task_for(s, user, task_id)
        rows = live_judgments(s, task.id)
        return question_payload(s, task, replay_task(task, rows), rows)


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


def _conflict(message: str, s: Session, task: Any, session: Any, rows: list[Any]) -> Conflict:
    return Conflict(message, extra={"current": question_payload(s, task, session, rows)})


def _insert_judgment(s: Session, dialect: str, values: dict[str, Any]) -> int | None:
    """INSERT ... ON CONFLICT DO NOTHING RETURNING id (None when a live row already exists)."""
    return s.execute(_INSERT[dialect], values).scalar()


def _log_version(rows: Sequence[Any]) -> tuple[int, int]:
    """(number of live judgments, id of the newest): changes with every insert and undo, and
    an undo followed by a new answer gets a new id, so equal versions mean an equal log."""
    return len(rows), max((r.id for r in rows), default=0)


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
).where(_T.c.id == bindparam("task_id"))


def _task_for(s: Session, user: User, task_id: int) -> Any:
    """The task's config and state as a Core row, if ``user`` may act on it (404 / 403);
    the same rules as :func:`app.services.tasks.load_task_for`, without ORM overhead."""
    task = s.execute(_TASK_ROW, {"task_id": task_id}).one_or_none()
    if task is None:
        raise NotFound(f"no task with id {task_id}")
    if task.assessor_id != user.id and user.role != "admin":
        raise Forbidden(f"task {task_id} belongs to another assessor")
    return task


_TASK_STATE_FOR_UPDATE = (
    select(_T.c.status, _T.c.assessor_id).where(_T.c.id == bindparam("task_id")).with_for_update()
)
_LIVE_VERSION = select(func.count(), func.coalesce(func.max(_J.c.id), 0)).where(
    _J.c.task_id == bindparam("task_id"), _J.c.undone.is_(False)
)


def _apply(s: Session, task: Any, rows: list[Any], session: Any, seq: int, answer: Answer) -> bool:
    """Check ``answer`` for question ``seq`` against the replayed log and submit it to
    ``session``. Returns False for an identical retry (nothing to store); raises 409 (with the
    current question) or the labeling core's InvalidAnswer (422) otherwise."""
    if seq < len(rows):
        if answer_of(rows[seq]) == answer:
            return False
        raise _conflict(f"question {seq} was already answered differently", s, task, session, rows)
    if seq > len(rows):
        message = f"question {seq} is not open yet; the current question is {len(rows)}"
        raise _conflict(message, s, task, session, rows)
    try:
        session.submit(answer)
    except (WrongQuestion, Finished) as exc:
        raise _conflict(str(exc), s, task, session, rows) from exc
    return True


def submit_judgment(*, db: Database, user: User, task_id: int, data: dict[str, Any]) -> Payload:
    """Record one judgment (see the module docstring for the exact semantics).

    Two phases keep the write lock short: the log is read, replayed and the answer validated
    in a read transaction; the write transaction then only re-checks that the log version is
    unchanged, inserts and updates the task. If another request changed the log in between,
    the whole check is redone inside the write transaction, so the outcome is the same as if
    everything had happened under the lock.
    """
    seq = int(data["seq"])
    active_ms = int(data.get("active_ms") or 0)
    with db.read() as s:
        task = _task_for(s, user, task_id)
        if task.status == "cancelled":
            raise Conflict(f"task {task_id} is cancelled")
        answer = _answer_from_request(task, data)
        rows = live_judgments(s, task.id)
        session = replay_task(task, rows)
        if not _apply(s, task, rows, session, seq, answer):
            return question_payload(s, task, session, rows)  # identical retry: store nothing
        version = _log_version(rows)
    with db.write() as s:
        # Lock the task row and re-read what may have changed since phase 1 (an admin may
        # cancel or reassign it); its protocol config never changes, so ``task`` stays valid.
        state = s.execute(_TASK_STATE_FOR_UPDATE, {"task_id": task.id}).one_or_none()
        if state is None:
            raise NotFound(f"no task with id {task_id}")
        if state.assessor_id != user.id and user.role != "admin":
            raise Forbidden(f"task {task_id} belongs to another assessor")
        if state.status == "cancelled":
            raise Conflict(f"task {task_id} is cancelled")
        if tuple(s.execute(_LIVE_VERSION, {"task_id": task.id}).one()) != version:
            rows = live_judgments(s, task.id)
            session = replay_task(task, rows)
            if not _apply(s, task, rows, session, seq, answer):
                return question_payload(s, task, session, rows)
        now = utcnow()
        values: dict[str, Any] = {
            "task_id": task.id,
            "seq": seq,
            "active_ms": active_ms,
            "created_at": now,
            "undone": False,
        }
        if isinstance(answer, PairAnswer):
            values |= {
                "left_doc": answer.left,
                "right_doc": answer.right,
                "outcome": answer.outcome,
            }
        else:
            values |= {"doc_id": answer.doc_id, "grade": answer.grade}
        new_id = _insert_judgment(s, db.dialect, values)
        if new_id is None:
            # Lost a race the row lock should have prevented; the stored row decides.
            rows = live_judgments(s, task.id)
            current = replay_task(task, rows)
            if seq < len(rows) and answer_of(rows[seq]) == answer:
                return question_payload(s, task, current, rows)
            raise _conflict(f"question {seq} was answered concurrently", s, task, current, rows)
        rows = [*rows, SimpleNamespace(id=new_id, **values)]
        changes: dict[str, Any] = {}
        if state.status == "pending":
            changes |= {"status": "active", "started_at": now}
        if session.done:
            changes |= {"status": "done", "finished_at": now}
        if changes:
            s.execute(update(_T).where(_T.c.id == task.id).values(**changes))
        return question_payload(s, task, session, rows)


def undo_judgment(*, db: Database, user: User, task_id: int) -> Payload:
    """Revert the last live judgment (kept in the log, marked undone); 409 if there is none."""
    with db.write() as s:
        task = load_task_for(s, user, task_id, lock=True)
        if task.status == "cancelled":
            raise Conflict(f"task {task_id} is cancelled")
        rows = live_judgments(s, task.id)
        if not rows:
            raise _conflict("nothing to undo", s, task, replay_task(task, rows), rows)
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
        rows = rows[:-1]
        session = replay_task(task, rows)
        if task.status == "done":
            task.status = "active"
            task.finished_at = None
        return question_payload(s, task, session, rows)
