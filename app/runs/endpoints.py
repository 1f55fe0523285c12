"""REST API v1: runs stored on a collection, its label sets, leaderboards and the agreement of
two label sets (admin; 403 for assessors). docs/rest-api.md#runs.

* ``POST /admin/collections/{id}/runs`` — multipart: one part ``run`` per TREC run file (up to
  8), optional field ``name`` (one file); all or nothing, 422 with file and line;
* ``GET /admin/collections/{id}/runs``, ``DELETE /admin/collections/{id}/runs/{run_id}``;
* ``GET /admin/collections/{id}/label-sets``;
* ``GET /admin/collections/{id}/leaderboard?label_set=&metric=&preset=&test=&correction=
  &alpha=&run=``;
* ``GET /admin/collections/{id}/agreement?label_set=&against=&metric=...&run=``.

The comparisons are bounded (:mod:`app.runs.evaluation`): at most ``compare_max_runs`` runs
(``run``, once per run, chooses them), a time budget, and the work stops when the client
disconnects (:func:`app.http.bounded.run_bounded`).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from app.collections.uploads import UploadedFile
from app.http.bounded import run_bounded
from app.http.deps import (
    MAX_UPLOAD_FIELDS,
    MAX_UPLOAD_FILES,
    AdminUser,
    DbDep,
    require_admin,
    upload_form,
)
from app.http.openapi import declare_errors, error_responses
from app.http.schemas import PathId
from app.kernel.errors import Invalid
from app.runs import evaluation, labelsets
from app.runs import service as runs
from app.runs.schemas import (
    AgreementOut,
    LabelSetsOut,
    LeaderboardOut,
    RunDeletedOut,
    RunListOut,
    RunsUploadOut,
)
from ranking.compare.significance import CORRECTIONS, TESTS

router = APIRouter(prefix="/admin", tags=["runs"], dependencies=[Depends(require_admin)])

RUN_PART = "run"
UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": f"One part {RUN_PART!r} per TREC run file ('qid Q0 docno rank score "
        f"tag' lines), up to {MAX_UPLOAD_FILES}; optional field 'name' (one file only; "
        "default: the file's name).",
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        RUN_PART: {
                            "type": "array",
                            "items": {"type": "string", "format": "binary"},
                        },
                        "name": {"type": "string", "maxLength": 200},
                    },
                    "required": [RUN_PART],
                }
            }
        },
    }
}

LabelSetParam = Annotated[
    str,
    Query(
        description="A label set key (GET .../label-sets).",
        json_schema_extra={"enum": list(labelsets.LABEL_SETS)},
    ),
]
MetricParam = Annotated[
    str,
    Query(
        max_length=100,
        description="One metric: heapjudge's names (ndcg@10, map, p@10, kappa-ndcg@10, ...) or "
        "ir-measures names (nDCG@10, AP, P(rel=2)@10, ...).",
    ),
]
PresetParam = Annotated[
    str | None,
    Query(max_length=40, description="Conventions preset (default: the one that fits the input)."),
]
TestParam = Annotated[str, Query(json_schema_extra={"enum": list(TESTS)})]
CorrectionParam = Annotated[str, Query(json_schema_extra={"enum": list(CORRECTIONS)})]
AlphaParam = Annotated[float, Query(gt=0, lt=1)]
RunsParam = Annotated[
    list[str] | None,
    Query(
        description="The runs to compare, by name, once per run (default: every stored run); "
        "at most HEAPJUDGE_COMPARE_MAX_RUNS (50).",
    ),
]


@router.post(
    "/collections/{collection_id}/runs",
    response_model=RunsUploadOut,
    status_code=201,
    openapi_extra=UPLOAD_BODY,
    responses=error_responses(413),
)
async def upload_runs(
    collection_id: PathId,
    request: Request,
    db: DbDep,
    user: AdminUser,
    ignore_unknown_queries: bool = False,
) -> dict[str, Any]:
    """Upload TREC runs to the collection (all or nothing)."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise Invalid(f"upload the runs as multipart/form-data (parts {RUN_PART!r})")
    form, within_limits = await upload_form(request)
    if not within_limits:
        raise Invalid(
            f"too many parts: at most {MAX_UPLOAD_FILES} files and {MAX_UPLOAD_FIELDS} fields"
        )
    files = [
        UploadedFile(value.filename or RUN_PART, value.file)
        for key, value in form.multi_items()
        if key == RUN_PART and isinstance(value, UploadFile)
    ]
    name = form.get("name")
    report = await run_in_threadpool(
        runs.upload_runs,
        db=db,
        collection_id=collection_id,
        files=files,
        name=name if isinstance(name, str) else None,
        uploaded_by=user.id,
        ignore_unknown_queries=ignore_unknown_queries,
    )
    return asdict(report)


