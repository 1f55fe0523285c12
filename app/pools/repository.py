"""The pools concept's SQL: a collection's queries and their documents (what a pool may hold),
the pools and their documents. Every function runs in the caller's session ``s``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import func, select

from app.kernel.models import CampaignPool, Collection, Document, PoolDocument, Query


def lock_collection(s: Any, collection_id: int) -> bool:
    """Lock the collection's row (Postgres: FOR NO KEY UPDATE, so two pools of one name cannot
    both pass the name check); False when there is no such collection."""
    found = s.execute(
        select(Collection.id).where(Collection.id == collection_id).with_for_update(key_share=True)
    ).scalar_one_or_none()
    return found is not None


def collection_exists(s: Any, collection_id: int) -> bool:
    return s.get(Collection, collection_id) is not None


def queries_by_id(s: Any, collection_id: int) -> dict[str, Query]:
    """The collection's queries by external id, in insertion order."""
    rows = s.scalars(select(Query).where(Query.collection_id == collection_id).order_by(Query.id))
    return {q.external_id: q for q in rows}


def documents_by_query(s: Any, collection_id: int) -> dict[int, set[str]]:
    """Per query row id, the external ids of its documents."""
    out: dict[int, set[str]] = {}
    rows = s.execute(
        select(Document.query_id, Document.external_id).where(
            Document.collection_id == collection_id
        )
    )
    for query_id, doc in rows:
        out.setdefault(query_id, set()).add(doc)
    return out


def document_vectors(s: Any, collection_id: int) -> dict[int, dict[str, list[float]]]:
    """Per query row id, its documents' feature vectors (rows without one left out; the
    JSON ``null`` an ORM write of None stores counts as none)."""
    out: dict[int, dict[str, list[float]]] = {}
    rows = s.execute(
        select(Document.query_id, Document.external_id, Document.features).where(
            Document.collection_id == collection_id, Document.features.is_not(None)
        )
    )
    for query_id, doc, vector in rows:
        if vector is not None:
            out.setdefault(query_id, {})[doc] = vector
    return out


def pool_named(s: Any, collection_id: int, name: str) -> CampaignPool | None:
    found: CampaignPool | None = s.scalars(
        select(CampaignPool).where(
            CampaignPool.collection_id == collection_id, CampaignPool.name == name
        )
    ).first()
    return found


#: The pool rows' columns, in the order of :func:`insert_pool`'s parameter tuples.
POOL_DOCUMENT_COLUMNS = ("query_id", "doc_id", "position", "pick", "fused", "hits")


def pool_document_params(rows: Iterable[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
    """The rows as :func:`insert_pool` takes them: tuples in :data:`POOL_DOCUMENT_COLUMNS`
    order, ``hits`` as its JSON text (what the JSON column stores; ``json.dumps``, as the
    column's own serializer). Built before the write transaction opens."""
    return [
        (r["query_id"], r["doc_id"], r["position"], r["pick"], r["fused"], json.dumps(r["hits"]))
        for r in rows
    ]


def insert_pool(s: Any, pool: CampaignPool, params: Sequence[tuple[Any, ...]]) -> int:
    """Add the pool and its documents (:func:`pool_document_params`), the documents by one
    executemany of the driver (no per-row work of the ORM or of SQLAlchemy's type processing
    while the write lock is held: the build's write transaction stays short,
    docs/performance.md#pool-builds); the pool's new id."""
    s.add(pool)
    s.flush()
    if params:
        conn = s.connection()
        sqlite = conn.dialect.name == "sqlite"
        mark, hits = ("?", "?") if sqlite else ("%s", "%s::jsonb")
        sql = (
            "INSERT INTO pool_document (pool_id, query_id, doc_id, position, pick, fused, hits) "
            f"VALUES ({', '.join([mark] * 6)}, {hits})"
        )
        conn.exec_driver_sql(sql, [(pool.id, *p) for p in params])
    return pool.id


def get_pool(s: Any, pool_id: int) -> CampaignPool | None:
    found: CampaignPool | None = s.get(CampaignPool, pool_id)
    return found


def pools_of(s: Any, collection_id: int) -> list[CampaignPool]:
    """The collection's pools, newest first."""
    return list(
        s.scalars(
            select(CampaignPool)
            .where(CampaignPool.collection_id == collection_id)
            .order_by(CampaignPool.id.desc())
        )
    )


def picked_counts(s: Any, pool_ids: Sequence[int]) -> dict[int, tuple[int, int]]:
    """Per pool: (documents in the depth pools, documents picked)."""
    rows = s.execute(
        select(PoolDocument.pool_id, func.count(), func.count(PoolDocument.pick))
        .where(PoolDocument.pool_id.in_(pool_ids))
        .group_by(PoolDocument.pool_id)
    )
    return {pid: (int(total), int(picked)) for pid, total, picked in rows}


def pool_documents(
    s: Any, pool_id: int, query_ids: Sequence[str] | None = None
) -> list[tuple[str, PoolDocument]]:
    """(query external id, document) of a pool, by query then fused position."""
    stmt = (
        select(Query.external_id, PoolDocument)
        .join(Query, Query.id == PoolDocument.query_id)
        .where(PoolDocument.pool_id == pool_id)
        .order_by(Query.id, PoolDocument.position)
    )
    if query_ids is not None:
        stmt = stmt.where(Query.external_id.in_(list(query_ids)))
    return [(qid, row) for qid, row in s.execute(stmt)]
