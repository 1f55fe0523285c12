"""The retrieval concept's SQL: what the BM25 index is built from (each distinct document's
first stored row), the fingerprint that tells a cached index is still current, and the
queries' texts. Every function runs in the caller's transaction ``tx``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import func, select

from app.kernel.models import Collection, Document, Query


def collection_exists(tx: Any, collection_id: int) -> bool:
    return tx.get(Collection, collection_id) is not None


def document_counts(tx: Any, collection_id: int) -> tuple[int, int]:
    """(number of document rows, highest row id) of the collection (0, 0 when empty)."""
    count, top = tx.execute(
        select(func.count(Document.id), func.max(Document.id)).where(
            Document.collection_id == collection_id
        )
    ).one()
    return int(count or 0), int(top or 0)


def content_hashes(tx: Any, collection_id: int) -> Iterator[str]:
    """The collection's documents' content hashes in row order."""
    for (h,) in tx.execute(
        select(Document.content_hash)
        .where(Document.collection_id == collection_id)
        .order_by(Document.id)
    ):
        yield h


def distinct_documents(tx: Any, collection_id: int) -> Iterator[tuple[str, str, Any, Any]]:
    """(doc id, title, text, html) of each distinct document id's first stored row, in row
    order (content is per collection, so that row stands for all)."""
    first = (
        select(func.min(Document.id))
        .where(Document.collection_id == collection_id)
        .group_by(Document.external_id)
    )
    yield from tx.execute(
        select(Document.external_id, Document.title, Document.text, Document.html)
        .where(Document.id.in_(first))
        .order_by(Document.id)
    )


def query_texts(tx: Any, collection_id: int) -> dict[str, str]:
    """Each query's text (its title) by external id, in import order."""
    rows = tx.execute(
        select(Query.external_id, Query.title)
        .where(Query.collection_id == collection_id)
        .order_by(Query.id)
    ).all()
    return {qid: title for qid, title in rows}


def query_doc_ids(tx: Any, collection_id: int, query_id: str) -> list[str]:
    """The document ids of one query, in insertion order."""
    return list(
        tx.scalars(
            select(Document.external_id)
            .join(Query, Query.id == Document.query_id)
            .where(Query.collection_id == collection_id, Query.external_id == query_id)
            .order_by(Document.id)
        )
    )
