"""Admin page: a collection's runs (docs/admin-guide.md#runs-and-leaderboards).

* ``GET /admin/collections/{id}/runs`` — the stored runs and the upload form; for a label
  set and a metric (and a test and correction): the leaderboard, the matrix of pairwise
  tests, two runs' per-query plots and, with a second label set, the agreement of the two
  system orderings. One GET form holds every choice, so a view is a link; its run picker
  (``compare``, once per run) chooses the runs compared: by default every run, or the first
  ``compare_max_runs`` by upload order when the collection has more (the page says so);
* ``POST /admin/collections/{id}/runs`` — upload (multipart ``run`` files, all or nothing; a
  refused upload comes back on the page with its errors, file and line);
* ``POST /admin/collections/{id}/runs/{run_id}/delete`` — delete a run;
* the "Pool these runs" form posts to ``/admin/collections/{id}/runs/pool``
  (:mod:`app.web.pools`), which shows a refused pool here with :func:`runs_response`;
* ``GET /admin/collections/{id}/runs/plot.svg`` — a per-query plot of two runs, as an SVG
  document (:mod:`app.runs.plots`). The page draws the same plots inside its HTML (its policy
  loads no image from a URL: ``img-src data:``, app/http/middleware.py) and links these.

Every figure comes from the use cases the REST API uses (:mod:`app.runs.evaluation`).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from app.auth import sessions
from app.collections import service as collections
from app.collections.uploads import UploadedFile
from app.http.bounded import run_bounded
from app.http.deps import DbDep, require_csrf_form, upload_form
from app.kernel.errors import DomainError, PayloadTooLarge
from app.runs import evaluation, labelsets, plots
from app.runs import service as runs
from app.web.admin import admin_page, admin_session, back, guarded_post
from app.web.forms import FormErrors, form_errors
from ranking import metrics as M
from ranking.compare.significance import CORRECTIONS, TESTS

router = APIRouter()

#: The view's choices (query parameters) and their defaults.
VIEW_DEFAULTS = {
    "label_set": "",
    "metric": "ndcg@10",
    "preset": "",
    "test": "t",
    "correction": "holm",
    "alpha": "0.05",
    "against": "",
    "run_a": "",
    "run_b": "",
}
PLOT_KINDS = {"difference": "sorted differences", "scatter": "scatter"}
#: The pooling methods the "Pool these runs" form offers (docs/campaigns.md#pools).
POOL_METHODS = {
    "depth": "depth: the depth-k union in fused order",
    "mtf": "mtf: Move-to-Front",
    "maxmean": "maxmean: the MaxMean bandit",
    "hedge": "hedge: Hedge over the runs",
    "cal": "cal: continuous active learning (needs feature vectors)",
}


def _view(request: Request) -> dict[str, str]:
    return {
        k: request.query_params.get(k, default).strip() or default
        for k, default in VIEW_DEFAULTS.items()
    }


def compared_runs(request: Request, names: list[str], cap: int) -> tuple[list[str], str]:
    """The runs the view compares and a note: the picker's (``compare``, once per run; the
    use cases refuse unknown names and more than ``cap``, and the page shows why), else every
    run, or the first ``cap`` by upload order when there are more (one comparison takes at
    most ``cap``: docs/performance.md#bounded-requests), with a note that says so."""
    chosen = list(dict.fromkeys(v.strip() for v in request.query_params.getlist("compare")))
    chosen = [v for v in chosen if v]
    if chosen:
        return chosen, ""
    if len(names) <= cap:
        return names, ""
    note = (
        f"The collection has {len(names)} runs and one comparison takes at most {cap}: "
        f"comparing the first {cap} by upload order. Pick the runs to compare below."
    )
    return names[:cap], note


def _scoring(view: dict[str, str], label_set: str) -> evaluation.Scoring:
    try:
        alpha = float(view["alpha"])
    except ValueError:
        alpha = -1.0  # refused by Scoring.checked, naming alpha
    return evaluation.Scoring(
        label_set, view["metric"], view["preset"] or None, view["test"], view["correction"], alpha
    )


def _pair(board: dict[str, Any] | None, view: dict[str, str], names: list[str]) -> list[str]:
    """The two runs of the plots: those chosen, else the leaderboard's first two."""
    ranked = [r["run"] for r in board["runs"]] if board else names
    a = view["run_a"] if view["run_a"] in names else (ranked[0] if ranked else "")
    rest = [n for n in ranked if n != a]
    b = (
        view["run_b"]
        if view["run_b"] in names and view["run_b"] != a
        else (rest[0] if rest else "")
    )
    return [a, b] if a and b else []


def matrix_rows(board: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The matrix as rows of cells, best run first: above the diagonal the difference (row −
    column) and the adjusted p-value, marked when significant; the diagonal and below empty."""
    if not board or not board.get("matrix"):
        return []
    matrix = board["matrix"]
    pairs = {(p["system_a"], p["system_b"]): p for p in matrix["pairs"]}
    systems = matrix["systems"]
    rows = []
    for i, a in enumerate(systems):
        cells = []
        for j, b in enumerate(systems):
            p = pairs.get((a, b)) if j > i else None
            cells.append(p)
        rows.append({"run": a, "cells": cells})
    return rows


def pair_plots(board: dict[str, Any] | None, pair: list[str]) -> dict[str, Markup]:
    """The per-query plots of the two runs of ``pair`` from the leaderboard's per-query values
    (queries either run's metric skipped left out), as SVG markup by kind. The markup comes
    from :mod:`app.runs.plots`, which escapes every text it writes."""
    if not board or not board.get("per_query") or len(pair) != 2:
        return {}
    per_query = board["per_query"]
    a_values, b_values = (per_query["values"][name] for name in pair)
    kept = [
        (q, a, b)
        for q, a, b in zip(per_query["queries"], a_values, b_values, strict=True)
        if a is not None and b is not None
    ]
    queries, a, b = [k[0] for k in kept], [k[1] for k in kept], [k[2] for k in kept]
    return {
        kind: Markup(draw(queries, a, b, pair[0], pair[1], board["metric"]))
        for kind, draw in plots.PLOTS.items()
    }


async def _compute(
    request: Request,
    db: Any,
    collection_id: int,
    view: dict[str, str],
    label_set: str,
    names: list[str],
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, list[str]]:
    """(leaderboard, agreement, errors) of the view over the runs ``names``; an error is
    shown, not raised. The work is bounded as the REST leaderboard's
    (:func:`app.http.bounded.run_bounded`)."""
    errors: list[str] = []
    board = agreement = None
    if not names or not label_set:
        return None, None, errors
    scoring = _scoring(view, label_set)
    budget = evaluation.request_budget(db)
    try:
        board = await run_bounded(
            request,
            budget,
            evaluation.run_leaderboard,
            db=db,
            collection_id=collection_id,
            scoring=scoring,
            per_query=True,
            names=names,
            budget=budget,
        )
    except DomainError as exc:
        errors.append(f"Leaderboard: {exc.detail}")
    if view["against"] and board is not None:
        try:
            agreement = await run_bounded(
                request,
                budget,
                evaluation.label_set_agreement,
                db=db,
                collection_id=collection_id,
                scoring=scoring,
                against=view["against"],
                names=names,
                budget=budget,
            )
        except DomainError as exc:
            errors.append(f"Agreement: {exc.detail}")
    return board, agreement, errors


async def runs_response(
    request: Request,
    resolved: sessions.ResolvedSession,
    db: Any,
    collection_id: int,
    *,
    upload_errors: FormErrors | None = None,
    pool_errors: FormErrors | None = None,
    pool_form: dict[str, Any] | None = None,
    status: int = 200,
) -> Response:
    """The runs page for the view in the query string; ``upload_errors``: a refused upload;
    ``pool_errors`` and ``pool_form`` (the posted values): a refused "Pool these runs"."""
    try:
        summary = await run_in_threadpool(
            collections.get_collection, db=db, collection_id=collection_id, viewer=None
        )
        stored = await run_in_threadpool(runs.list_runs, db=db, collection_id=collection_id)
        sets = await run_in_threadpool(labelsets.label_sets, db=db, collection_id=collection_id)
    except DomainError as exc:
        missing = {"title": "Not found", "message": str(exc.detail)}
        return admin_page(request, resolved, "error.html", missing, status=exc.status_code)
    view = _view(request)
    available = [ls.key for ls in sets if ls.available]
    label_set = view["label_set"] or (available[0] if available else "")
    view["label_set"] = label_set
    names = [r.name for r in stored]
    compared, compare_note = compared_runs(request, names, db.settings.compare_max_runs)
    board, agreement, errors = await _compute(request, db, collection_id, view, label_set, compared)
    pair = _pair(board, view, [n for n in compared if n in names])
    context: dict[str, Any] = {
        "collection": summary,
        "runs": stored,
        "label_sets": sets,
        "view": view,
        "compared": compared,
        "compare_note": compare_note,
        "compare_max_runs": db.settings.compare_max_runs,
        "board": board,
        "matrix": matrix_rows(board),
        "agreement": agreement,
        "errors": errors,
        "pair": pair,
        "plots": pair_plots(board, pair),
        "plot_kinds": PLOT_KINDS,
        "presets": list(M.PRESETS),
        "tests": TESTS,
        "corrections": CORRECTIONS,
        "upload_errors": upload_errors,
        "pool_errors": pool_errors,
        "pool_form": pool_form or {},
        "pool_methods": POOL_METHODS,
    }
    if errors and status == 200:
        status = 422
    return admin_page(request, resolved, "runs/runs.html", context, status=status)


@router.get("/admin/collections/{collection_id}/runs")
async def runs_page(request: Request, collection_id: int, db: DbDep) -> Response:
    resolved, early = await admin_session(request, db)
    if early is not None:
        return early
    assert resolved is not None
    return await runs_response(request, resolved, db, collection_id)


@router.post("/admin/collections/{collection_id}/runs", dependencies=[Depends(require_csrf_form)])
async def upload_page(request: Request, collection_id: int, db: DbDep) -> Response:
    resolved, early = await guarded_post(request)
    if early is not None:
        return early
    form, within_limits = await upload_form(request)
    files = [
        UploadedFile(value.filename, value.file)
        for key, value in form.multi_items()
        if key == "run" and isinstance(value, UploadFile) and value.filename
    ]
    name = form.get("name")
    try:
        if not within_limits:
            raise PayloadTooLarge("too many files: upload at most 8 runs at a time")
        report = await run_in_threadpool(
            runs.upload_runs,
            db=db,
            collection_id=collection_id,
            files=files,
            name=name if isinstance(name, str) else None,
            uploaded_by=resolved.user.id,
            ignore_unknown_queries=form.get("ignore_unknown_queries") == "1",
        )
    except DomainError as exc:
        only = files[0].name if len(files) == 1 else ""
        errors = form_errors(exc, "No run was stored.", file=only)
        return await runs_response(
            request, resolved, db, collection_id, upload_errors=errors, status=exc.status_code
        )
    stored = ", ".join(
        f"{u.run.name} ({u.run.queries} queries, {u.run.entries} entries)" for u in report.runs
    )
    return back(request, f"/admin/collections/{collection_id}/runs", f"Stored {stored}.")


@router.post(
    "/admin/collections/{collection_id}/runs/{run_id}/delete",
    dependencies=[Depends(require_csrf_form)],
)
async def delete_page(request: Request, collection_id: int, run_id: int, db: DbDep) -> Response:
    _, early = await guarded_post(request)
    if early is not None:
        return early
    url = f"/admin/collections/{collection_id}/runs"
    try:
        gone = await run_in_threadpool(
            runs.delete_run, db=db, collection_id=collection_id, run=run_id
        )
    except DomainError as exc:
        return back(request, url, str(exc.detail), "error")
    return back(request, url, f"Deleted run {gone.name}.")


@router.get("/admin/collections/{collection_id}/runs/plot.svg")
async def plot_svg(request: Request, collection_id: int, db: DbDep) -> Response:
    """A per-query plot of two runs (``kind``: difference or scatter) as an SVG document."""
    _, early = await admin_session(request, db)
    if early is not None:
        return early
    view = _view(request)
    kind = request.query_params.get("kind", "difference")
    draw = plots.PLOTS.get(kind)
    if draw is None or not view["run_a"] or not view["run_b"]:
        return Response("choose kind=difference|scatter, run_a and run_b", status_code=422)
    try:
        values = await run_in_threadpool(
            evaluation.pair_values,
            db=db,
            collection_id=collection_id,
            scoring=_scoring(view, view["label_set"] or "qrels"),
            run_a=view["run_a"],
            run_b=view["run_b"],
        )
    except DomainError as exc:
        return Response(str(exc.detail), status_code=exc.status_code, media_type="text/plain")
    svg = draw(
        values["queries"], values["a"], values["b"], view["run_a"], view["run_b"], view["metric"]
    )
    return Response(svg, media_type="image/svg+xml")
