"""Pydantic models of the REST API v1: tasks, their results and a collection's progress (they shape
/openapi.json).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from app.http.schemas import (
    RUN_BODY_BYTES,
    STORED_RUN_HINT,
    InlineRun,
    IsoTime,
    MethodName,
    PlanName,
    RowId,
    StoredRunName,
    StrictModel,
    TaskStatus,
)
from app.machine.schemas import MachineFailureAlarmOut


class PriorIn(StrictModel):
    """Where a top-k task's initial order comes from, resolved once at creation
    (docs/strategies-in-practice.md#priors)."""

    source: str = Field(
        min_length=1,
        max_length=120,
        description="none | bm25 (the collection's BM25) | feature:<number> (a LETOR feature, "
        "1-based, descending) | run (the TREC run below).",
    )
    run: InlineRun | None = Field(
        default=None,
        description="source=run: TREC run lines (qid Q0 docno rank score tag), at most "
        "4,000,000 characters; only the task's query is used, ranked by score as trec_eval "
        "does.",
    )
    stored_run: StoredRunName | None = Field(
        default=None,
        description="source=run, instead of run: the name of a run stored on the collection "
        "(POST /admin/collections/{id}/runs).",
    )


class TaskCreate(StrictModel):
    max_json_bytes: ClassVar[int | None] = RUN_BODY_BYTES
    json_bytes_hint: ClassVar[str] = STORED_RUN_HINT

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"collection_id": 1, "query_id": "q1", "assessor": "alice", "method": "topk"},
                {
                    "collection_id": 1,
                    "query_id": "q2",
                    "assessor": "alice",
                    "method": "graded",
                    "prior": "bm25",
                },
            ]
        }
    )

    collection_id: RowId
    query_id: str = Field(min_length=1, max_length=200, description="The imported query_id.")
    assessor: str = Field(min_length=1, max_length=64, description="Username of the assessor.")
    method: MethodName
    k: int = Field(default=10, ge=1, le=10_000)
    seed: int | None = Field(default=None, ge=0, le=2**62)
    options: dict[str, Any] | None = None
    plan: PlanName | None = Field(default=None, max_length=100)
    prior: PriorIn | str | None = Field(
        default=None,
        description="topk: the prior to start from, an object or its source as a string "
        "('bm25', 'feature:25'); recorded in options.prior with the resolved "
        "options.initial_order. Default: none (a seeded shuffle), or 'explicit' when "
        "options.initial_order is given.",
    )


class TaskOut(BaseModel):
    id: int
    collection_id: int
    query_id: str
    query: str
    assessor: str
    method: MethodName
    k: int
    seed: int
    options: dict[str, Any]
    n: int = Field(description="Number of documents in the task's pool.")
    status: TaskStatus
    plan: str | None
    judgments: int = Field(description="Live judgments so far (a person's or a machine's).")
    machine_answers: int = Field(
        default=0, description="Of the judgments, those a machine judge gave (people: the rest)."
    )
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class ResultOut(BaseModel):
    task_id: int
    method: MethodName
    query_id: str
    judgments: int
    active_ms: int
    k: int | None = None
    top: list[str] | None = None
    rest: list[str] | None = None
    kappa_labels: dict[str, int] | None = None
    grades: dict[str, int] | None = None
    broken: dict[str, str] = Field(
        default_factory=dict,
        description="Documents marked broken (id -> reason): in no list, with no label.",
    )


class MachineLossOut(BaseModel):
    """The κ-NDCG@k loss a task's machine answers may have cost its result
    (docs/machine-judges.md#the-uncertainty-the-machine-leaves)."""

    machine_answers: int
    estimated_loss: float = Field(description="Mean loss over the replays (0: no machine).")
    interval: list[float] = Field(description="[low, high]: the 90% interval ([0, 0]: none).")
    level: float
    replays: int


class MachineLossTotalOut(BaseModel):
    """Loss estimates summed over tasks (ends of the interval summed too)."""

    machine_answers: int
    tasks: int = Field(description="Tasks with machine answers.")
    estimated_loss: float
    interval: list[float]


class ProgressTotalsOut(BaseModel):
    """Progress summed over some tasks (the collection, a query or an assessor)."""

    tasks: dict[str, int] = Field(description="Tasks by status.")
    judgments: int = Field(description="Live judgments, a person's or a machine's.")
    machine_answers: int = Field(
        default=0, description="Of the judgments, those a machine judge gave (people: the rest)."
    )
    active_ms: int
    expected_remaining: float
    max_remaining: int
    last_activity: IsoTime | None
    done_fraction: float | None = Field(description="Done tasks over all tasks (null: none).")
    machine: MachineLossTotalOut


class QueryProgressOut(ProgressTotalsOut):
    query_id: str
    query: str


class AssessorProgressOut(ProgressTotalsOut):
    assessor: str
    disabled: bool


class MachineCallsOut(BaseModel):
    """A task's machine calls (docs/machine-judges.md#when-the-machine-fails)."""

    calls: int = Field(description="Calls made for the task's machine opinions.")
    failed: int = Field(description="Of them, those that gave no opinion (failed, malformed).")
    timed_out: int = Field(description="Of the failed, those that hit the request deadline.")
    last_error: str | None = Field(description="What went wrong last (no URL, no key).")
    last_error_at: IsoTime | None


class TaskProgressOut(BaseModel):
    id: int
    query_id: str
    query: str
    assessor: str
    assessor_disabled: bool
    method: MethodName
    k: int
    n: int
    plan: str | None
    status: TaskStatus
    judgments: int = Field(description="Live judgments, a person's or a machine's.")
    machine_answers: int = Field(
        default=0, description="Of the judgments, those a machine judge gave (people: the rest)."
    )
    active_ms: int
    expected_remaining: float
    max_remaining: int
    last_activity: IsoTime | None
    created_at: IsoTime | None
    finished_at: IsoTime | None
    machine_calls: MachineCallsOut | None = Field(
        default=None, description="The machine judge's calls for the task (null: no machine)."
    )
    machine: MachineLossOut


class TimelinePointOut(BaseModel):
    t: IsoTime = Field(description="Start of the bucket.")
    topk: int
    graded: int


class TimelineOut(BaseModel):
    bucket_seconds: int
    points: list[TimelinePointOut]


class CollectionProgressOut(BaseModel):
    """Live progress of a collection: totals, per query, per assessor, per task, timeline."""

    collection: dict[str, Any] = Field(description="id, name, archived.")
    generated_at: IsoTime
    totals: ProgressTotalsOut
    by_query: list[QueryProgressOut]
    by_assessor: list[AssessorProgressOut]
    tasks: list[TaskProgressOut]
    timeline: TimelineOut
    machine_alarms: list[MachineFailureAlarmOut] = Field(
        default_factory=list, description="Open alarms about the collection's machine."
    )
