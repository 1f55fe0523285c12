"""Pydantic models of the REST API v1: training runs (they shape /openapi.json)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from app.http.schemas import IsoTime

TrainingStatus = Literal["queued", "running", "done", "failed", "cancelled"]


class TrainingRunOut(BaseModel):
    """A training run: status, progress, metrics and (when done, single reads) the model."""

    id: int
    collection_id: int
    model: str
    params: dict[str, Any]
    options: dict[str, Any]
    status: TrainingStatus
    progress: dict[str, Any] | None
    attempts: int
    cancel_requested: bool
    time_limit_seconds: int | None
    metrics: dict[str, Any] | None = Field(description="Per-fold validation and test metrics.")
    model_json: dict[str, Any] | None = Field(
        description="The fitted model (done runs, GET of one run only)."
    )
    error: str | None
    created_at: IsoTime | None
    started_at: IsoTime | None
    heartbeat_at: IsoTime | None
    finished_at: IsoTime | None
