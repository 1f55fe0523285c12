"""REST API v1: training runs over a collection's top-k ground truth (admin only).

``POST /api/v1/training-runs`` ``{"collection_id", "model", "params"}`` records a queued run
and trains it in the background (202 + the run); ``GET /api/v1/training-runs/{id}`` returns
its status, validation metrics and, once done, the fitted model as JSON
(see :mod:`app.services.training`).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, BackgroundTasks
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from app.deps import AdminUser, DbDep
from app.schemas import StrictModel
from app.services import training

router = APIRouter(tags=["training"])


class TrainingRunCreate(StrictModel):
    collection_id: int
    model: str = Field(
        min_length=1,
        max_length=64,
        description="focusednet, focusedsvm, focusedboost, topk-listmle, ...",
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description='Estimator hyperparameters, e.g. {"beta": 0.5}'
    )


@router.post("/training-runs", status_code=202)
async def create_training_run(
    body: TrainingRunCreate, _admin: AdminUser, db: DbDep, background: BackgroundTasks
) -> dict[str, Any]:
    """Queue a training run; it trains after the response is sent."""
    run = await run_in_threadpool(
        training.create_run,
        db=db,
        collection_id=body.collection_id,
        model=body.model,
        params=body.params,
    )
    background.add_task(training.execute_run, run["id"], db=db)
    return run


@router.get("/training-runs/{run_id}")
async def get_training_run(run_id: int, _admin: AdminUser, db: DbDep) -> dict[str, Any]:
    """Status, validation metrics and (when done) the model JSON of a run."""
    return await run_in_threadpool(training.get_run, db=db, run_id=run_id)
