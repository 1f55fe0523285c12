"""Admin pages of a collection: its page (progress, imports, plan form, export form,
guidelines, settings), the progress fragment the page refreshes, and the posts that create a
collection, change its settings and preview or save its guidelines.

* ``GET /admin/collections/{id}`` — progress (auto-refreshed by the admin script from
  ``GET /admin/collections/{id}/progress-fragment``), imports, plan form, export form;
* ``POST /admin/collections/{id}/guidelines`` — the judging guidelines: ``action=preview``
  shows the sanitised HTML and stores nothing, ``action=save`` stores them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from app.auth import sessions
from app.campaign_pools import service as pools
from app.collections import manage as collections_manage
from app.collections import service as collections
from app.exports import service as exports
from app.http.deps import DbDep, require_csrf_form
from app.kernel.errors import DomainError, Invalid
from app.machine import alarms, grades
from app.machine import service as machines
from app.planning.fit import fitting_per_query, fitting_shifts, plan_fit
from app.runs import service as runs
from app.tasks import progress
from app.training import features
from app.users import service as users
from app.web.admin import admin_error, admin_page, admin_session, back, guarded_form, home_response
from app.web.forms import FormErrors, error_text, form_errors, form_field, posted_values
from labeling.strategies.registry import strategy_names

router = APIRouter()


#: Chart geometry of the judgments-over-time bars (SVG user units).
CHART_W = 640
CHART_H = 160
CHART_LEFT = 36
CHART_BOTTOM = 22
MAX_BAR = 24


def timeline_chart(timeline: dict[str, Any]) -> dict[str, Any]:
    """Stacked bars (topk below, graded above) of judgments per time bucket."""
    points = timeline.get("points", [])
    plot_w = CHART_W - CHART_LEFT - 4
    plot_h = CHART_H - CHART_BOTTOM - 6
    peak = max((p["topk"] + p["graded"] for p in points), default=0) or 1
    slot = plot_w / max(len(points), 1)
    bars = []
    for i, p in enumerate(points):
        x = CHART_LEFT + i * slot
        h_t = plot_h * p["topk"] / peak
        h_g = plot_h * p["graded"] / peak
        base = 6 + plot_h
        label = f"{p['t'][:16].replace('T', ' ')}: {p['topk']} pair, {p['graded']} grade"
        bars.append(
            {
                "x": round(x, 2),
                "w": round(min(max(slot - 1, 1), MAX_BAR), 2),
                "yt": round(base - h_t, 2),
                "ht": round(h_t, 2),
                "yg": round(base - h_t - h_g, 2),
                "hg": round(h_g, 2),
                "title": label,
            }
        )
    return {
        "bars": bars,
        "width": CHART_W,
        "height": CHART_H,
        "left": CHART_LEFT,
        "axis_y": 6 + plot_h,
        "peak": peak,
        "bucket": timeline.get("bucket_seconds", 60),
        "first": points[0]["t"][:16].replace("T", " ") if points else "",
        "last": points[-1]["t"][:16].replace("T", " ") if points else "",
    }


async def _progress_context(db: Any, collection_id: int) -> dict[str, Any]:
    """The progress report of the collection and its chart."""
    report = await run_in_threadpool(
        progress.collection_progress, db=db, collection_id=collection_id
    )
    usage = await run_in_threadpool(machines.machine_usage, db=db, collection_id=collection_id)
    found = await run_in_threadpool(alarms.collection_alarms, db=db, collection_id=collection_id)
    return {
        "progress": report,
        "chart": timeline_chart(report["timeline"]),
        "usage": usage,
        "alarms": [a for a in found["alarms"] if a["active"]],
    }


@router.get("/admin/collections/{collection_id}")
async def collection_page(request: Request, collection_id: int, db: DbDep) -> Response:
    resolved, early = await admin_session(request, db)
    if early is not None:
        return early
    assert resolved is not None
    return await collection_response(request, resolved, db, collection_id)


async def collection_response(
    request: Request,
    resolved: sessions.ResolvedSession,
    db: Any,
    collection_id: int,
    *,
    export_form: dict[str, str] | None = None,
    export_error: str | None = None,
    forms: Mapping[str, Mapping[str, Any]] | None = None,
    errors: Mapping[str, FormErrors] | None = None,
    rechoose: Sequence[str] = (),
    guidelines_preview: str | None = None,
    status: int = 200,
) -> Response:
    """The collection page; ``export_form``/``export_error`` refill the export form and show
    why an export was refused; ``forms`` refills the other forms by name ("plan", "pools",
    "import", "grades", "features", "textfeatures", "settings", "guidelines"), ``errors`` lists
    why one was refused, ``rechoose`` names the files chosen for it (to be chosen again);
    ``guidelines_preview`` is the sanitised HTML of guidelines not saved yet (shown instead of
    the saved ones)."""
    try:
        summary = await run_in_threadpool(
            collections.get_collection, db=db, collection_id=collection_id, viewer=None
        )
        ctx = await _progress_context(db, collection_id)
        guidelines = await run_in_threadpool(
            collections.get_guidelines, db=db, collection_id=collection_id, viewer=None
        )
        text_features = await run_in_threadpool(
            features.features_view, db=db, collection_id=collection_id
        )
        llm_grades = (
            await run_in_threadpool(grades.grade_status, db, collection_id)
            if db.settings.llm_model
            else None
        )
    except DomainError as exc:
        return admin_error(request, resolved, exc)
    people = await run_in_threadpool(users.list_users, db=db)
    campaign_pools = await run_in_threadpool(pools.list_pools, db=db, collection_id=collection_id)
    stored_runs = await run_in_threadpool(runs.run_names, db=db, collection_id=collection_id)
    available = await run_in_threadpool(exports.availability, db=db, collection_id=collection_id)
    enabled = [u for u in people if not u.disabled]
    filled = dict(forms or {})
    if "plan" not in filled:
        filled["plan"] = plan_defaults([u.username for u in enabled if u.role == "assessor"])
    return admin_page(
        request,
        resolved,
        "collections/collection.html",
        {
            "collection": summary,
            "assessors": enabled,
            "strategies": strategy_names(),
            **export_context(available, export_form, export_error),
            "forms": filled,
            "errors": errors or {},
            "rechoose": list(rechoose),
            "plan_fit": plan_fit(len(filled["plan"].get("assessors", [])), summary.queries),
            "pools": campaign_pools,
            "stored_runs": stored_runs,
            "plan_fits": [plan_fit(m, summary.queries) for m in range(len(enabled) + 1)],
            "guidelines": guidelines,
            # Both are sanitised (app.collections.guidelines: markdown-it-py with raw HTML off,
            # then nh3).
            "guidelines_html": Markup(
                guidelines.html if guidelines_preview is None else guidelines_preview
            ),
            "guidelines_previewing": guidelines_preview is not None,
            "text_features": text_features,
            "llm_grades": llm_grades,
            **ctx,
        },
        status=status,
    )


async def refused_form(
    request: Request,
    resolved: sessions.ResolvedSession,
    db: Any,
    collection_id: int,
    name: str,
    form: FormData,
    exc: DomainError,
    message: str,
) -> Response:
    """The collection page again after its form ``name`` was refused: the form refilled with
    what was posted and ``message`` above the reasons."""
    return await collection_response(
        request,
        resolved,
        db,
        collection_id,
        forms={name: posted_values(form)},
        errors={name: form_errors(exc, message)},
        status=exc.status_code,
    )


def export_context(
    available: Mapping[str, str | None],
    export_form: dict[str, str] | None,
    export_error: str | None,
) -> dict[str, Any]:
    """The export form's part of the collection page: ``available`` says per format why its
    default export would be empty (None: it has lines)."""
    return {
        "export_formats": list(exports.FORMATS.values()),
        "export_empty": available,
        "export_letor": exports.LETOR_FORMATS,
        "export_no_features": exports.NO_FEATURES,
        # The form's default: the first format with lines (qrels on a text collection with a
        # finished top-k task), never a LETOR format without features.
        "export_default": next(
            (name for name, empty in available.items() if empty is None), "qrels"
        ),
        "export_form": export_form or {},
        "export_error": export_error,
    }


def plan_defaults(assessors: Sequence[str]) -> dict[str, Any]:
    """The plan form's initial values for the assessors ticked by default (every enabled
    assessor): shifts and per-query counts that fit their number."""
    return {
        "assessors": list(assessors),
        "scheme": "rotation",
        "shifts": fitting_shifts(len(assessors)),
        "per_topk": str(fitting_per_query(len(assessors))),
        "per_graded": str(fitting_per_query(len(assessors))),
        "k": "10",
        "opt_pair_cache": "1",
        "pool_mode": "all",
        "pool_n": "50",
        "pool_seed": "0",
        "seed": "0",
        "name": "study",
    }


@router.get("/admin/collections/{collection_id}/progress-fragment")
async def progress_fragment(request: Request, collection_id: int, db: DbDep) -> Response:
    """The progress section alone (the page's script swaps it in every few seconds).

    Without a session: 401, not the login redirect, which ``fetch`` would follow and the
    script would then swap a whole login page into the progress box."""
    resolved, early = await admin_session(request, db)
    if resolved is None:
        return Response("session expired; reload the page", status_code=401)
    if early is not None:
        return early
    assert resolved is not None
    try:
        ctx = await _progress_context(db, collection_id)
    except DomainError as exc:
        return Response(error_text(exc), status_code=exc.status_code)
    return admin_page(request, resolved, "collections/_progress.html", ctx)


@router.post("/admin/collections", dependencies=[Depends(require_csrf_form)])
async def create_collection(request: Request, db: DbDep) -> Response:
    resolved, form, early = await guarded_form(request)
    if early is not None:
        return early
    try:
        coll = await run_in_threadpool(
            collections.create_collection,
            db=db,
            name=form_field(form, "name"),
            description=form_field(form, "description"),
        )
    except DomainError as exc:
        return await home_response(
            request,
            resolved,
            db,
            forms={"collection": posted_values(form)},
            errors={"collection": form_errors(exc, "The collection was not created.")},
            status=exc.status_code,
        )
    return back(request, f"/admin/collections/{coll.id}", f"Collection {coll.name!r} created.")


@router.post(
    "/admin/collections/{collection_id}/settings", dependencies=[Depends(require_csrf_form)]
)
async def collection_settings(request: Request, collection_id: int, db: DbDep) -> Response:
    resolved, form, early = await guarded_form(request)
    if early is not None:
        return early
    url = f"/admin/collections/{collection_id}"
    try:
        if "\x00" in form_field(form, "name") + form_field(form, "description"):
            raise Invalid("name and description must not contain NUL")
        await run_in_threadpool(
            collections_manage.update_collection,
            db=db,
            collection_id=collection_id,
            name=form_field(form, "name") or None,
            description=form_field(form, "description"),
            archived=form.get("archived") == "1",
        )
    except DomainError as exc:
        return await refused_form(
            request,
            resolved,
            db,
            collection_id,
            "settings",
            form,
            exc,
            "The settings were not saved.",
        )
    return back(request, url, "Collection updated.")


@router.post(
    "/admin/collections/{collection_id}/guidelines", dependencies=[Depends(require_csrf_form)]
)
async def collection_guidelines(request: Request, collection_id: int, db: DbDep) -> Response:
    """Preview (``action=preview``: the page again with the sanitised HTML, nothing stored) or
    save (``action=save``) the collection's judging guidelines."""
    resolved, form, early = await guarded_form(request)
    if early is not None:
        return early
    raw = form.get("markdown")
    # Browsers post CRLF line ends; the API stores what it is sent, so store LF like it.
    markdown = raw.replace("\r\n", "\n") if isinstance(raw, str) else ""
    kept = {"guidelines": {"markdown": markdown}}  # the form as posted, shown again
    action = form_field(form, "action", "save")
    try:
        if action not in ("preview", "save"):
            raise Invalid(f"unknown action {action[:20]!r}: preview or save")
        if action == "preview":
            html = await run_in_threadpool(collections.preview_guidelines, markdown)
            return await collection_response(
                request,
                resolved,
                db,
                collection_id,
                forms=kept,
                guidelines_preview=html,
            )
        await run_in_threadpool(
            collections.set_guidelines, db=db, collection_id=collection_id, markdown=markdown
        )
    except DomainError as exc:
        return await collection_response(
            request,
            resolved,
            db,
            collection_id,
            forms=kept,
            errors={"guidelines": form_errors(exc, "The guidelines were not saved.")},
            status=exc.status_code,
        )
    return back(request, f"/admin/collections/{collection_id}#guidelines", "Guidelines saved.")
