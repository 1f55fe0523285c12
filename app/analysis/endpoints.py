"""REST API v1: the study analysis of a collection (admin only).

``GET /api/v1/collections/{id}/analysis?mode=direct|inferred`` returns Table 1 (time), the
agreement tables of both methods (pooled, per query, per assessor pair), the χ² tests (Pearson
and Yates, overall and ignoring ties), position bias, self-consistency, transitivity and the
top-k overlap, as built by :func:`app.analysis.service.collection_analysis`.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from app.analysis.schemas import AnalysisOut
from app.analysis.service import collection_analysis
from app.http.deps import AdminUser, DbDep
from app.http.openapi import declare_errors
from app.http.schemas import PathId

router = APIRouter(tags=["analysis"])


@router.get("/collections/{collection_id}/analysis", response_model=AnalysisOut)
async def get_analysis(
    collection_id: PathId,
    _admin: AdminUser,
    db: DbDep,
    mode: Literal["direct", "inferred"] = Query(
        "direct",
        description="Top-k relations: pairs both assessors compared ('direct') or those implied "
        "by each assessor's top-k ground truth ('inferred'; rest×rest pairs count as ties).",
    ),
) -> dict[str, Any]:
    """The agreement and time analysis of a collection (docs/analysis.md)."""
    return await run_in_threadpool(collection_analysis, collection_id, db=db, mode=mode)


declare_errors(router)
