"""REST API v1: tasks (create, list, get) and a task's result."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from app.http.deps import CurrentUser, DbDep, require_admin
from app.http.openapi import declare_errors, error_responses
from app.http.schemas import MAX_ID, PathId, TaskStatus
from app.tasks import priors, results
from app.tasks import service as tasks
from app.tasks.schemas import ResultOut, TaskCreate, TaskOut

router = APIRouter(tags=["tasks"])
admin = APIRouter(dependencies=[Depends(require_admin)])


@admin.post("/tasks", response_model=TaskOut, status_code=201, responses=error_responses(404))
def create_task(body: TaskCreate, db: DbDep) -> TaskOut:
    """Assign an assessor to a query (admin). ``options.strategy`` picks the judging strategy;
    ``prior`` the initial order (docs/rest-api.md#tasks-strategies-and-priors)."""
    prior = body.prior
    source = None
    if isinstance(prior, str):
        source = priors.check_source(prior)
    elif prior is not None:
        stored = (
            priors.load_stored_run(db, body.collection_id, prior.stored_run, "prior.stored_run")
            if prior.stored_run is not None
            else None
        )
        source = priors.check_source(prior.source, prior.run, stored)
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
    collection_id: Annotated[int | None, Query(lt=MAX_ID + 1)] = None,
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
def get_task(task_id: PathId, db: DbDep, user: CurrentUser) -> TaskOut:
    return TaskOut(**asdict(tasks.get_task(db=db, user=user, task_id=task_id)))


@router.get(
    "/tasks/{task_id}/result",
    response_model=ResultOut,
    response_model_exclude_none=True,
    responses={409: {"description": "The task is not finished."}},
)
def task_result(task_id: PathId, db: DbDep, user: CurrentUser) -> Any:
    """topk: k, top, rest, judgments, active_ms; graded: grades. 409 while not done."""
    return results.task_result(db=db, user=user, task_id=task_id)


router.include_router(admin)
declare_errors(router)
