"""Pydantic request/response models of the REST API v1 (they shape /openapi.json).

Request models forbid unknown keys, so a typo is a 422 that names the field instead of a
silently ignored option.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Role = Literal["assessor", "admin"]
MethodName = Literal["topk", "graded"]
OutcomeName = Literal["left", "right", "tie", "not_relevant"]
TaskStatus = Literal["pending", "active", "done", "cancelled"]
ExportFormat = Literal["qrels", "topk-jsonl", "pairs-jsonl", "grades-qrels"]

MAX_ACTIVE_MS = 24 * 3600 * 1000


def _reject_nul(value: Any, where: str = "body") -> None:
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError(f"{where} contains a NUL character")
    elif isinstance(value, dict):
        for key, item in value.items():
            _reject_nul(key, where)
            _reject_nul(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _reject_nul(item, f"{where}[{i}]")


class StrictModel(BaseModel):
    """Request bodies: unknown keys and NUL characters (which Postgres text cannot store)
    are 422s that say where."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _no_nul(cls, data: Any) -> Any:
        _reject_nul(data)
        return data


class TokenOut(BaseModel):
    access_token: str
    token_type: Literal["bearer"] = "bearer"
    expires_in: int = Field(description="Seconds until the token expires.")


class UserCreate(StrictModel):
    username: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.@-]+$")
    password: str = Field(min_length=8, max_length=1024)
    role: Role = "assessor"


class UserOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    username: str
    role: Role
    disabled: bool
    created_at: datetime


class CollectionCreate(StrictModel):
    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=10_000)


class CollectionOut(BaseModel):
    id: int
    name: str
    description: str
    archived: bool
    created_at: datetime
    queries: int = 0
    documents: int = 0
    tasks: dict[str, int] = Field(
        default_factory=dict, description="Number of tasks by status (pending/active/done/...)."
    )


class QueryOut(BaseModel):
    query_id: str
    title: str
    description: str
    documents: int


class ImportReportOut(BaseModel):
    collection_id: int
    lines: int
    queries_created: int
    documents_created: int
    documents_unchanged: int


class TaskCreate(StrictModel):
    collection_id: int
    query_id: str = Field(min_length=1, max_length=200, description="The imported query_id.")
    assessor: str = Field(min_length=1, max_length=64, description="Username of the assessor.")
    method: MethodName
    k: int = Field(default=10, ge=1, le=10_000)
    seed: int | None = Field(default=None, ge=0, le=2**62)
    options: dict[str, Any] | None = None
    plan: str | None = Field(default=None, max_length=100)


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
    judgments: int = Field(description="Live judgments so far.")
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class JudgmentIn(StrictModel):
    """A pair judgment (``left``, ``right``, ``outcome``) or a grade (``doc_id``, ``grade``)."""

    seq: int = Field(ge=0, description="The seq of the question being answered (from /next).")
    left: str | None = Field(default=None, max_length=200)
    right: str | None = Field(default=None, max_length=200)
    outcome: OutcomeName | None = None
    doc_id: str | None = Field(default=None, max_length=200)
    grade: int | None = Field(default=None, ge=0, le=4)
    active_ms: int = Field(default=0, ge=0, le=MAX_ACTIVE_MS)


class DocumentOut(BaseModel):
    doc_id: str
    title: str
    text: str | None = None
    html: str | None = None


class PairOut(BaseModel):
    left: DocumentOut
    right: DocumentOut


class ProgressOut(BaseModel):
    judgments: int
    estimated_remaining: int = Field(description="About how many judgments are left.")
    expected_remaining: float
    max_remaining: int = Field(description="Upper bound for a consistent assessor.")
    done: bool


class QuestionOut(BaseModel):
    """The current state of a task: the pending question, or done."""

    task_id: int
    method: MethodName
    done: bool
    seq: int | None = Field(default=None, description="Echo this seq with the judgment.")
    pair: PairOut | None = Field(default=None, description="topk: the pair, as shown.")
    document: DocumentOut | None = Field(default=None, description="graded: the document.")
    allowed_outcomes: list[OutcomeName] | None = None
    challenger: Literal["left", "right"] | None = Field(
        default=None,
        description="topk, Step 2: the side showing the new document (the one 'not_relevant' "
        "refers to); null in the build and sort phases.",
    )
    progress: ProgressOut
    active_ms: int = Field(description="Active judging time so far (live judgments).")


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
