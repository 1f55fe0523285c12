"""Admin page posts: the plan form (``POST /admin/collections/{id}/plan``): the preview (grid
and constraint check, :func:`app.planning.service.preview_plan`), whose "Create tasks" button
posts the same fields with ``create=1`` (:func:`app.planning.service.create_plan`)."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile

from app.auth import sessions
from app.http.deps import DbDep, require_csrf_form
from app.kernel.errors import DomainError, Invalid
from app.planning import service as planning
from app.planning.cost import COST_MODEL
from app.planning.pooling import RANKED_POOLS, STORED_POOL
from app.planning.spec import PlanSpec, PoolSpec
from app.web.admin import admin_page, back, guarded_form
from app.web.collections import collection_response
from app.web.forms import (
    RUN_UPLOAD,
    FormErrors,
    chosen_files,
    form_errors,
    form_field,
    form_int,
    posted_values,
)

router = APIRouter()

#: The hidden field that carries the run's text from the preview page to its "Create tasks"
#: post (a file input cannot be re-posted).
RUN_TEXT = "pool_run_text"


async def _run_text(form: FormData) -> str | None:
    """The TREC run of a ``pool_mode=run`` plan: the uploaded file (UTF-8), else the text the
    preview page carried over; None when neither was given (the service then says so)."""
    upload = form.get(RUN_UPLOAD)
    if isinstance(upload, UploadFile) and upload.filename:
        raw = await upload.read()
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as err:
            line = raw[: err.start].count(b"\n") + 1
            raise Invalid(f"{upload.filename}:{line}: the run is not UTF-8 text") from None
    text = form.get(RUN_TEXT)
    return text if isinstance(text, str) and text.strip() else None


def _accuracy(form: FormData, name: str = "machine_accuracy") -> float | None:
    """The optional number field ``name`` (``machine_accuracy``, ``machine_max_loss``; the
    service checks its range)."""
    value = form_field(form, name)
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        raise Invalid(f"{name} must be a number, got {value[:20]!r}") from None


def _plan_spec(collection_id: int, form: FormData, run: str | None = None) -> PlanSpec:
    """The plan form as a :class:`PlanSpec`, with the REST/CLI semantics: the pool
    size n is "Pool size n" for a sample and "Run depth" (empty = the whole run) for
    ``pool_mode=run``, whose documents are the top n of the run that the query has. A run
    stored on the collection (``stored_run``, the select beside the file input) is the
    pool's run with ``pool_mode=run``, else the prior's with ``prior=run`` (a file chosen as
    well is refused by :func:`plan_page`)."""
    options: dict[str, dict[str, Any]] = {
        "topk": {
            key: form.get(f"opt_{key}") == "1"
            for key in ("allow_ties", "pair_cache", "not_relevant")
        }
    }
    strategy = form_field(form, "strategy")
    if strategy:
        options["topk"]["strategy"] = strategy
    prior = form_field(form, "prior", "none") or "none"
    if prior == "feature":
        prior = f"feature:{form_field(form, 'prior_feature')}"
    elif prior == "model":
        prior = f"model:{form_field(form, 'prior_model_run')}"
    machine = form_field(form, "machine") or None
    if machine == "model":
        machine = f"model:{form_field(form, 'machine_run')}"
    queries = form_field(form, "query_ids")
    mode = form_field(form, "pool_mode", "all")
    n = form_int(form, "run_depth") if mode == "run" else form_int(form, "pool_n")
    stored = (form_field(form, "stored_run") or None) if run is None else None
    return PlanSpec(
        collection_id=collection_id,
        assessors=[v for v in form.getlist("assessors") if isinstance(v, str) and v],
        query_ids=[q.strip() for q in queries.split(",") if q.strip()] if queries else None,
        scheme=form_field(form, "scheme", "rotation"),
        shifts=tuple(
            int(x) for x in form_field(form, "shifts", "0,2").split(",") if x.strip().isdigit()
        ),
        per_query={
            "topk": int(form_field(form, "per_topk", "2") or 0),
            "graded": int(form_field(form, "per_graded", "2") or 0),
        },
        seed=int(form_field(form, "seed", "0") or 0),
        csv=form_field(form, "csv") or None,
        name=form_field(form, "name", "plan") or "plan",
        k=int(form_field(form, "k", "10") or 10),
        options=options,
        pool=PoolSpec(
            mode=mode,
            n=n,
            seed=int(form_field(form, "pool_seed", "0") or 0),
            dedupe=form.get("dedupe") == "1",
            run=run if mode == "run" else None,
            stored_run=stored if mode == "run" else None,
            run_order=mode in (*RANKED_POOLS, STORED_POOL) and form.get("run_order") == "1",
            pool_id=form_int(form, "pool_id") if mode == STORED_POOL else None,
        ),
        prior=prior,
        prior_run=run if prior == "run" else None,
        prior_stored_run=stored if prior == "run" and mode != "run" else None,
        machine=machine,
        machine_max_loss=_accuracy(form, "machine_max_loss"),
        machine_accuracy=_accuracy(form),
    )


@router.post("/admin/collections/{collection_id}/plan", dependencies=[Depends(require_csrf_form)])
async def plan_page(request: Request, collection_id: int, db: DbDep) -> Response:
    resolved, form, early = await guarded_form(request)
    if early is not None:
        return early
    url = f"/admin/collections/{collection_id}"
    creating = form.get("create") == "1"
    summary = "The plan was not created."
    try:
        wants_run = form_field(form, "pool_mode") == "run" or form_field(form, "prior") == "run"
        run = await _run_text(form) if wants_run else None
        if run is not None and form_field(form, "stored_run"):
            raise Invalid("choose a run file or a stored run, not both")
        spec = _plan_spec(collection_id, form, run)
        if creating:
            created = await run_in_threadpool(planning.create_plan, db=db, spec=spec)
            return back(
                request, url, f"Created {len(created.task_ids)} tasks (plan {created.name!r})."
            )
        preview = await run_in_threadpool(planning.preview_plan, db=db, spec=spec)
    except ValueError:
        return await _plan_refused(
            request,
            resolved,
            db,
            collection_id,
            form,
            FormErrors(summary, ["Numbers expected for k, seeds and sizes."]),
        )
    except DomainError as exc:
        return await _plan_refused(
            request, resolved, db, collection_id, form, form_errors(exc, summary), exc.status_code
        )
    hidden = [
        (k, v)
        for k, v in form.multi_items()
        if k not in ("csrf_token", "create", RUN_TEXT) and isinstance(v, str)
    ]
    if run is not None:
        hidden.append((RUN_TEXT, run))
    return admin_page(
        request,
        resolved,
        "planning/plan.html",
        {
            "collection_id": collection_id,
            "preview": preview,
            "hidden": hidden,
            "hidden_choose": [(k, v) for k, v in hidden if k != "strategy"],
            "options_json": json.dumps(preview.options),
            "csv": planning.plan_entries_csv(preview),
            "cost_model": COST_MODEL,
        },
    )


async def _plan_refused(
    request: Request,
    resolved: sessions.ResolvedSession,
    db: Any,
    collection_id: int,
    form: FormData,
    errors: FormErrors,
    status: int = 422,
) -> Response:
    """The collection page with the plan form as posted and its errors. A run chosen for
    pooling must be chosen again; one carried over from the preview page comes back in the
    hidden field."""
    values = posted_values(form)
    return await collection_response(
        request,
        resolved,
        db,
        collection_id,
        forms={"plan": values},
        errors={"plan": errors},
        rechoose=chosen_files(form),
        status=status,
    )
