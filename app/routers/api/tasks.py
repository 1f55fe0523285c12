"""REST API v1: tasks and the judging loop (next, judgments, undo, result)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from app import offload
from app.deps import Caller, CurrentUser, DbDep, require_admin
from app.errors import declare_errors, error_responses
from app.response_headers import API_PREFIX
from app.routers.lean_route import LeanRoute
from app.schemas import (
    AnswerOut,
    JudgmentIn,
    QuestionOut,
    ResultOut,
    TaskCreate,
    TaskOut,
    TaskStatus,
    UndoIn,
)
from app.services import judging, priors, results, tasks
from app.services.judging import Payload

router = APIRouter(tags=["tasks"])
admin = APIRouter(dependencies=[Depends(require_admin)])
#: The judging loop: a few small JSON requests per judgment, so lean routes (LeanRoute: the
#: same routing, middleware, authentication and errors, without FastAPI's generic dependency
#: solver). Their bodies are built by the service in their final JSON shape (QuestionOut
#: documents it) and sent as they are, not re-validated. ``create_app`` puts these routes in
#: the app's own router (hence the full prefix here), not through ``include_router``.
judging_loop = APIRouter(prefix=API_PREFIX, route_class=LeanRoute, tags=["tasks"])

CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {"description": "Not the pending question; body has `current` (the question)."}
}


@admin.post("/tasks", response_model=TaskOut, status_code=201, responses=error_responses(404))
def create_task(body: TaskCreate, db: DbDep) -> TaskOut:
    """Assign an assessor to a query (admin). ``options.strategy`` picks the judging strategy;
    ``prior`` the initial order (docs/rest-api.md#tasks-strategies-and-priors)."""
    prior = body.prior
    source = (
        priors.check_source(prior)
        if isinstance(prior, str)
        else priors.check_source(prior.source, prior.run)
        if prior is not None
        else None
    )
    view = tasks.create_task(
        db=db,
        collection_id=body.collection_id,
        query_id=body.query_id,
        assessor=body.assessor,
        method=body.method,
        k=body.k,
        seed=body.seed,
        options=body.options,
        plan=body.plan,
        prior=source,
    )
    return TaskOut(**asdict(view))


@router.get("/tasks", response_model=list[TaskOut])
def list_tasks(
    db: DbDep,
    user: CurrentUser,
    collection_id: int | None = None,
    assessor: str | None = None,
    status: TaskStatus | None = None,
    query_id: Annotated[str | None, Query(max_length=200)] = None,
) -> list[TaskOut]:
    """An assessor's own tasks; an admin sees all (filterable)."""
    views = tasks.list_tasks(
        db=db,
        user=user,
        collection_id=collection_id,
        assessor=assessor,
        status=status,
        query_id=query_id,
    )
    return [TaskOut(**asdict(v)) for v in views]


@router.get("/tasks/{task_id}", response_model=TaskOut)
def get_task(task_id: int, db: DbDep, user: CurrentUser) -> TaskOut:
    return TaskOut(**asdict(tasks.get_task(db=db, user=user, task_id=task_id)))


# Where each use case runs (event loop or worker thread) is decided by app.offload; a submit
# is keyed by its task, so a task whose submits are cheap is answered on the event loop.


@judging_loop.get(
    "/tasks/{task_id}/next",
    response_model=QuestionOut,
    response_model_exclude_none=True,
)
async def next_question(task_id: int, db: DbDep, caller: Caller) -> Payload:
    """The pending question (a pair for topk, a document for graded) or ``done``."""
    return await offload.run(db, lambda: judging.next_question(db=db, user=caller, task_id=task_id))


@judging_loop.post(
    "/tasks/{task_id}/judgments",
    response_model=QuestionOut,
    response_model_exclude_none=True,
    responses=CONFLICT,
)
async def submit_judgment(task_id: int, body: JudgmentIn, db: DbDep, caller: Caller) -> Payload:
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
    return judging.documents_as_refs(answer) if shape == "refs" else answer


@judging_loop.post(
    "/tasks/{task_id}/undo",
    response_model=QuestionOut,
    response_model_exclude_none=True,
    responses=CONFLICT,
)
async def undo(task_id: int, db: DbDep, caller: Caller, body: UndoIn | None = None) -> Payload:
    """Revert the last live judgment (kept in the log, marked undone), or with ``to_seq``
    every one from that seq on, atomically; the same ``to_seq`` again changes nothing."""
    to_seq = body.to_seq if body is not None else None
    answer = await offload.run(
        db, lambda: judging.undo_judgment(db=db, user=caller, task_id=task_id, to_seq=to_seq)
    )
    refs = body is not None and body.documents == "refs"
    return judging.documents_as_refs(answer) if refs else answer


@judging_loop.get("/tasks/{task_id}/answers", response_model=list[AnswerOut])
async def review_answers(task_id: int, db: DbDep, caller: Caller) -> list[Payload]:
    """The task's live answers, oldest first (the assessor's review list; read-only)."""
    return await offload.run(
        db, lambda: judging.review_answers(db=db, user=caller, task_id=task_id)
    )


@router.get(
    "/tasks/{task_id}/result",
    response_model=ResultOut,
    response_model_exclude_none=True,
    responses={409: {"description": "The task is not finished."}},
)
def task_result(task_id: int, db: DbDep, user: CurrentUser) -> Any:
    """topk: k, top, rest, judgments, active_ms; graded: grades. 409 while not done."""
    return results.task_result(db=db, user=user, task_id=task_id)


router.include_router(admin)
declare_errors(router)
declare_errors(judging_loop)
