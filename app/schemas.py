"""Pydantic request/response models of the REST API v1 (they shape /openapi.json).

Request models (:class:`StrictModel`) are checked once, at the edge, for every caller (the
bearer hot path and the cookie routes validate the same models):

- unknown keys are 422s that name the field, instead of silently ignored options;
- types are strict: a number must be a JSON integer (``true``, ``"5"`` and ``1e3`` are not
  integers) and a boolean a JSON boolean (``0`` is not ``false``);
- no string anywhere in the body (keys included, nested options too) may hold a NUL or a lone
  surrogate (``"\\ud800"``), which neither database can store;
- one-line names (collections, plans, models) hold no control or format characters.

The rules and their messages live in :mod:`labeling.identifiers`
(``docs/security.md#text-hygiene``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from labeling.identifiers import USERNAME_PATTERN, check_label, text_problem

Role = Literal["assessor", "admin"]
MethodName = Literal["topk", "graded"]
OutcomeName = Literal["left", "right", "tie", "not_relevant"]
TaskStatus = Literal["pending", "active", "done", "cancelled"]
ExportFormat = Literal["qrels", "topk-jsonl", "pairs-jsonl", "grades-qrels"]

MAX_ACTIVE_MS = 24 * 3600 * 1000


def _check_strings(value: Any, where: str) -> None:
    """Raise ValueError for the first string (key or value) in ``value`` that is not clean
    text (:func:`labeling.identifiers.text_problem`), naming where it is."""
    if isinstance(value, str):
        problem = text_problem(value)
        if problem is not None:
            raise ValueError(f"{where} {problem}")
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                problem = text_problem(key)
                if problem is not None:
                    raise ValueError(f"a key in {where} {problem}")
            _check_strings(item, f"{where}.{key}")  # the key is clean text by now
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _check_strings(item, f"{where}[{i}]")


def _label(field: str) -> AfterValidator:
    return AfterValidator(lambda value: value if value is None else check_label(value, field))


#: A one-line name (collection, plan, training model): see :func:`check_label`.
CollectionName = Annotated[str, _label("name")]
PlanName = Annotated[str, _label("plan")]


class StrictModel(BaseModel):
    """Request bodies: unknown keys, loosely typed numbers or booleans, and NUL characters or
    lone surrogates anywhere are 422s that say where."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _clean_text(cls, data: Any) -> Any:
        _check_strings(data, "body")
        return data


class TokenOut(BaseModel):
    access_token: str
    token_type: Literal["bearer"] = "bearer"
    expires_in: int = Field(description="Seconds until the token expires.")


class UserCreate(StrictModel):
    username: str = Field(min_length=1, max_length=64, pattern=USERNAME_PATTERN)
    password: str = Field(
        min_length=1,
        max_length=1024,
        description="At least 12 characters, not the username, not a common or easily guessed "
        "password (docs/security.md#password-policy).",
    )
    role: Role = "assessor"


class UserOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    username: str
    role: Role
    disabled: bool
    created_at: datetime


class CollectionCreate(StrictModel):
    name: CollectionName = Field(min_length=1, max_length=200)
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


class PriorIn(StrictModel):
    """Where a top-k task's initial order comes from, resolved once at creation
    (docs/strategies-in-practice.md#priors)."""

    source: str = Field(
        min_length=1,
        max_length=120,
        description="none | bm25 (the collection's BM25) | feature:<number> (a LETOR feature, "
        "1-based, descending) | run (the TREC run below).",
    )
    run: str | None = Field(
        default=None,
        max_length=20_000_000,
        description="source=run: TREC run lines (qid Q0 docno rank score tag); only the task's "
        "query is used, ranked by score as trec_eval does.",
    )


class TaskCreate(StrictModel):
    collection_id: int
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


# ---------------------------------------------------------------------------------- errors
# Every error answer of the API has one shape, ErrorOut (docs/rest-api.md#errors); the
# statuses each route can answer are declared from app.errors.declare_errors.


class ErrorItem(BaseModel):
    """One problem of a 422 whose ``detail`` is a list, saying what (``msg``) and where.

    Request validation (FastAPI/pydantic) gives ``type``, ``loc``, ``msg``, ``input`` and
    maybe ``ctx``; a file import gives ``file`` (when the import has several files), ``line``
    (1-based; 0 for a summary item) and ``msg``; a plan's constraint violations also carry
    ``code``, ``severity`` and the ``assessor``/``query_id``/``method`` concerned."""

    model_config = ConfigDict(extra="allow")

    msg: str
    type: str | None = Field(default=None, description="Validation: the error type.")
    loc: list[str | int] | None = Field(
        default=None, description='Validation: where, e.g. ["body", "grade"].'
    )
    input: Any = Field(default=None, description="Validation: the value refused.")
    ctx: dict[str, Any] | None = None
    file: str | None = Field(default=None, description="Imports: the file's name.")
    line: int | None = Field(default=None, description="Imports: the 1-based line (0: none).")
    code: str | None = Field(default=None, description="Plans: the violated constraint.")
    severity: Literal["error", "warning"] | None = None
    message: str | None = Field(default=None, description="Plans: the violation, for people.")
    assessor: str | None = None
    query_id: str | None = None
    method: str | None = None


class ErrorOut(BaseModel):
    """The body of every error answer (4xx, 5xx)."""

    detail: str | list[ErrorItem] = Field(
        description="What is wrong: a text, or (422) a list of items saying what and where."
    )
    message: str | None = Field(
        default=None, description="With a list of items: a one-line summary of them."
    )
    current: QuestionOut | None = Field(
        default=None, description="Judging loop, 409: the pending question (or done)."
    )
    retry_after: int | None = Field(
        default=None, description="429: seconds until a login may be tried again."
    )
