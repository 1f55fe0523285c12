"""Admin pages of pools from many runs: the collection page's "Pool from runs" form
(``POST /admin/collections/{id}/pools``: run files, method, depth, budget, allocation;
:func:`app.campaign_pools.service.build_pool`), the runs page's "Pool these runs" form
(``POST /admin/collections/{id}/runs/pool``: the ticked stored runs, method, depth, budget,
allocation) and a pool's page (``GET /admin/pools/{id}``): its settings and, per pooled
document, the runs that retrieved it and at which rank."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from app.campaign_pools import run_input
from app.campaign_pools import service as pools
from app.http.deps import DbDep, require_csrf_form
from app.kernel.errors import DomainError, Invalid
from app.web.admin import admin_error, admin_page, admin_session, back, guarded_form
from app.web.collections import collection_response
from app.web.forms import chosen_files, form_errors, form_field, form_int, posted_values
from app.web.runs import runs_response

router = APIRouter()

#: The form's file input (several files), the runs page's run checkboxes, and the most rows a
#: pool page lists.
RUNS_FIELD = "runs"
STORED_FIELD = "stored_runs"
MAX_ROWS = 2000


def _settings(form: Any) -> dict[str, Any]:
    """The pool forms' settings: method, depth, budget, allocation, name, feedback."""
    return {
        "method": form_field(form, "method", "depth"),
        "depth": form_int(form, "depth") or 100,
        "budget": form_int(form, "budget"),
        "allocation": form_field(form, "allocation", "query"),
        "name": form_field(form, "name") or None,
        "feedback": form.get("feedback") == "1",
    }


def _spec(collection_id: int, form: Any) -> pools.BuildSpec:
    runs: dict[str, Any] = {}
    names: dict[str, str] = {}
    for value in form.getlist(RUNS_FIELD):
        if isinstance(value, UploadFile) and value.filename:
            name = run_input.run_name(value.filename)
            if name in runs:
                raise Invalid(f"two runs are named {name!r} (the file name names a run)")
            runs[name] = value.file
            names[name] = value.filename
    if not runs:
        raise Invalid("choose at least one TREC run file")
    return pools.BuildSpec(
        collection_id=collection_id, runs=runs, file_names=names, **_settings(form)
    )


def _stored_spec(collection_id: int, form: Any) -> pools.BuildSpec:
    chosen = [v for v in form.getlist(STORED_FIELD) if isinstance(v, str) and v]
    if not chosen:
        raise Invalid("tick at least one stored run")
    return pools.BuildSpec(collection_id=collection_id, stored=chosen, **_settings(form))


@router.post("/admin/collections/{collection_id}/pools", dependencies=[Depends(require_csrf_form)])
async def build_pool(request: Request, collection_id: int, db: DbDep) -> Response:
    resolved, form, early = await guarded_form(request)
    if early is not None:
        return early
    try:
        view = await run_in_threadpool(pools.build_pool, db=db, spec=_spec(collection_id, form))
    except DomainError as exc:
        return await collection_response(
            request,
            resolved,
            db,
            collection_id,
            forms={"pools": posted_values(form)},
            errors={"pools": form_errors(exc, "The pool was not built; nothing was stored.")},
            rechoose=chosen_files(form),
            status=exc.status_code,
        )
    return back(
        request,
        f"/admin/pools/{view.id}",
        f"Pool {view.name!r} built: {view.documents} documents pooled, {view.picked} picked.",
    )


@router.post(
    "/admin/collections/{collection_id}/runs/pool", dependencies=[Depends(require_csrf_form)]
)
async def pool_stored_runs(request: Request, collection_id: int, db: DbDep) -> Response:
    """The runs page's "Pool these runs": a pool from the ticked stored runs, then its page; a
    refused one comes back on the runs page with its errors and the form as posted."""
    resolved, form, early = await guarded_form(request)
    if early is not None:
        return early
    try:
        spec = _stored_spec(collection_id, form)
        view = await run_in_threadpool(pools.build_pool, db=db, spec=spec)
    except DomainError as exc:
        posted = posted_values(form)
        posted[STORED_FIELD] = [v for v in form.getlist(STORED_FIELD) if isinstance(v, str)]
        return await runs_response(
            request,
            resolved,
            db,
            collection_id,
            pool_errors=form_errors(exc, "The pool was not built; nothing was stored."),
            pool_form=posted,
            status=exc.status_code,
        )
    return back(
        request,
        f"/admin/pools/{view.id}",
        f"Pool {view.name!r} built from {len(view.runs)} stored runs: {view.documents} "
        f"documents pooled, {view.picked} picked.",
    )


@router.get("/admin/pools/{pool_id}")
async def pool_page(
    request: Request, pool_id: int, db: DbDep, query_id: str | None = None
) -> Response:
    resolved, early = await admin_session(request, db)
    if early is not None:
        return early
    assert resolved is not None
    chosen = [query_id] if query_id else None
    try:
        view, rows = await run_in_threadpool(
            pools.get_pool, db=db, pool_id=pool_id, query_ids=chosen
        )
    except DomainError as exc:
        return admin_error(request, resolved, exc)
    return admin_page(
        request,
        resolved,
        "pools/pool.html",
        {
            "pool": view,
            "rows": rows[:MAX_ROWS],
            "more": max(len(rows) - MAX_ROWS, 0),
            "query_id": query_id or "",
        },
    )
