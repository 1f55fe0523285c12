"""Pydantic models of the REST API v1: the judging loop (question, judgment, undo, answers) (they
shape /openapi.json).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.http.schemas import (
    MAX_ACTIVE_MS,
    AnswerOutcomeName,
    DocumentsShape,
    MethodName,
    OutcomeName,
    ReasonText,
    Seq,
    StrictModel,
)
from app.kernel.models import MAX_COMMENT, MAX_REASON


class JudgmentIn(StrictModel):
    """A pair judgment (``left``, ``right``, ``outcome``), a grade (``doc_id``, ``grade``), or
    a broken document (``outcome`` ``broken``, ``doc_id``, ``reason``; for topk with the pair
    as shown). Any of them may carry a ``comment`` (docs/rest-api.md#the-judging-loop)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"seq": 0, "left": "d1", "right": "d2", "outcome": "left", "active_ms": 900},
                {"seq": 1, "doc_id": "d3", "grade": 2},
                {"seq": 2, "doc_id": "d4", "outcome": "broken", "reason": "empty page"},
            ]
        }
    )

    seq: Seq = Field(description="The seq of the question being answered (from /next).")
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

    model_config = ConfigDict(json_schema_extra={"examples": [{}, {"to_seq": 0}]})

    documents: DocumentsShape | None = Field(
        default=None, description="As for a judgment: 'refs' leaves out text and html."
    )

    to_seq: Seq | None = Field(
        default=None,
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
