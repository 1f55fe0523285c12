"""REST API v1: the judging loop (next, judgments, undo, answers)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.http.deps import Caller, DbDep
from app.http.lean_route import LeanRoute
from app.http.middleware import API_PREFIX
from app.http.openapi import declare_errors
from app.http.schemas import PathId
from app.judging import service as judging
from app.judging.loop import Payload, documents_as_refs
from app.judging.schemas import AnswerOut, JudgmentIn, QuestionOut, UndoIn
from app.kernel import offload

#: The judging loop: a few small JSON requests per judgment, so lean routes (LeanRoute: the
#: same routing, middleware, authentication and errors, without FastAPI's generic dependency
#: solver). Their bodies are built by the service in their final JSON shape (QuestionOut
#: documents it) and sent as they are, not re-validated. ``create_app`` puts these routes in
#: the app's own router (hence the full prefix here), not through ``include_router``.
judging_loop = APIRouter(prefix=API_PREFIX, route_class=LeanRoute, tags=["tasks"])

CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {"description": "Not the pending question; body has `current` (the question)."}
}


# Where each use case runs (event loop or worker thread) is decided by app.kernel.offload; a submit
# is keyed by its task, so a task whose submits are cheap is answered on the event loop.


@judging_loop.get(
    "/tasks/{task_id}/next",
    response_model=QuestionOut,
    response_model_exclude_none=True,
)
async def next_question(task_id: PathId, db: DbDep, caller: Caller) -> Payload:
    """The pending question (a pair for topk, a document for graded) or ``done``."""
    return await offload.run(db, lambda: judging.next_question(db=db, user=caller, task_id=task_id))


@judging_loop.post(
    "/tasks/{task_id}/judgments",
    response_model=QuestionOut,
    response_model_exclude_none=True,
    responses=CONFLICT,
)
async def submit_judgment(task_id: PathId, body: JudgmentIn, db: DbDep, caller: Caller) -> Payload:
    """Answer the question ``seq``; returns the next question. Retrying an identical judgment
    stores nothing and returns the current question; anything else for a used seq -> 409."""
    data = body.model_dump(exclude_none=True)
    shape = data.pop("documents", "full")
    answer = await offload.run(
        db,
        lambda: judging.submit_judgment(db=db, user=caller, task_id=task_id, data=data),
        cost_key=("submit", task_id),
        on_loop=lambda: judging.submit_on_loop(db=db, user=caller, task_id=task_id, data=data),
    )
    return documents_as_refs(answer) if shape == "refs" else answer


@judging_loop.post(
    "/tasks/{task_id}/undo",
    response_model=QuestionOut,
    response_model_exclude_none=True,
    responses=CONFLICT,
)
async def undo(task_id: PathId, db: DbDep, caller: Caller, body: UndoIn | None = None) -> Payload:
    """Revert the last live judgment (kept in the log, marked undone), or with ``to_seq``
    every one from that seq on, atomically; the same ``to_seq`` again changes nothing."""
    to_seq = body.to_seq if body is not None else None
    answer = await offload.run(
        db, lambda: judging.undo_judgment(db=db, user=caller, task_id=task_id, to_seq=to_seq)
    )
    refs = body is not None and body.documents == "refs"
    return documents_as_refs(answer) if refs else answer


@judging_loop.get("/tasks/{task_id}/answers", response_model=list[AnswerOut])
async def review_answers(task_id: PathId, db: DbDep, caller: Caller) -> list[Payload]:
    """The task's live answers, oldest first (the assessor's review list; read-only)."""
    return await offload.run(
        db, lambda: judging.review_answers(db=db, user=caller, task_id=task_id)
    )


declare_errors(judging_loop)
