"""The collections concept's SQL: collections with their counts, queries, documents, and the
NDJSON import's reads and bulk insert. Every function runs in the caller's transaction ``tx``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, insert, select

from app.kernel.models import Collection, Document, Query, SecondOpinion, Task

#: Document ids per ``IN (...)`` list when reading documents by id.
ID_CHUNK = 500


def collection_named(tx: Any, name: str) -> Collection | None:
    return tx.scalar(select(Collection).where(Collection.name == name))  # type: ignore[no-any-return]


def collection_by_id(tx: Any, collection_id: int) -> Collection | None:
    return tx.get(Collection, collection_id)  # type: ignore[no-any-return]


def add_collection(tx: Any, coll: Collection) -> None:
    tx.add(coll)
    tx.flush()


def visible_to(assessor_id: int) -> Any:
    """The ids of the collections an assessor may see (docs/security.md#roles): those holding
    one of its tasks, or a task that routed a second opinion to it, as a SQL subquery."""
    own = select(Task.collection_id).where(Task.assessor_id == assessor_id)
    routed = (
        select(Task.collection_id)
        .join(SecondOpinion, SecondOpinion.task_id == Task.id)
        .where(SecondOpinion.assignee_id == assessor_id)
    )
    return own.union(routed)


def collections(tx: Any, ids: list[int] | None, assessor_id: int | None = None) -> list[Collection]:
    """Collections by id order (only ``ids`` when given; only those :func:`visible_to`
    ``assessor_id`` when given)."""
    stmt = select(Collection).order_by(Collection.id)
    if ids is not None:
        stmt = stmt.where(Collection.id.in_(ids))
    if assessor_id is not None:
        stmt = stmt.where(Collection.id.in_(visible_to(assessor_id)))
    return list(tx.scalars(stmt))


def collection_visible(tx: Any, collection_id: int, assessor_id: int | None) -> Collection | None:
    """The collection if it exists and (for an ``assessor_id``) is :func:`visible_to` it."""
    found = collections(tx, [collection_id], assessor_id)
    return found[0] if found else None


def collection_counts(tx: Any, cids: list[int]) -> dict[str, dict[int, Any]]:
    """Per collection id: ``queries``, ``documents`` (query-document pairs), ``distinct``
    (distinct document ids) and ``tasks`` (count by status)."""
    nq = dict(
        tx.execute(
            select(Query.collection_id, func.count())
            .where(Query.collection_id.in_(cids))
            .group_by(Query.collection_id)
        ).all()
    )
    nd = dict(
        tx.execute(
            select(Document.collection_id, func.count())
            .where(Document.collection_id.in_(cids))
            .group_by(Document.collection_id)
        ).all()
    )
    ndistinct = dict(
        tx.execute(
            select(Document.collection_id, func.count(func.distinct(Document.external_id)))
            .where(Document.collection_id.in_(cids))
            .group_by(Document.collection_id)
        ).all()
    )
    tasks: dict[int, dict[str, int]] = {cid: {} for cid in cids}
    for cid, status, count in tx.execute(
        select(Task.collection_id, Task.status, func.count())
        .where(Task.collection_id.in_(cids))
        .group_by(Task.collection_id, Task.status)
    ):
        tasks[cid][status] = count
    return {"queries": nq, "documents": nd, "distinct": ndistinct, "tasks": tasks}


def queries_with_counts(tx: Any, collection_id: int) -> list[tuple[Query, int]]:
    """The collection's queries in import order, each with its number of documents."""
    rows = tx.execute(
        select(Query, func.count(Document.id))
        .outerjoin(Document, Document.query_id == Query.id)
        .where(Query.collection_id == collection_id)
        .group_by(Query.id)
        .order_by(Query.id)
    ).all()
    return [(q, int(n)) for q, n in rows]


def documents_per_query(tx: Any, collection_id: int) -> dict[str, int]:
    """Number of documents per query external id (queries with documents)."""
    rows = tx.execute(
        select(Query.external_id, func.count(Document.id))
        .join(Document, Document.query_id == Query.id)
        .where(Query.collection_id == collection_id)
        .group_by(Query.external_id)
    ).all()
    return {q: int(n) for q, n in rows}


def queries_by_id(tx: Any, collection_id: int) -> dict[str, Query]:
    """The collection's queries by external id."""
    return {
        q.external_id: q
        for q in tx.scalars(select(Query).where(Query.collection_id == collection_id))
    }


def stored_documents(tx: Any, collection_id: int, doc_ids: Sequence[str]) -> list[Any]:
    """Rows ``(query_id, external_id, title, text, html, content_hash)`` of the collection's
    documents (under any query) whose external id is in ``doc_ids``, read :data:`ID_CHUNK`
    ids at a time; plain rows, not ORM objects (an import's session does not keep them)."""
    cols = (
        Document.query_id,
        Document.external_id,
        Document.title,
        Document.text,
        Document.html,
        Document.content_hash,
    )
    out: list[Any] = []
    for start in range(0, len(doc_ids), ID_CHUNK):
        chunk = doc_ids[start : start + ID_CHUNK]
        out.extend(
            tx.execute(
                select(*cols).where(
                    Document.collection_id == collection_id, Document.external_id.in_(chunk)
                )
            )
        )
    return out


def insert_documents(tx: Any, rows: list[dict[str, Any]]) -> None:
    """Insert document rows (column dicts) in one executemany."""
    if rows:
        tx.execute(insert(Document), rows)


def documents_by_pair(tx: Any, collection_id: int) -> dict[tuple[str, str], Document]:
    """The collection's documents by (query external id, document external id)."""
    stmt = (
        select(Document, Query.external_id)
        .join(Query, Query.id == Document.query_id)
        .where(Document.collection_id == collection_id)
    )
    return {(qid, d.external_id): d for d, qid in tx.execute(stmt)}


def forget_feature_set(tx: Any, collection_id: int) -> None:
    """Imported vectors were written: the collection's vectors are no longer (all)
    heapjudge's text features (docs/features.md#stored-features)."""
    coll = tx.get(Collection, collection_id)
    if coll is not None and coll.feature_set is not None:
        coll.feature_set = None
