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

from app.guidelines import MAX_GUIDELINES
from app.models import MAX_COMMENT, MAX_REASON
from labeling.identifiers import USERNAME_PATTERN, check_label, text_problem

Role = Literal["assessor", "admin"]
MethodName = Literal["topk", "graded"]
OutcomeName = Literal["left", "right", "tie", "not_relevant"]
#: Outcomes a request may send: a protocol outcome, or ``broken`` (a broken document).
AnswerOutcomeName = Literal["left", "right", "tie", "not_relevant", "broken"]
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


class GuidelinesIn(StrictModel):
    markdown: str = Field(
        max_length=MAX_GUIDELINES,
        description="The collection's judging guidelines in Markdown (raw HTML is shown as "
        "text); empty for none.",
    )


class GuidelinesOut(BaseModel):
    collection_id: int
    collection_name: str
    markdown: str
    html: str = Field(description="The Markdown rendered and sanitised (safe to embed).")


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


#: How the question in a judgment's or undo's answer carries its documents.
DocumentsShape = Literal["full", "refs"]

#: A one-line reason (a broken document): see :func:`check_label`.
ReasonText = Annotated[str, _label("reason")]


class JudgmentIn(StrictModel):
    """A pair judgment (``left``, ``right``, ``outcome``), a grade (``doc_id``, ``grade``), or
    a broken document (``outcome`` ``broken``, ``doc_id``, ``reason``; for topk with the pair
    as shown). Any of them may carry a ``comment`` (docs/rest-api.md#the-judging-loop)."""

    seq: int = Field(ge=0, description="The seq of the question being answered (from /next).")
    left: str | None = Field(default=None, max_length=200)
    right: str | None = Field(default=None, max_length=200)
    outcome: AnswerOutcomeName | None = None
    doc_id: str | None = Field(default=None, max_length=200)
    grade: int | None = Field(default=None, ge=0, le=4)
    active_ms: int = Field(default=0, ge=0, le=MAX_ACTIVE_MS)
    reason: ReasonText | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_REASON,
        description="Why the document is broken (outcome broken only; one line).",
    )
    comment: str | None = Field(
        default=None,
        max_length=MAX_COMMENT,
        description="An optional note on this judgment (any judgment; empty means none).",
    )
    documents: DocumentsShape | None = Field(
        default=None,
        description="'refs': the question in the answer names its documents by doc_id and "
        "title only, without text or html (the judging page, which renders them itself); "
        "'full' (the default): as /next.",
    )


class UndoIn(StrictModel):
    """Optional body of an undo: ``to_seq`` undoes every live answer from that seq on."""

    documents: DocumentsShape | None = Field(
        default=None, description="As for a judgment: 'refs' leaves out text and html."
    )

    to_seq: int | None = Field(
        default=None,
        ge=0,
        description="Undo back to here: every live answer with this seq or later (none: the "
        "last one). Nothing live there: nothing changes (idempotent).",
    )


class DocRefOut(BaseModel):
    doc_id: str
    title: str


class AnswerOut(BaseModel):
    """One live answer of a task, for the assessor's review list."""

    seq: int
    kind: Literal["pair", "grade", "broken"]
    left: DocRefOut | None = Field(default=None, description="topk: the pair as shown.")
    right: DocRefOut | None = None
    document: DocRefOut | None = Field(
        default=None, description="graded: the document; broken: the broken document."
    )
    outcome: OutcomeName | None = None
    grade: int | None = None
    reason: str | None = None
    comment: str | None = None
    active_ms: int
    time: datetime


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


class WaitingOut(BaseModel):
    """A repeat of the task routed to a second assessor (docs/noise.md)."""

    second_opinion_id: int
    seq: int = Field(description="The question that waits (not to be answered here).")
    assessor: str = Field(description="Who was asked.")
    since: str
    until: str = Field(description="After this time the question comes back to this task.")


