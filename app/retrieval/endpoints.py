"""REST API v1: BM25 over a collection (admins only; ``docs/retrieval.md``).

* ``GET /admin/collections/{id}/bm25?depth=100&k1=1.2&b=0.75[&query_id=...]&format=trec|json``
  — the BM25 run: a TREC run file (download) or JSON (summary and hits per query);
* ``GET /admin/collections/{id}/bm25/order?query_id=Q`` — one query's documents best first
  (the prior order a top-k task can start from, option ``initial_order``).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Query
from fastapi.responses import PlainTextResponse, Response

from app.http.deps import DbDep, require_admin
from app.http.openapi import declare_errors
from app.http.schemas import PathId
from app.retrieval import service as retrieval
from app.retrieval.schemas import Bm25HitOut, Bm25OrderOut, Bm25RunOut

router = APIRouter(prefix="/admin", tags=["retrieval"], dependencies=[Depends(require_admin)])


@router.get(
    "/collections/{collection_id}/bm25",
    response_model=None,
    responses={
        200: {
            "description": "format=trec: the TREC run file (download); format=json: the run.",
            "model": Bm25RunOut,
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    },
)
def bm25_run(
    collection_id: PathId,
    db: DbDep,
    depth: int = Query(100, ge=1, le=retrieval.MAX_DEPTH),
    k1: float | None = Query(None, ge=0, le=100),
    b: float | None = Query(None, ge=0, le=1),
    query_id: list[str] | None = Query(None, description="Only these queries (repeatable)."),
    format: Literal["trec", "json"] = "trec",
) -> Response | Bm25RunOut:
    """BM25 run over the collection's documents, ids as imported (evaluates against the
    original qrels file)."""
    run = retrieval.bm25_run(
        db=db, collection_id=collection_id, depth=depth, query_ids=query_id, k1=k1, b=b
    )
    if format == "json":
        return Bm25RunOut(
            **run.summary(),
            hits={
                q: [Bm25HitOut(doc_id=h.doc_id, score=h.score) for h in hits]
                for q, hits in run.hits.items()
            },
        )
    return PlainTextResponse(
        run.trec(),
        headers={
            "Content-Disposition": f'attachment; filename="collection-{collection_id}-bm25.run"'
        },
    )


@router.get("/collections/{collection_id}/bm25/order", response_model=Bm25OrderOut)
def bm25_order(
    collection_id: PathId,
    db: DbDep,
    query_id: str,
    k1: float | None = Query(None, ge=0, le=100),
    b: float | None = Query(None, ge=0, le=1),
) -> dict[str, Any]:
    """The query's documents best first by BM25 (ties by document id descending)."""
    order = retrieval.bm25_order(db=db, collection_id=collection_id, query_id=query_id, k1=k1, b=b)
    return {"query_id": query_id, "order": order}


declare_errors(router)
