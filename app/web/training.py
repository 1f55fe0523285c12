"""Admin pages of the trainer (docs/admin-guide.md#training) and the text-features button.

* ``GET /admin/collections/{id}/training`` — start a run (model, truth, kind, folds, features,
  k, seed, hyperparameters as JSON, time limit) and the collection's runs with their status,
  refreshed by the admin script from ``.../training/runs-fragment``;
* ``POST /admin/collections/{id}/training`` — start it: the same use case as ``POST
  /api/v1/training-runs``; a run that cannot succeed comes back on the page with the service's
  message (422), nothing recorded;
* ``GET /admin/training-runs/{id}`` — a run: status, progress, per-fold and mean test metrics,
  the kept model and why, the table of the model beside BM25 and LightGBM on the same folds
  with the paired test and its sentence, error, cancel; refreshed from
  ``.../status-fragment``; ``POST .../cancel`` cancels it;
* ``POST /admin/collections/{id}/features`` — the collection page's "Compute text features"
  button: the features job of ``POST /api/v1/admin/collections/{id}/features``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from app.auth import sessions
from app.collections import service as collections
from app.http.deps import DbDep, require_csrf_form
from app.kernel.errors import DomainError, Invalid
from app.machine import grades
from app.machine.jobs import enqueue_grades
from app.training import features
from app.training import service as training
from app.training.jobs import enqueue_features, enqueue_training
from app.web.admin import admin_error, admin_page, admin_session, back, guarded_form
from app.web.collections import refused_form
from app.web.forms import FormErrors, error_text, form_errors, form_field, form_int, posted_values

router = APIRouter()

#: The models offered first in the form (the rest of the registry follows).
FIRST_MODELS = ("listnet", "ranknet", "focusednet", "focusedboost", "topk-listmle")
FORM_DEFAULTS = {
    "model": "listnet",
    "truth": "study",
    "kind": "",
    "folds": "auto",
    "features": "stored",
    "k": "",
    "seed": "0",
    "params": "{}",
    "time_limit_seconds": "",
}


def model_names() -> list[str]:
    """Every estimator name, the common ones first."""
    from ranking.estimators import ESTIMATORS

    return [*FIRST_MODELS, *sorted(m for m in ESTIMATORS if m not in FIRST_MODELS)]


def run_options(form: FormData) -> tuple[str, dict[str, Any], dict[str, Any], int | None]:
    """The start form as (model, params, options, time limit); Invalid naming the field."""
    raw = form_field(form, "params") or "{}"
    try:
        params = json.loads(raw)
    except ValueError as exc:
        raise Invalid(f"hyperparameters must be a JSON object: {exc}") from None
    if not isinstance(params, dict):
        raise Invalid('hyperparameters must be a JSON object, e.g. {"epochs": 20}')
    folds_text = form_field(form, "folds", "auto")
    folds: str | int = (
        int(folds_text) if folds_text.isascii() and folds_text.isdigit() else folds_text
    )
    options: dict[str, Any] = {
        "truth": form_field(form, "truth", "study"),
        "folds": folds,
        "features": form_field(form, "features", "stored"),
        "seed": form_int(form, "seed") or 0,
    }
    if kind := form_field(form, "kind"):
        options["kind"] = kind
    if (k := form_int(form, "k")) is not None:
        options["k"] = k
    return form_field(form, "model"), params, options, form_int(form, "time_limit_seconds")


def run_view(run: dict[str, Any]) -> dict[str, Any]:
    """A run as the pages show it: finished or not, and its progress in words."""
    p = run.get("progress") or {}
    stage = str(p.get("stage") or "")
    if stage == "fitting":  # the job counts folds from 1 (app.training.execution)
        text = (
            f"fold {p.get('fold', 1)} of {p.get('folds', '?')}, iteration "
            f"{p.get('iteration', 0)} of {p.get('iterations', '?')}"
        )
    elif p.get("iterations"):  # the refit and the baselines after the folds
        text = f"{stage}, iteration {p.get('iteration', 0)} of {p['iterations']}"
    else:
        text = "" if stage == "done" else stage
    comparison = (run.get("metrics") or {}).get("comparison")
    return {
        **run,
        "finished": run["status"] in training.FINISHED,
        "progress_text": text,
        "comparison": comparison,
    }


async def _runs(db: Any, collection_id: int) -> list[dict[str, Any]]:
    runs = await run_in_threadpool(training.list_runs, db=db, collection_id=collection_id)
    return [run_view(r) for r in runs]


async def training_response(
    request: Request,
    resolved: sessions.ResolvedSession,
    db: Any,
    collection_id: int,
    *,
    form: dict[str, Any] | None = None,
    error: FormErrors | None = None,
    status: int = 200,
) -> Response:
    """The training page of a collection; ``form``/``error`` refill a refused start form."""
    try:
        summary = await run_in_threadpool(
            collections.get_collection, db=db, collection_id=collection_id, viewer=None
        )
        status_view = await run_in_threadpool(
            features.features_view, db=db, collection_id=collection_id
        )
    except DomainError as exc:
        return admin_error(request, resolved, exc)
    return admin_page(
        request,
        resolved,
        "training/training.html",
        {
            "collection": summary,
            "features": status_view,
            "models": model_names(),
            "form": {**FORM_DEFAULTS, **(form or {})},
            "error": error,
            "runs": await _runs(db, collection_id),
        },
        status=status,
    )


@router.get("/admin/collections/{collection_id}/training")
async def training_page(request: Request, collection_id: int, db: DbDep) -> Response:
    resolved, early = await admin_session(request, db)
    if early is not None:
        return early
    assert resolved is not None
    return await training_response(request, resolved, db, collection_id)


@router.get("/admin/collections/{collection_id}/training/runs-fragment")
async def runs_fragment(request: Request, collection_id: int, db: DbDep) -> Response:
    """The runs table alone (the page's script swaps it in every few seconds); 401 without a
    session, not the login page, which the script would swap in."""
    resolved, early = await admin_session(request, db)
    if resolved is None:
        return Response("session expired; reload the page", status_code=401)
    if early is not None:
        return early
    return admin_page(
        request, resolved, "training/_runs.html", {"runs": await _runs(db, collection_id)}
    )


@router.post(
    "/admin/collections/{collection_id}/training", dependencies=[Depends(require_csrf_form)]
)
async def start_run(request: Request, collection_id: int, db: DbDep) -> Response:
    resolved, form, early = await guarded_form(request)
    if early is not None:
        return early
    try:
        model, params, options, limit = run_options(form)
        run = await run_in_threadpool(
            training.create_run,
            db=db,
            collection_id=collection_id,
            model=model,
            params=params,
            options=options,
            time_limit_seconds=limit,
        )
        await run_in_threadpool(enqueue_training, db.settings, run["id"])
    except DomainError as exc:
        return await training_response(
            request,
            resolved,
            db,
            collection_id,
            form=posted_values(form),
            error=form_errors(exc, "The run was not started."),
            status=exc.status_code,
        )
    return back(request, f"/admin/training-runs/{run['id']}", f"Training run {run['id']} queued.")


async def _run_context(db: Any, run_id: int) -> dict[str, Any]:
    run = await run_in_threadpool(training.get_run, db=db, run_id=run_id)
    return {"run": run_view({**run, "model_json": None})}


@router.get("/admin/training-runs/{run_id}")
async def run_page(request: Request, run_id: int, db: DbDep) -> Response:
    resolved, early = await admin_session(request, db)
    if early is not None:
        return early
    assert resolved is not None
    try:
        ctx = await _run_context(db, run_id)
    except DomainError as exc:
        return admin_error(request, resolved, exc)
    return admin_page(request, resolved, "training/run.html", ctx)


@router.get("/admin/training-runs/{run_id}/status-fragment")
async def run_fragment(request: Request, run_id: int, db: DbDep) -> Response:
    """The run's status and metrics alone (refreshed by the page's script)."""
    resolved, early = await admin_session(request, db)
    if resolved is None:
        return Response("session expired; reload the page", status_code=401)
    if early is not None:
        return early
    try:
        ctx = await _run_context(db, run_id)
    except DomainError as exc:
        return Response(error_text(exc), status_code=exc.status_code)
    return admin_page(request, resolved, "training/_run.html", ctx)


@router.post("/admin/training-runs/{run_id}/cancel", dependencies=[Depends(require_csrf_form)])
async def cancel_run(request: Request, run_id: int, db: DbDep) -> Response:
    _resolved, _form, early = await guarded_form(request)
    if early is not None:
        return early
    url = f"/admin/training-runs/{run_id}"
    try:
        await run_in_threadpool(training.cancel_run, db=db, run_id=run_id)
    except DomainError as exc:
        return back(request, url, f"Not cancelled: {error_text(exc)}", "error")
    return back(request, url, f"Training run {run_id} cancelled.")


@dataclass(frozen=True, slots=True)
class _CollectionJob:
    """A collection form that queues a job: the form's name on the page, the card it comes back
    to, and what the page says when it is refused or queued."""

    form: str
    anchor: str
    refused: str
    queued: str


async def _queue_job(
    request: Request,
    collection_id: int,
    job: _CollectionJob,
    queue: Callable[[FormData], Awaitable[object]],
    db: Any,
) -> Response:
    """The CSRF-checked form ``job.form``: ``queue(form)`` (checks, then enqueues), then back to
    the collection page's card; a refusal shows the page again with the reasons."""
    resolved, form, early = await guarded_form(request)
    if early is not None:
        return early
    try:
        await queue(form)
    except DomainError as exc:
        return await refused_form(
            request, resolved, db, collection_id, job.form, form, exc, job.refused
        )
    return back(request, f"/admin/collections/{collection_id}#{job.anchor}", job.queued)


