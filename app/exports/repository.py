"""The exports concept's SQL: the finished tasks an export reads labels from, the live pair
judgments of the raw formats, the documents' feature vectors of the LETOR formats, and the
existence checks done before the first byte. Every function runs in the caller's transaction
``tx``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Select, String, cast, select
from sqlalchemy.orm import Session, aliased

from app.kernel.models import Collection, Document, Judgment, Query, Task, User


def collection_exists(tx: Any, collection_id: int) -> bool:
    return tx.get(Collection, collection_id) is not None


def user_exists(tx: Any, username: str) -> bool:
    return tx.scalar(select(User.id).where(User.username == username)) is not None


def finished_tasks_select(collection_id: int, method: str) -> Select[Task, str, str]:
    """(task, query external id, assessor username) of the collection's finished tasks of one
    method, in query import order, then finishing order: the rows every export starts from."""
    return (
        select(Task, Query.external_id, User.username)
        .join(Query, Query.id == Task.query_id)
        .join(User, User.id == Task.assessor_id)
        .where(Task.collection_id == collection_id, Task.method == method, Task.status == "done")
        .order_by(Query.id, Task.finished_at, Task.id)
    )


def finished_tasks(
    tx: Session, collection_id: int, method: str, *, assessor: str | None, plan: str | None
) -> list[tuple[Task, str, str]]:
    """:func:`finished_tasks_select`, only ``assessor``'s and only ``plan``'s when given."""
    stmt = finished_tasks_select(collection_id, method)
    if assessor:
        stmt = stmt.where(User.username == assessor)
    if plan:
        stmt = stmt.where(Task.plan == plan)
    return [(t, q, u) for t, q, u in tx.execute(stmt)]


def topk_judgments(
    tx: Session, collection_id: int, *, assessor: str | None, plan: str | None
) -> Iterator[Any]:
    """Live judgments of the collection's topk tasks (finished or not), in task and seq
    order, as ``(judgment, task seed, query id, assessor, answered_by)``: who answered when it
    was not the assessor (a second opinion, docs/noise.md); filtered by assessor and plan;
    fetched in batches."""
    second = aliased(User)
    answered_by = select(second.username).where(second.id == Judgment.answered_by).scalar_subquery()
    stmt = (
        select(Judgment, Task.seed, Query.external_id, User.username, answered_by)
        .join(Task, Task.id == Judgment.task_id)
        .join(Query, Query.id == Task.query_id)
        .join(User, User.id == Task.assessor_id)
        .where(
            Task.collection_id == collection_id,
            Task.method == "topk",
            Judgment.undone.is_(False),
        )
        .order_by(Judgment.task_id, Judgment.seq)
        .execution_options(yield_per=1000)
    )
    if assessor:
        stmt = stmt.where(User.username == assessor)
    if plan:
        stmt = stmt.where(Task.plan == plan)
    return iter(tx.execute(stmt))


def query_features(tx: Any, collection_id: int, query_id: str) -> dict[str, Any]:
    """The feature vectors (or None) of a query's documents by document id."""
    return {
        d.external_id: d.features
        for d in tx.scalars(
            select(Document)
            .join(Query, Query.id == Document.query_id)
            .where(Document.collection_id == collection_id, Query.external_id == query_id)
        )
    }


def has_finished_tasks(
    tx: Session, collection_id: int, method: str, *, assessor: str | None, plan: str | None
) -> bool:
    """Whether :func:`finished_tasks` would find a task (one row fetched, none replayed)."""
    stmt = finished_tasks_select(collection_id, method)
    if assessor:
        stmt = stmt.where(User.username == assessor)
    if plan:
        stmt = stmt.where(Task.plan == plan)
    return tx.execute(stmt.limit(1)).first() is not None


def has_topk_judgments(
    tx: Session,
    collection_id: int,
    *,
    assessor: str | None,
    plan: str | None,
    preferences: bool = False,
    person_only: bool = False,
) -> bool:
    """Whether :func:`topk_judgments` would yield a judgment; with ``preferences`` one that
    answers a pair left or right, with ``person_only`` one a person gave."""
    stmt = (
        select(Judgment.id)
        .join(Task, Task.id == Judgment.task_id)
        .join(User, User.id == Task.assessor_id)
        .where(
            Task.collection_id == collection_id,
            Task.method == "topk",
            Judgment.undone.is_(False),
        )
    )
    if preferences:
        stmt = stmt.where(Judgment.outcome.in_(("left", "right")))
    if person_only:
        stmt = stmt.where(Judgment.source == "person")
    if assessor:
        stmt = stmt.where(User.username == assessor)
    if plan:
        stmt = stmt.where(Task.plan == plan)
    return tx.execute(stmt.limit(1)).first() is not None


def has_features(tx: Session, collection_id: int) -> bool:
    """Whether a document of the collection has a feature vector (the LETOR formats). A
    missing vector may be stored as SQL NULL or as JSON ``null`` (what an insert of None
    writes to a JSON column), so both are excluded; one row is fetched at most."""
    stmt = select(Document.id).where(
        Document.collection_id == collection_id,
        Document.features.is_not(None),
        cast(Document.features, String) != "null",
    )
    return tx.execute(stmt.limit(1)).first() is not None


def feature_set(tx: Any, collection_id: int) -> dict[str, Any] | None:
    """The collection's recorded feature set (heapjudge's text features), or None."""
    coll = tx.get(Collection, collection_id)
    return None if coll is None else coll.feature_set
