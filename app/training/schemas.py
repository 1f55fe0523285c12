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


class FeaturesOut(BaseModel):
    """What a collection's documents carry and the state of its last features job."""

    collection_id: int
    documents: int = Field(description="Document rows (one per query and document).")
    with_features: int = Field(description="Rows with a feature vector.")
    source: Literal["none", "imported", "text"] = Field(
        description="none; imported (LETOR files); text (heapjudge's text features)"
    )
    feature_set: dict[str, Any] | None = Field(
        description="name, version, column names, normalisation and parameters of "
        "heapjudge's text features (null for imported vectors)"
    )
    job: dict[str, Any] | None = Field(
        description="the last features job: status (queued, running, done, failed), times, "
        "error, report (rows, queries, documents, seconds)"
    )


class QueryGradesOut(BaseModel):
    """One query's documents as the LLM grade cache holds them."""

    query_id: str
    documents: int
    graded: int = Field(description="Documents with a readable grade 0..4.")
    malformed: int = Field(description="Replies that are not one digit 0..4 (no grade).")
    missing: int = Field(description="Documents not graded yet (or whose call failed).")


class LlmGradesOut(BaseModel):
    """The LLM grades of a collection's documents: what the ``llm`` prior reads."""

    collection_id: int
    model: str | None = Field(description="The configured model (HEAPJUDGE_LLM_MODEL).")
    template: str = Field(description="The graded prompt template's key, e.g. graded@v2.")
    prompt_hash: str = Field(description="The template's hash (first 16 hex of SHA-256).")
    documents: int
    graded: int
    malformed: int
    missing: int
    queries: list[QueryGradesOut]
    queued: bool = Field(
        default=False, description="true in the answer to POST: a grading job was queued."
    )