class QuestionOut(BaseModel):
    """The current state of a task: the pending question, or done, or ``waiting`` for a
    second opinion (then no ``seq``/``pair``: ask again later, or reclaim it)."""

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
    waiting: WaitingOut | None = None


class SecondOpinionInfo(BaseModel):
    id: int
    task_id: int = Field(description="The first assessor's task (the answer goes to its log).")
    seq: int
    query_id: str
    query: str
    first_assessor: str
    status: Literal["open", "answered", "reclaimed", "expired", "cancelled"]
    created_at: str
    deadline_at: str
    decided_at: str | None = None
    outcome: OutcomeName | None = None


class SecondOpinionOut(BaseModel):
    """A second opinion in the judging loop's shape: ``seq``, ``pair``, ``allowed_outcomes``
    while it is open; ``done`` once decided (or, from ``/next``, when none is open)."""

    task_id: int | None = None
    method: MethodName
    done: bool
    seq: int | None = None
    pair: PairOut | None = None
    allowed_outcomes: list[OutcomeName] | None = None
    challenger: Literal["left", "right"] | None = None
    progress: ProgressOut = Field(
        description="judgments: second opinions answered; estimated_remaining: open ones."
    )
    active_ms: int
    second_opinion: SecondOpinionInfo | None = None


class SecondOpinionListItem(BaseModel):
    id: int
    task_id: int
    seq: int
    query_id: str
    query: str
    first_assessor: str
    status: str
    created_at: datetime
    deadline_at: datetime
    decided_at: datetime | None = None
    outcome: str | None = None


class SecondOpinionAnswerIn(StrictModel):
    """The answer to a second opinion: echo ``seq``, ``left`` and ``right`` as shown."""

    seq: int = Field(ge=0)
    left: str = Field(min_length=1, max_length=200)
    right: str = Field(min_length=1, max_length=200)
    outcome: Literal["left", "right", "tie"]
    active_ms: int = Field(default=0, ge=0, le=MAX_ACTIVE_MS)
    comment: str | None = Field(default=None, max_length=MAX_COMMENT)


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


# ------------------------------------------------------------------ admin console responses
# The services build these bodies as dicts (their web pages read the same dicts); the models
# below validate and document them at the API edge. Datetimes the services already give as
# ISO 8601 strings stay strings.

IsoTime = Annotated[str, Field(description="ISO 8601 date and time (UTC).")]


class CollectionBriefOut(BaseModel):
    id: int
    name: str
    description: str
    archived: bool


class FilesImportOut(BaseModel):
    """A TREC/SMART/LETOR import (``import-files``)."""

    collection_id: int
    kind: str
    rows: int = Field(description="(query, document) rows imported.")
    queries_created: int
    documents_created: int
    documents_unchanged: int
    files: list[str] = Field(description="The uploaded files read, in the order read.")
    qrels: str | None = Field(
        description="How the qrels file was read: layout (detected or given, and why) and grades."
    )
    notes: list[str] = Field(description="What the pairing left out, and suggestions.")


class AttachOut(BaseModel):
    """Grades or feature vectors attached to existing documents."""

    collection_id: int
    what: str
    lines: int
    matched: int
    unmatched: int
    unmatched_lines: list[int]
    documents_without: int


class ViolationOut(BaseModel):
    """A violated constraint of a study plan (``code`` for programs, ``message`` for people)."""

    code: str
    severity: Literal["error", "warning"]
    message: str
    assessor: str | None
    query_id: str | None
    method: str | None


class PlannedTaskOut(BaseModel):
    assessor: str
    query_id: str
    method: MethodName
    label: str
    seed: int
    n: int = Field(description="Documents in the task's pool.")
    second_assessor: list[str] = Field(
        default_factory=list,
        description="topk, +robust: who gets this task's repeats (options.second_assessor).",
    )


