"""REST API v1: second opinions (a strategy's repeats routed to a second assessor).

The assignee's queue (``/second-opinions``, ``/next``, ``/{id}``, ``/{id}/answer``) and the
first assessor's "ask me instead" (``/tasks/{id}/second-opinion/reclaim``);
docs/rest-api.md#second-opinions. The judging page runs its loop on ``/{id}/next``,
``/{id}/judgments`` and ``/{id}/undo`` (the task loop's names, so app/static/js/judge/ serves
both): the same calls as ``/{id}``, ``/{id}/answer`` and a refused undo.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.http.deps import Caller, CurrentUser, DbDep
from app.http.openapi import declare_errors
from app.http.schemas import PathId
from app.judging.loop import Payload
from app.judging.schemas import QuestionOut
from app.second_opinions import service as second_opinions
from app.second_opinions.schemas import (
    SecondOpinionAnswerIn,
    SecondOpinionListItem,
    SecondOpinionOut,
)

router = APIRouter(tags=["second opinions"])

CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {"description": "Not open any more, or answered differently; body has `current`."}
}


@router.get("/second-opinions", response_model=list[SecondOpinionListItem])
def list_second_opinions(
    db: DbDep, user: CurrentUser, include_decided: bool = False
) -> list[Payload]:
    """The caller's open second opinions, oldest first (``include_decided``: every one)."""
    return second_opinions.list_items(db=db, user=user, include_decided=include_decided)


@router.get(
    "/second-opinions/next", response_model=SecondOpinionOut, response_model_exclude_none=True
)
def next_second_opinion(db: DbDep, caller: Caller) -> Payload:
    """The caller's oldest open second opinion, or ``done`` when none is open."""
    return second_opinions.next_item(db=db, user=caller)


@router.get(
    "/second-opinions/{item_id}", response_model=SecondOpinionOut, response_model_exclude_none=True
)
@router.get(  # the judging page's name for it (the judging page asks ``{api_url}/next``)
    "/second-opinions/{item_id}/next",
    response_model=SecondOpinionOut,
    response_model_exclude_none=True,
    include_in_schema=False,
)
def get_second_opinion(item_id: PathId, db: DbDep, caller: Caller) -> Payload:
    """One of the caller's second opinions (403 for anyone else's)."""
    return second_opinions.get_item(db=db, user=caller, item_id=item_id)


@router.post(
    "/second-opinions/{item_id}/answer",
    response_model=SecondOpinionOut,
    response_model_exclude_none=True,
    responses=CONFLICT,
)
@router.post(  # the judging page's name for it (the judging page posts ``{api_url}/judgments``)
    "/second-opinions/{item_id}/judgments",
    response_model=SecondOpinionOut,
    response_model_exclude_none=True,
    include_in_schema=False,
)
def answer_second_opinion(
    item_id: PathId, body: SecondOpinionAnswerIn, db: DbDep, caller: Caller
) -> Payload:
    """Answer it: recorded as the first task's judgment ``seq`` (``answered_by`` = you).
    An identical retry stores nothing; a different answer, or a question no longer open, is
    409."""
    data = body.model_dump(exclude_none=True)
    return second_opinions.answer(db=db, user=caller, item_id=item_id, data=data)


@router.post("/second-opinions/{item_id}/undo", include_in_schema=False)
def page_undo(item_id: PathId, db: DbDep, caller: Caller) -> Payload:
    """The judging page's undo key: a second opinion is not undone by its assignee (409)."""
    return second_opinions.refuse_undo(db=db, user=caller, item_id=item_id)


@router.post(
    "/tasks/{task_id}/second-opinion/reclaim",
    response_model=QuestionOut,
    response_model_exclude_none=True,
)
def reclaim(task_id: PathId, db: DbDep, caller: Caller) -> Payload:
    """ "Ask me instead": the routed question now pending in your task comes back to you.
    Returns the task's current question (with nothing routed, just that)."""
    return second_opinions.reclaim(db=db, user=caller, task_id=task_id)


declare_errors(router)
