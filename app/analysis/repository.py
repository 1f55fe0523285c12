"""The analysis concept's SQL: a collection's tasks (cancelled ones left out) and their
judgment log as plain column tuples, read in the caller's session ``s``."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import aliased

from app.kernel.models import Collection, Judgment, Query, Task, User


def collection_by_id(s: Any, collection_id: int) -> Collection | None:
    return s.get(Collection, collection_id)  # type: ignore[no-any-return]


def collection_id_of(s: Any, name_or_id: str) -> int | None:
    """The id of the collection named ``name_or_id``, else of the one with that numeric id."""
    found = s.scalar(select(Collection.id).where(Collection.name == name_or_id))
    if found is None and name_or_id.isdigit():
        found = s.scalar(select(Collection.id).where(Collection.id == int(name_or_id)))
    return None if found is None else int(found)


def tasks(s: Any, collection_id: int) -> list[tuple[Task, str, str]]:
    """(task, assessor, query external id) of the collection's tasks that are not cancelled,
    by id."""
    return list(
        s.execute(
            select(Task, User.username, Query.external_id)
            .join(User, Task.assessor_id == User.id)
            .join(Query, Task.query_id == Query.id)
            .where(Task.collection_id == collection_id, Task.status != "cancelled")
            .order_by(Task.id)
        ).all()
    )


def judgment_log(s: Any, collection_id: int) -> list[tuple[Any, ...]]:
    """The judgment log of those tasks as plain column tuples (no ORM objects: a study log has
    tens of thousands of rows): task, seq, left, right, outcome, doc_id, grade, active_ms,
    created_at, undone, reason, answered_by (the second assessor's name, or None)."""
    second = aliased(User)
    return [
        tuple(row)
        for row in s.execute(
            select(
                Judgment.task_id,
                Judgment.seq,
                Judgment.left_doc,
                Judgment.right_doc,
                Judgment.outcome,
                Judgment.doc_id,
                Judgment.grade,
                Judgment.active_ms,
                Judgment.created_at,
                Judgment.undone,
                Judgment.reason,
                second.username,
            )
            .join(Task, Judgment.task_id == Task.id)
            .outerjoin(second, second.id == Judgment.answered_by)
            .where(Task.collection_id == collection_id, Task.status != "cancelled")
            .order_by(Judgment.task_id, Judgment.seq, Judgment.id)
        )
    ]