class PlanPreviewOut(BaseModel):
    """A study plan as a grid, with loads, pools, costs and every violated constraint."""

    ok: bool = Field(description="No violation of severity error.")
    name: str
    scheme: str
    k: int
    options: dict[str, dict[str, Any]] = Field(description="The options of each method's tasks.")
    assessors: list[str]
    query_ids: list[str]
    tasks: list[PlannedTaskOut]
    grid: dict[str, dict[str, str]] = Field(
        description='grid[assessor][query_id] = "topk" | "graded" ("topk+graded": a conflict).'
    )
    loads: dict[str, dict[str, int]] = Field(description="Tasks per assessor and method.")
    pool_sizes: dict[str, int] = Field(description="Documents in each query's pool.")
    pool_lost: dict[str, dict[str, int]] = Field(
        description="Ranked pools: per query, documents of the ranking the pool could not take."
    )
    violations: list[ViolationOut]
    strategy: str
    prior: str
    cost: dict[str, dict[str, float]] = Field(
        description="Per query: expected judgments and minutes of one task of each method."
    )
    totals: dict[str, float] = Field(description="Expected judgments and minutes of the plan.")
    cost_model: dict[str, str | float] = Field(description="How the costs are estimated.")
    csv: str = Field(description="The plan's entries as CSV (assessor,query_id,method).")


class PlanCreatedOut(BaseModel):
    name: str
    task_ids: list[int]
    warnings: list[ViolationOut]


class ProgressTotalsOut(BaseModel):
    """Progress summed over some tasks (the collection, a query or an assessor)."""

    tasks: dict[str, int] = Field(description="Tasks by status.")
    judgments: int
    active_ms: int
    expected_remaining: float
    max_remaining: int
    last_activity: IsoTime | None
    done_fraction: float | None = Field(description="Done tasks over all tasks (null: none).")


class QueryProgressOut(ProgressTotalsOut):
    query_id: str
    query: str


class AssessorProgressOut(ProgressTotalsOut):
    assessor: str
    disabled: bool


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
    judgments: int
    active_ms: int
    expected_remaining: float
    max_remaining: int
    last_activity: IsoTime | None
    created_at: IsoTime | None
    finished_at: IsoTime | None


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


class WorkloadOut(BaseModel):
    username: str
    role: Role
    disabled: bool
    tasks: dict[str, int] = Field(description="Tasks by status.")
    judgments: int
    active_ms: int
    last_activity: IsoTime | None


class PasswordResetOut(BaseModel):
    username: str
    sessions_revoked: bool


class UserStateOut(BaseModel):
    username: str
    disabled: bool


# ---------------------------------------------------------------- analysis, training, BM25


class AnalysisOut(BaseModel):
    """The agreement and time analysis of a collection; the sections are described in
    docs/analysis.md."""

    collection: dict[str, Any] = Field(description="id and name.")
    mode: Literal["direct", "inferred"]
    methods: dict[str, str]
    relations: list[str]
    relation_symbols: list[str]
    tasks: dict[str, dict[str, int]] = Field(description="Per method: tasks and finished.")
    judgments: dict[str, int] = Field(description="live, undone, reasks.")
    time: dict[str, dict[str, Any]] = Field(description="Table 1, per method.")
    agreement: dict[str, dict[str, Any]] = Field(description="Per method: the agreement block.")
    chi2: dict[str, dict[str, Any]] = Field(description="pearson and yates.")
    position_bias: list[dict[str, Any]]
    self_consistency: list[dict[str, Any]]
    transitivity: list[dict[str, Any]]
    topk_overlap: list[dict[str, Any]]
    time_histogram: dict[str, Any]
    warnings: list[str]


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


class Bm25HitOut(BaseModel):
    doc_id: str
    score: float


class Bm25RunOut(BaseModel):
    """A BM25 run as JSON: its summary and the hits of each query, best first."""

    collection_id: int
    k1: float
    b: float
    depth: int
    documents: int
    queries: int
    lines: int
    empty_queries: list[str] = Field(description="Queries none of whose terms occurs.")
    seconds: float
    hits: dict[str, list[Bm25HitOut]]


class Bm25OrderOut(BaseModel):
    query_id: str
    order: list[str] = Field(description="The query's documents, best first.")


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
