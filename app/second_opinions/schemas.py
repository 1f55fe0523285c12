"""Pydantic models of the REST API v1: second opinions (they shape /openapi.json)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.http.schemas import MAX_ACTIVE_MS, MethodName, OutcomeName, Seq, StrictModel
from app.judging.schemas import PairOut, ProgressOut
from app.kernel.models import MAX_COMMENT


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

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"seq": 3, "left": "d1", "right": "d2", "outcome": "tie"}]}
    )

    seq: Seq
    left: str = Field(min_length=1, max_length=200)
    right: str = Field(min_length=1, max_length=200)
    outcome: Literal["left", "right", "tie"]
    active_ms: int = Field(default=0, ge=0, le=MAX_ACTIVE_MS)
    comment: str | None = Field(default=None, max_length=MAX_COMMENT)
