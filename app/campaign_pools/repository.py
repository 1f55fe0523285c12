"""The pools concept's SQL: a collection's queries and their documents (what a pool may hold),
the pools and their documents. Every function runs in the caller's transaction ``tx``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update

from app.kernel.models import CampaignPool, Collection, Document, PoolDocument, Query


def lock_collection(tx: Any, collection_id: int) -> bool:
    """Lock the collection's row (Postgres: FOR NO KEY UPDATE, so two pools of one name cannot
    both pass the name check); False when there is no such collection."""
    found = tx.execute(
        select(Collection.id).where(Collection.id == collection_id).with_for_update(key_share=True)
    ).scalar_one_or_none()
    return found is not None


def collection_exists(tx: Any, collection_id: int) -> bool:
    return tx.get(Collection, collection_id) is not None


def queries_by_id(tx: Any, collection_id: int) -> dict[str, Query]:
    """The collection's queries by external id, in insertion order."""
    rows = tx.scalars(select(Query).where(Query.collection_id == collection_id).order_by(Query.id))
    return {q.external_id: q for q in rows}


def documents_by_query(tx: Any, collection_id: int) -> dict[int, set[str]]:
    """Per query row id, the external ids of its documents."""
    out: dict[int, set[str]] = {}
    rows = tx.execute(
        select(Document.query_id, Document.external_id).where(
            Document.collection_id == collection_id
        )
    )
    for query_id, doc in rows:
        out.setdefault(query_id, set()).add(doc)
    return out


def document_vectors(tx: Any, collection_id: int) -> dict[int, dict[str, list[float]]]:
    """Per query row id, its documents' feature vectors (rows without one left out; the
    JSON ``null`` an ORM write of None stores counts as none)."""
    out: dict[int, dict[str, list[float]]] = {}
    rows = tx.execute(
        select(Document.query_id, Document.external_id, Document.features).where(
            Document.collection_id == collection_id, Document.features.is_not(None)
        )
    )
    for query_id, doc, vector in rows:
        if vector is not None:
            out.setdefault(query_id, {})[doc] = vector
    return out


def pool_named(tx: Any, collection_id: int, name: str) -> CampaignPool | None:
    found: CampaignPool | None = tx.scalars(
        select(CampaignPool).where(
            CampaignPool.collection_id == collection_id, CampaignPool.name == name
        )
    ).first()
    return found


#: The pool rows' columns, in the order of :func:`insert_pool_rows`'s parameter tuples.
POOL_DOCUMENT_COLUMNS = ("query_id", "doc_id", "position", "pick", "fused", "hits")


def pool_document_params(rows: Iterable[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
    """The rows as :func:`insert_pool_rows` takes them: tuples in :data:`POOL_DOCUMENT_COLUMNS`
    order, ``hits`` as its JSON text (what the JSON column stores; ``json.dumps``, as the
    column's own serializer). Built before the write transaction opens."""
    return [
        (r["query_id"], r["doc_id"], r["position"], r["pick"], r["fused"], json.dumps(r["hits"]))
        for r in rows
    ]


def add_building_pool(tx: Any, pool: CampaignPool) -> int:
    """Add the pool, marked ``building`` (no reader uses it until :func:`mark_ready`); its new
    id. Its documents follow in batches (:func:`insert_pool_rows`)."""
    pool.status = "building"
    tx.add(pool)
    tx.flush()
    return pool.id


def insert_pool_rows(tx: Any, pool_id: int, params: Sequence[tuple[Any, ...]]) -> None:
    """Add a batch of the pool's documents (:func:`pool_document_params`) by one executemany
    of the driver (no per-row work of the ORM or of SQLAlchemy's type processing while the
    write lock is held: each batch's write transaction stays short,
    docs/performance.md#pool-builds)."""
    if not params:
        return
    conn = tx.connection()
    sqlite = conn.dialect.name == "sqlite"
    mark, hits = ("?", "?") if sqlite else ("%s", "%s::jsonb")
    sql = (
        "INSERT INTO pool_document (pool_id, query_id, doc_id, position, pick, fused, hits) "
        f"VALUES ({', '.join([mark] * 6)}, {hits})"
    )
    conn.exec_driver_sql(sql, [(pool_id, *p) for p in params])


def mark_ready(tx: Any, pool_id: int) -> bool:
    """The pool's last batch is in: ``ready`` (listed, shown, planned from). False when the
    pool is gone (a stale build's clean-up deleted it)."""
    done = tx.execute(
        update(CampaignPool)
        .where(CampaignPool.id == pool_id, CampaignPool.status == "building")
        .values(status="ready")
    )
    return bool(done.rowcount == 1)


def delete_pool(tx: Any, pool_id: int) -> None:
    """Delete a pool and its documents (a failed build's clean-up)."""
    tx.execute(delete(PoolDocument).where(PoolDocument.pool_id == pool_id))
    tx.execute(delete(CampaignPool).where(CampaignPool.id == pool_id))


def delete_stale_builds(tx: Any, collection_id: int, started_before: datetime) -> int:
    """Delete the collection's pools still ``building`` that were started before
    ``started_before`` (a build that crashed between its batches) and their documents; how
    many pools."""
    stale = list(
        tx.scalars(
            select(CampaignPool.id).where(
                CampaignPool.collection_id == collection_id,
                CampaignPool.status == "building",
                CampaignPool.created_at < started_before,
            )
        )
    )
    for pool_id in stale:
        delete_pool(tx, pool_id)
    return len(stale)


def get_pool(tx: Any, pool_id: int) -> CampaignPool | None:
    found: CampaignPool | None = tx.get(CampaignPool, pool_id)
    return found


def pools_of(tx: Any, collection_id: int) -> list[CampaignPool]:
    """The collection's pools, newest first, building ones too (their ``status`` says)."""
    return list(
        tx.scalars(
            select(CampaignPool)
            .where(CampaignPool.collection_id == collection_id)
            .order_by(CampaignPool.id.desc())
        )
    )


def picked_counts(tx: Any, pool_ids: Sequence[int]) -> dict[int, tuple[int, int]]:
    """Per pool: (documents in the depth pools, documents picked)."""
    rows = tx.execute(
        select(PoolDocument.pool_id, func.count(), func.count(PoolDocument.pick))
        .where(PoolDocument.pool_id.in_(pool_ids))
        .group_by(PoolDocument.pool_id)
    )
    return {pid: (int(total), int(picked)) for pid, total, picked in rows}


def pool_documents(
    tx: Any, pool_id: int, query_ids: Sequence[str] | None = None
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
    return [(qid, row) for qid, row in tx.execute(stmt)]
