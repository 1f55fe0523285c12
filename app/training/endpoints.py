"""REST API v1: training runs, queued jobs executed by ``heapjudge worker`` (admin only).

``POST /api/v1/training-runs`` records a queued run and enqueues it (202 + the run);
``GET /api/v1/training-runs[?collection_id=]`` and ``GET /api/v1/training-runs/{id}`` read its
status, progress, per-fold validation and test metrics and, once done, the fitted model JSON;
``POST /api/v1/training-runs/{id}/cancel`` cancels it (see :mod:`app.training.service` and
docs/training.md).

``POST /api/v1/admin/collections/{id}/features[?replace=true]`` queues the computation of the
collection's text features as its documents' vectors (202; 409 when the documents carry
imported vectors and ``replace`` is not set, 422 without texts), ``GET`` of the same path says
what the documents carry and how the last job went (:mod:`app.training.features`,
docs/features.md#stored-features).

``POST /api/v1/admin/collections/{id}/llm-grades`` queues the LLM grades of the collection's
documents (all queries, or ``query_ids``) that the ``llm`` prior orders by (202); ``GET`` of
the same path counts, per query, the documents graded, malformed and still to grade
(:mod:`app.machine.grades`, docs/machine-judges.md#judges-as-priors).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from app.http.deps import AdminUser, DbDep
from app.http.openapi import declare_errors, error_responses
from app.http.schemas import PathId, QueryId, RowId, Seed, StrictModel
from app.machine import grades
from app.machine.jobs import enqueue_grades
from app.training import features
from app.training import service as training
from app.training.jobs import enqueue_features, enqueue_training
from app.training.schemas import FeaturesOut, LlmGradesOut, TrainingRunOut

router = APIRouter(tags=["training"])


class TrainingOptions(StrictModel):
    truth: Literal["imported", "study", "both"] = Field(
        default="study",
        description="imported grades, the finished top-k study, or the study where a query "
        "has one and imported grades (as top-k truth) elsewhere",
    )
    kind: Literal["graded", "topk"] | None = Field(
        default=None,
        description="graded measures (NDCG, ERR; imported truth only) or top-k (κ-NDCG, "
        "κ-ERR); default graded for imported truth, else topk",
    )
    folds: Literal["auto", "letor"] | Annotated[int, Field(ge=3, le=20)] = Field(
        default="auto",
        description="auto: the LETOR S1..S5 rotation when the queries came from LETOR "
        "partition files, else seeded 5-fold by query; letor; or a fold count 3..20",
    )
    k: int | None = Field(default=None, ge=1, le=1000, description="k of the top-k truth")
    seed: Seed = Field(default=0, description="seed of fold assignment and top-k sampling")
    features: Literal["stored", "text"] = Field(
        default="stored",
        description="stored: the documents' feature vectors as they are (imported, or "
        "computed before); text: compute heapjudge's text features first (in the worker), "
        "then train on them",
    )


class TrainingRunCreate(StrictModel):
    collection_id: RowId
    model: str = Field(
        min_length=1,
        max_length=64,
        description="focusednet, focusedsvm, focusedboost, topk-listmle, ...",
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description='Estimator hyperparameters, e.g. {"beta": 0.5}'
    )
    options: TrainingOptions = Field(default_factory=TrainingOptions)
    time_limit_seconds: int | None = Field(
        default=None,
        ge=1,
        le=7 * 86400,
        description="stop the run (failed) after this long; default "
        "HEAPJUDGE_TRAINING_TIME_LIMIT_SECONDS",
    )


@router.post(
    "/training-runs",
    status_code=202,
    response_model=TrainingRunOut,
    responses=error_responses(404, 409),
)
async def create_training_run(
    body: TrainingRunCreate, _admin: AdminUser, db: DbDep, request: Request
) -> dict[str, Any]:
    """Record a queued training run and put it on the job queue; a run that cannot succeed
    (no document has a feature vector and ``features`` is not ``text``, no truth of the kind
    asked) is refused at once (422)."""
    run = await run_in_threadpool(
        training.create_run,
        db=db,
        collection_id=body.collection_id,
        model=body.model,
        params=body.params,
        options=body.options.model_dump(exclude_none=True),
        time_limit_seconds=body.time_limit_seconds,
    )
    await run_in_threadpool(enqueue_training, db.settings, run["id"])
    return run


@router.get("/training-runs", response_model=list[TrainingRunOut])
async def list_training_runs(
    _admin: AdminUser, db: DbDep, collection_id: QueryId | None = None
) -> list[dict[str, Any]]:
    """Runs, newest first (without model JSON)."""
    return await run_in_threadpool(training.list_runs, db=db, collection_id=collection_id)


@router.get("/training-runs/{run_id}", response_model=TrainingRunOut)
async def get_training_run(run_id: PathId, _admin: AdminUser, db: DbDep) -> dict[str, Any]:
    """Status, progress, per-fold metrics and (when done) the model JSON of a run."""
    return await run_in_threadpool(training.get_run, db=db, run_id=run_id)


@router.post("/training-runs/{run_id}/cancel", response_model=TrainingRunOut)
async def cancel_training_run(run_id: PathId, _admin: AdminUser, db: DbDep) -> dict[str, Any]:
    """Cancel a queued or running run at once (it never ends `done` afterwards); 409 once ended."""
    return await run_in_threadpool(training.cancel_run, db=db, run_id=run_id)


@router.post(
    "/admin/collections/{collection_id}/features",
    status_code=202,
    response_model=FeaturesOut,
    responses=error_responses(404, 409),
)
async def compute_features(
    collection_id: PathId, _admin: AdminUser, db: DbDep, replace: bool = False
) -> dict[str, Any]:
    """Queue the computation of the collection's text features (stored as its documents'
    feature vectors); ``replace=true`` replaces imported vectors, which are kept otherwise."""
    view = await run_in_threadpool(
        features.request_features, db=db, collection_id=collection_id, replace=replace
    )
    await run_in_threadpool(enqueue_features, db.settings, collection_id, replace)
    return view


@router.get(
    "/admin/collections/{collection_id}/features",
    response_model=FeaturesOut,
    responses=error_responses(404),
)
async def get_features(collection_id: PathId, _admin: AdminUser, db: DbDep) -> dict[str, Any]:
    """What the collection's documents carry (none, imported or text features) and the
    state of its last features job."""
    return await run_in_threadpool(features.features_view, db=db, collection_id=collection_id)


class LlmGradesIn(StrictModel):
    query_ids: list[str] | None = Field(
        default=None,
        max_length=100_000,
        description="the queries whose documents to grade; null: every query of the collection",
    )


@router.post(
    "/admin/collections/{collection_id}/llm-grades",
    status_code=202,
    response_model=LlmGradesOut,
    responses=error_responses(404),
)
async def request_llm_grades(
    collection_id: PathId, body: LlmGradesIn, _admin: AdminUser, db: DbDep
) -> dict[str, Any]:
    """Queue the LLM's grade of every document of the queries (the graded prompt template;
    cached replies cost nothing): what the ``llm`` prior orders the documents by. 422 when no
    LLM is configured or a query id is unknown; the answer counts what is graded so far."""
    view = await run_in_threadpool(grades.grade_status, db, collection_id, body.query_ids)
    await run_in_threadpool(enqueue_grades, db.settings, collection_id, body.query_ids)
    return {**view, "queued": True}


@router.get(
    "/admin/collections/{collection_id}/llm-grades",
    response_model=LlmGradesOut,
    responses=error_responses(404),
)
async def get_llm_grades(collection_id: PathId, _admin: AdminUser, db: DbDep) -> dict[str, Any]:
    """Per query and in total: the documents the LLM has graded, whose reply was malformed and
    that are still to grade, for the configured model and the graded template."""
    return await run_in_threadpool(grades.grade_status, db, collection_id)


declare_errors(router)
