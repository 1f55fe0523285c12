"""The planning concept's SQL: what a plan is checked against (queries, users, documents, the
tasks that exist) and the lock that serialises plan creation on a collection. Every function
runs in the caller's transaction ``tx`` (a read or a write one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select

from app.kernel.models import Collection, Document, Query, Task, User

#: A task that exists on an (assessor, query): ``(method, task id)``.
ExistingTask = tuple[str, int]


def collection_exists(tx: Any, collection_id: int) -> bool:
    return tx.get(Collection, collection_id) is not None


def lock_collection(tx: Any, collection_id: int) -> bool:
    """Lock the collection's row for plan creation; False when there is no such collection.

    Postgres: FOR NO KEY UPDATE (key_share=True) conflicts with itself, so plans on one
    collection queue here just as with FOR UPDATE, yet it leaves alone the KEY SHARE locks
    that foreign-key checks of other inserts take on the row (imports, single tasks). SQLite
    ignores the clause: BEGIN IMMEDIATE has serialised the writer already."""
    locked = tx.execute(
        select(Collection.id).where(Collection.id == collection_id).with_for_update(key_share=True)
    ).scalar_one_or_none()
    return locked is not None


def queries_by_id(tx: Any, collection_id: int) -> dict[str, Query]:
    """The collection's queries by external id, in insertion order."""
    rows = tx.scalars(select(Query).where(Query.collection_id == collection_id).order_by(Query.id))
    return {q.external_id: q for q in rows}


def users_by_name(tx: Any, names: Sequence[str]) -> dict[str, User]:
    return {u.username: u for u in tx.scalars(select(User).where(User.username.in_(names)))}


def collection_doc_ids(tx: Any, collection_id: int) -> set[str]:
    """The external ids of every document of the collection (any query)."""
    return set(
        tx.scalars(
            select(Document.external_id).where(Document.collection_id == collection_id).distinct()
        )
    )


def query_documents(tx: Any, query_id: int) -> list[Document]:
    """A query's documents in insertion order."""
    return list(
        tx.scalars(select(Document).where(Document.query_id == query_id).order_by(Document.id))
    )


def active_tasks(tx: Any, collection_id: int) -> dict[tuple[str, str], list[ExistingTask]]:
    """The collection's tasks that are not cancelled, by (assessor name, query external id)."""
    rows = tx.execute(
        select(User.username, Query.external_id, Task.method, Task.id)
        .join(User, User.id == Task.assessor_id)
        .join(Query, Query.id == Task.query_id)
        .where(Task.collection_id == collection_id, Task.status != "cancelled")
    ).all()
    have: dict[tuple[str, str], list[ExistingTask]] = {}
    for name, qid, method, tid in rows:
        have.setdefault((name, qid), []).append((method, tid))
    return have
