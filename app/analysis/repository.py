"""The analysis concept's SQL: a collection's tasks (cancelled ones left out) and their
judgment log as plain column tuples, read in the caller's transaction ``tx``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import aliased

from app.kernel.models import (
    Collection,
    Judgment,
    MachineScore,
    PairOpinion,
    Query,
    Task,
    TaskMachine,
    User,
)


def collection_by_id(tx: Any, collection_id: int) -> Collection | None:
    return tx.get(Collection, collection_id)  # type: ignore[no-any-return]


def collection_id_of(tx: Any, name_or_id: str) -> int | None:
    """The id of the collection named ``name_or_id``, else of the one with that numeric id."""
    found = tx.scalar(select(Collection.id).where(Collection.name == name_or_id))
    if found is None and name_or_id.isdigit():
        found = tx.scalar(select(Collection.id).where(Collection.id == int(name_or_id)))
    return None if found is None else int(found)


def tasks(tx: Any, collection_id: int) -> list[tuple[Task, str, str]]:
    """(task, assessor, query external id) of the collection's tasks that are not cancelled,
    by id."""
    return list(
        tx.execute(
            select(Task, User.username, Query.external_id)
            .join(User, Task.assessor_id == User.id)
            .join(Query, Task.query_id == Query.id)
            .where(Task.collection_id == collection_id, Task.status != "cancelled")
            .order_by(Task.id)
        ).all()
    )


def judgment_log(tx: Any, collection_id: int) -> list[tuple[Any, ...]]:
    """The judgment log of those tasks as plain column tuples (no ORM objects: a study log has
    tens of thousands of rows): task, seq, left, right, outcome, doc_id, grade, active_ms,
    created_at, undone, reason, answered_by (the second assessor's name, or None), source
    (``person`` or ``machine``), probability and machine_version (a machine's answer)."""
    second = aliased(User)
    return [
        tuple(row)
        for row in tx.execute(
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
                Judgment.source,
                Judgment.probability,
                Judgment.machine_version,
            )
            .join(Task, Judgment.task_id == Task.id)
            .outerjoin(second, second.id == Judgment.answered_by)
            .where(Task.collection_id == collection_id, Task.status != "cancelled")
            .order_by(Judgment.task_id, Judgment.seq, Judgment.id)
        )
    ]


def machine_tasks(tx: Any, collection_id: int) -> list[tuple[int, str, str]]:
    """(task id, judge version, query external id) of the collection's tasks with a machine
    judge, not cancelled."""
    return [
        (int(t), str(j), str(q))
        for t, j, q in tx.execute(
            select(TaskMachine.task_id, TaskMachine.judge, Query.external_id)
            .join(Task, Task.id == TaskMachine.task_id)
            .join(Query, Query.id == Task.query_id)
            .where(Task.collection_id == collection_id, Task.status != "cancelled")
            .order_by(TaskMachine.task_id)
        )
    ]


def machine_scores(tx: Any, task_ids: list[int]) -> dict[int, dict[str, float]]:
    """Raw scores per document of the tasks (``machine_score``)."""
    out: dict[int, dict[str, float]] = {}
    if task_ids:
        rows = tx.execute(
            select(MachineScore.task_id, MachineScore.doc_id, MachineScore.score).where(
                MachineScore.task_id.in_(task_ids)
            )
        )
        for task_id, doc, score in rows:
            out.setdefault(task_id, {})[doc] = float(score)
    return out


def machine_opinions(tx: Any, task_ids: list[int]) -> dict[int, dict[tuple[str, str], float]]:
    """Prepared raw P(first better) per ordered pair of the tasks (``machine_opinion``)."""
    out: dict[int, dict[tuple[str, str], float]] = {}
    if task_ids:
        rows = tx.execute(
            select(
                PairOpinion.task_id,
                PairOpinion.first_doc,
                PairOpinion.second_doc,
                PairOpinion.probability,
            ).where(PairOpinion.task_id.in_(task_ids))
        )
        for task_id, a, b, p in rows:
            out.setdefault(task_id, {})[(a, b)] = float(p)
    return out


def machine_calibrations(
    tx: Any, task_ids: list[int], *, content: bool = True
) -> dict[int, tuple[str, dict[str, Any] | None, datetime | None]]:
    """(source, frozen study calibration or None, when it was frozen) of the tasks' machines
    (``task_machine``); without ``content``, the calibration is not read (None: a frozen one
    is a large JSON document, and frozen once, so its time tells whether it changed)."""
    out: dict[int, tuple[str, dict[str, Any] | None, datetime | None]] = {}
    if task_ids:
        columns = [TaskMachine.task_id, TaskMachine.source, TaskMachine.calibrated_at]
        if content:
            columns.append(TaskMachine.calibration)
        rows = tx.execute(select(*columns).where(TaskMachine.task_id.in_(task_ids)))
        for row in rows:
            calibration = row[3] if content else None
            out[int(row[0])] = (str(row[1]), calibration, row[2])
    return out
