"""REST API v1: the study analysis of a collection (admin only).

``GET /api/v1/collections/{id}/analysis?mode=direct|inferred`` returns Table 1 (time), the
agreement tables of both methods (pooled, per query, per assessor pair), the χ² tests (Pearson
and Yates, overall and ignoring ties), position bias, self-consistency, transitivity and the
top-k overlap, as built by :func:`app.analysis.service.collection_analysis`.

``GET /api/v1/collections/{id}/analysis/calibration?judge=...&bins=10`` returns the
calibration report of its machine judges against people
(:func:`app.analysis.calibration.calibration_report`), and ``.../calibration.svg`` one
judge's reliability diagram (docs/machine-judges.md#the-calibration-report).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from app.analysis.calibration import MAX_BINS, calibration_report, calibration_svg
from app.analysis.schemas import AnalysisOut, CalibrationOut
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


JUDGE = Query(
    None,
    description="One judge: its version (as in task_machine.judge, e.g. "
    "'bm25/k1=1.2/b=0.75/scale=1') or its source ('bm25', 'model:7', 'llm').",
)
BINS = Query(10, ge=1, le=MAX_BINS, description="Equal-width confidence bins over [0.5, 1].")


@router.get("/collections/{collection_id}/analysis/calibration", response_model=CalibrationOut)
async def get_calibration(
    collection_id: PathId,
    _admin: AdminUser,
    db: DbDep,
    judge: str | None = JUDGE,
    bins: int = BINS,
) -> dict[str, Any]:
    """The calibration report of the collection's machine judges against people's answers
    (docs/machine-judges.md#the-calibration-report)."""
    return await run_in_threadpool(calibration_report, collection_id, db=db, judge=judge, bins=bins)


@router.get(
    "/collections/{collection_id}/analysis/calibration.svg",
    response_class=Response,
    responses={200: {"content": {"image/svg+xml": {}}}},
)
async def get_calibration_svg(
    collection_id: PathId,
    _admin: AdminUser,
    db: DbDep,
    judge: str | None = JUDGE,
    bins: int = BINS,
) -> Response:
    """One judge's reliability diagram as SVG (``judge`` needed when there are several)."""
    svg = await run_in_threadpool(calibration_svg, collection_id, db=db, judge=judge, bins=bins)
    return Response(svg, media_type="image/svg+xml")


declare_errors(router)