@router.get("/collections/{collection_id}/runs", response_model=RunListOut)
def list_runs(collection_id: PathId, db: DbDep) -> dict[str, Any]:
    """The collection's runs, by upload order."""
    found = runs.list_runs(db=db, collection_id=collection_id)
    return {"collection_id": collection_id, "runs": [asdict(r) for r in found]}


@router.delete("/collections/{collection_id}/runs/{run_id}", response_model=RunDeletedOut)
def delete_run(collection_id: PathId, run_id: PathId, db: DbDep) -> dict[str, Any]:
    """Delete a run and its entries."""
    return {"deleted": asdict(runs.delete_run(db=db, collection_id=collection_id, run=run_id))}


@router.get("/collections/{collection_id}/label-sets", response_model=LabelSetsOut)
def label_sets(collection_id: PathId, db: DbDep) -> dict[str, Any]:
    """The collection's label sets (stable keys) and how many queries each labels."""
    found = labelsets.label_sets(db=db, collection_id=collection_id)
    return {
        "collection_id": collection_id,
        "label_sets": [{**asdict(ls), "available": ls.available} for ls in found],
    }


@router.get("/collections/{collection_id}/leaderboard", response_model=LeaderboardOut)
async def leaderboard(
    collection_id: PathId,
    request: Request,
    db: DbDep,
    label_set: LabelSetParam = "qrels",
    metric: MetricParam = "ndcg@10",
    preset: PresetParam = None,
    test: TestParam = "t",
    correction: CorrectionParam = "holm",
    alpha: AlphaParam = 0.05,
    per_query: bool = False,
    run: RunsParam = None,
) -> dict[str, Any]:
    """Every run's mean and 95% interval under one label set and metric, and the matrix of
    pairwise significance tests (seed fixed)."""
    scoring = evaluation.Scoring(label_set, metric, preset or None, test, correction, alpha)
    budget = evaluation.request_budget(db)
    return await run_bounded(
        request,
        budget,
        evaluation.run_leaderboard,
        db=db,
        collection_id=collection_id,
        scoring=scoring,
        per_query=per_query,
        names=run,
        budget=budget,
    )


@router.get("/collections/{collection_id}/agreement", response_model=AgreementOut)
async def agreement(
    collection_id: PathId,
    request: Request,
    db: DbDep,
    against: LabelSetParam,
    label_set: LabelSetParam = "qrels",
    metric: MetricParam = "ndcg@10",
    preset: PresetParam = None,
    test: TestParam = "t",
    correction: CorrectionParam = "holm",
    alpha: AlphaParam = 0.05,
    run: RunsParam = None,
) -> dict[str, Any]:
    """The system orderings of the stored runs under two label sets: Kendall's τ-b, τ_AP and
    the significant swaps (``label_set`` is the reference)."""
    scoring = evaluation.Scoring(label_set, metric, preset or None, test, correction, alpha)
    budget = evaluation.request_budget(db)
    return await run_bounded(
        request,
        budget,
        evaluation.label_set_agreement,
        db=db,
        collection_id=collection_id,
        scoring=scoring,
        against=against,
        names=run,
        budget=budget,
    )


declare_errors(router)