TEXT_FEATURES = _CollectionJob(
    "textfeatures",
    "text-features",
    "The features were not computed.",
    "Text features queued: the worker computes them (reload to see when they are done).",
)
LLM_GRADES = _CollectionJob(
    "llmgrades",
    "llm-grades",
    "The documents were not graded.",
    "LLM grades queued: the worker asks the model (reload to see how many are done).",
)


@router.post(
    "/admin/collections/{collection_id}/features", dependencies=[Depends(require_csrf_form)]
)
async def compute_features(request: Request, collection_id: int, db: DbDep) -> Response:
    """Queue the features job (``replace=1`` replaces imported vectors)."""

    async def queue(form: FormData) -> None:
        replace = form.get("replace") == "1"
        await run_in_threadpool(
            features.request_features, db=db, collection_id=collection_id, replace=replace
        )
        await run_in_threadpool(enqueue_features, db.settings, collection_id, replace)

    return await _queue_job(request, collection_id, TEXT_FEATURES, queue, db)


@router.post(
    "/admin/collections/{collection_id}/llm-grades", dependencies=[Depends(require_csrf_form)]
)
async def request_llm_grades(request: Request, collection_id: int, db: DbDep) -> Response:
    """Queue the LLM grades of every document of the collection (the ``llm`` prior)."""

    async def queue(_form: FormData) -> None:
        await run_in_threadpool(grades.grade_status, db, collection_id)
        await run_in_threadpool(enqueue_grades, db.settings, collection_id, None)

    return await _queue_job(request, collection_id, LLM_GRADES, queue, db)
