"""Admin pages: collections (create, rename, archive, import), assessors, study plans,
live progress and exports. Server-rendered over the same services as the REST API.

* ``GET /admin`` — collections and users (workload, disable/enable, reset password);
* ``GET /admin/collections/{id}`` — progress (auto-refreshed by ``static/js/admin/`` from
  ``GET /admin/collections/{id}/progress-fragment``), imports, plan form, export form;
* ``GET /admin/collections/{id}/export`` — the export form's download (errors shown on the
  collection page, the form keeping its values);
* ``POST /admin/collections/{id}/plan`` — the plan preview (grid + constraint check), whose
  "Create tasks" button posts the same fields with ``create=1``;
* ``POST /admin/collections/{id}/guidelines`` — the judging guidelines: ``action=preview``
  shows the sanitised HTML and stores nothing, ``action=save`` stores them.

Every page needs an admin's browser session (login redirect without one, 403 page for an
assessor); every form post checks the CSRF field (``require_csrf_form``). A refused form comes
back on its page (status 422, or the service's status) with the values it was posted with, the
names of the files to choose again (a browser cannot refill a file input) and the errors as a
list (file, line, message; the first :data:`MAX_LISTED_ERRORS`, then "and M more"); never a
500. docs/admin-guide.md describes every page.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response, StreamingResponse
from markupsafe import Markup
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.datastructures import FormData, UploadFile

from app.auth import sessions
from app.collections import imports as admin_imports
from app.collections import manage as collections_manage
from app.collections import service as collections
from app.exports import service as exports
from app.http.deps import (
    MAX_UPLOAD_FIELDS,
    MAX_UPLOAD_FILES,
    DbDep,
    require_csrf_form,
    upload_form,
    web_session,
)
from app.kernel.errors import DomainError, Invalid
from app.planning import service as planning
from app.tasks import progress
from app.users import manage as users_manage
from app.users import service as users
from app.web.auth import login_redirect
from app.web.templates import render, set_flash
from labeling.strategies.registry import strategy_names

router = APIRouter()


#: Chart geometry of the judgments-over-time bars (SVG user units).
CHART_W = 640
CHART_H = 160
CHART_LEFT = 36
CHART_BOTTOM = 22
MAX_BAR = 24


async def admin_session(
    request: Request, db: Any
) -> tuple[sessions.ResolvedSession | None, Response | None]:
    """(session, early response) for an admin page: the early response is the login redirect
    without a session, or the 403 page for a non-admin (shared with the analysis page)."""
    resolved = await web_session(request, db)
    if resolved is None:
        return None, login_redirect(request)
    return resolved, _refuse_non_admin(request, resolved)


def _refuse_non_admin(request: Request, resolved: sessions.ResolvedSession) -> Response | None:
    """The 403 page unless the session's user is an admin."""
    if resolved.user.role == "admin":
        return None
    return admin_page(
        request,
        resolved,
        "error.html",
        {"title": "Admins only", "message": "This page is for admins."},
        status=403,
    )


def admin_page(
    request: Request,
    resolved: sessions.ResolvedSession,
    name: str,
    context: dict[str, Any],
    *,
    status: int = 200,
) -> Response:
    """Render ``name`` for the session's user in the admin section of the navigation."""
    return render(
        request,
        name,
        context,
        user=resolved.user,
        csrf_token=resolved.csrf_token,
        nav_active="admin",
        status_code=status,
    )


def _back(request: Request, url: str, message: str, level: str = "success") -> Response:
    response = RedirectResponse(url, status_code=303)
    set_flash(request, response, message, level)
    return response


#: Errors listed under a refused form; the rest are counted ("and M more").
MAX_LISTED_ERRORS = 10


@dataclass(frozen=True, slots=True)
class FormErrors:
    """Why a form was refused, as the page lists it."""

    summary: str
    items: list[str] = field(default_factory=list)
    more: int = 0
    """Errors not listed (beyond :data:`MAX_LISTED_ERRORS`, or beyond what the service
    reported)."""


def form_errors(exc: DomainError, summary: str, *, file: str = "") -> FormErrors:
    """The service error ``exc`` as a list: ``"file, line N: message"`` per located item
    (``file`` names items that carry none, e.g. the NDJSON import's), plain messages otherwise.
    The total comes from the service's ``"N error(s); ..."`` message when it capped its list."""
    detail = exc.detail
    if not isinstance(detail, list):
        return FormErrors(summary, [str(detail)])
    texts: list[str] = []
    for item in detail:
        if not isinstance(item, dict):
            texts.append(str(item))
            continue
        msg = str(item.get("msg", item.get("message", item)))
        line = item.get("line")
        if line:
            where = item.get("file") or file
            texts.append(f"{where}, line {line}: {msg}" if where else f"line {line}: {msg}")
        elif not msg.startswith("..."):  # the service's own "... and N more": counted below
            texts.append(msg)
    total = len(texts)
    counted = re.match(r"(\d+) error", str(exc.extra.get("message", "")))
    if counted:
        total = max(total, int(counted.group(1)))
    listed = texts[:MAX_LISTED_ERRORS]
    return FormErrors(summary, listed, total - len(listed))


def _error_text(exc: DomainError) -> str:
    detail = exc.detail
    if isinstance(detail, list):
        parts = []
        for item in detail[:8]:
            if isinstance(item, dict) and "line" in item and not item["line"]:
                parts.append(str(item.get("msg", "")))  # a summary, not a place
            elif isinstance(item, dict) and "line" in item:
                parts.append(f"{item.get('file', '')}:{item['line']}: {item.get('msg', '')}")
            elif isinstance(item, dict):
                parts.append(str(item.get("message", item)))
            else:
                parts.append(str(item))
        more = len(detail) - 8
        return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
    return str(detail)


async def _guarded_post(request: Request) -> tuple[Any, Response | None]:
    """For form posts: CSRF is checked by the dependency; here the admin role."""
    resolved = request.state.web_session
    return resolved, _refuse_non_admin(request, resolved)


async def _guarded_form(request: Request) -> tuple[Any, FormData, Response | None]:
    """:func:`_guarded_post`, then the posted form (empty when the post is refused)."""
    resolved, early = await _guarded_post(request)
    if early is not None:
        return resolved, FormData(), early
    return resolved, await request.form(), None


# --------------------------------------------------------------------------- pages


@router.get("/admin")
async def admin_home(request: Request, db: DbDep) -> Response:
    resolved, early = await admin_session(request, db)
    if early is not None:
        return early
    assert resolved is not None
    return await _home_response(request, resolved, db)


async def _home_response(
    request: Request,
    resolved: sessions.ResolvedSession,
    db: Any,
    *,
    forms: Mapping[str, Mapping[str, Any]] | None = None,
    errors: Mapping[str, FormErrors] | None = None,
    status: int = 200,
) -> Response:
    """The admin home; ``forms``/``errors`` refill a refused form ("collection", "user") and
    list why it was refused."""
    colls = await run_in_threadpool(collections.list_collections, db=db)
    loads = await run_in_threadpool(users_manage.workloads, db=db)
    return admin_page(
        request,
        resolved,
        "admin.html",
        {
            "collections": colls,
            "workloads": [w.as_dict() for w in loads],
            "forms": forms or {},
            "errors": errors or {},
        },
        status=status,
    )


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
    report = await run_in_threadpool(
        progress.collection_progress, db=db, collection_id=collection_id
    )
    return {"progress": report, "chart": timeline_chart(report["timeline"])}


@router.get("/admin/collections/{collection_id}")
async def collection_page(request: Request, collection_id: int, db: DbDep) -> Response:
    resolved, early = await admin_session(request, db)
    if early is not None:
        return early
    assert resolved is not None
    return await _collection_response(request, resolved, db, collection_id)


async def _collection_response(
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
    why an export was refused; ``forms`` refills the other forms by name ("plan", "import",
    "grades", "features", "settings", "guidelines"), ``errors`` lists why one was refused,
    ``rechoose`` names the files chosen for it (to be chosen again); ``guidelines_preview``
    is the sanitised HTML of guidelines not saved yet (shown instead of the saved ones)."""
    try:
        summary = await run_in_threadpool(
            collections.get_collection, db=db, collection_id=collection_id
        )
        ctx = await _progress_context(db, collection_id)
        guidelines = await run_in_threadpool(
            collections.get_guidelines, db=db, collection_id=collection_id
        )
    except DomainError as exc:
        return admin_page(
            request,
            resolved,
            "error.html",
            {"title": "Not found", "message": _error_text(exc), "back_url": "/admin"},
            status=exc.status_code,
        )
    people = await run_in_threadpool(users.list_users, db=db)
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
            "export_formats": list(exports.FORMATS.values()),
            "export_form": export_form or {},
            "export_error": export_error,
            "forms": filled,
            "errors": errors or {},
            "rechoose": list(rechoose),
            "plan_fit": plan_fit(len(filled["plan"].get("assessors", [])), summary.queries),
            "plan_fits": [plan_fit(m, summary.queries) for m in range(len(enabled) + 1)],
            "guidelines": guidelines,
            # Both are sanitised (app.collections.guidelines: markdown-it-py with raw HTML off,
            # then nh3).
            "guidelines_html": Markup(
                guidelines.html if guidelines_preview is None else guidelines_preview
            ),
            "guidelines_previewing": guidelines_preview is not None,
            **ctx,
        },
        status=status,
    )


# --------------------------------------------------------------------------- plan defaults


def fitting_shifts(assessors: int) -> str:
    """Rotation shifts that fit ``assessors`` people: the paper's ``0,2`` (two assignments)
    needs four, since assignment j uses folds s_j and s_j + 1 of m and no assessor may meet a
    fold twice (:func:`labeling.study.assignment.fold_rotation`); with two or three, one assignment
    (``0``)."""
    return "0,2" if assessors >= 4 else "0"


def fitting_per_query(assessors: int) -> int:
    """Assessors per query and method for the balanced scheme: two (as the paper's study) when
    four or more are chosen, else one, so that T1 and T2 assessors of a query are different
    people (2 x per_query <= assessors)."""
    return max(1, min(2, assessors // 2))


def plan_fit(assessors: int, queries: int) -> dict[str, Any]:
    """What the plan form says next to the assessors before Preview: the defaults that fit and
    a problem (or None). The page carries it for every number of assessors (plan_fits)."""
    problem = None
    if assessors < 2:
        problem = "Choose at least two assessors: every assessor uses both tools."
    elif queries and queries < assessors:
        problem = (
            f"The rotation needs at least as many queries as assessors ({queries} < "
            f"{assessors}); choose fewer assessors or the balanced scheme."
        )
    return {
        "assessors": assessors,
        "queries": queries,
        "shifts": fitting_shifts(assessors),
        "per_query": fitting_per_query(assessors),
        "problem": problem,
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


def _posted(form: FormData) -> dict[str, Any]:
    """A posted form's text fields (``assessors`` as a list), to refill it after an error."""
    values: dict[str, Any] = {
        k: v for k, v in form.items() if isinstance(v, str) and k not in ("csrf_token", "create")
    }
    values["assessors"] = [v for v in form.getlist("assessors") if isinstance(v, str)]
    return values


def _chosen_files(form: FormData) -> list[str]:
    """The files chosen in a posted form as "Label: file name" (to be chosen again: a browser
    never refills a file input)."""
    return [
        f"{FILE_LABELS.get(key, key)}: {value.filename}"
        for key, value in form.multi_items()
        if isinstance(value, UploadFile) and value.filename
    ]


#: The export form's fields (those of the REST export endpoint).
EXPORT_FIELDS = ("format", "labels", "source", "assessor", "missing_features", "plan")


@router.get("/admin/collections/{collection_id}/export")
async def export_download(request: Request, collection_id: int, db: DbDep) -> Response:
    """The export form's target (a GET: a download changes nothing). Validates like the REST
    endpoint, before any byte: on success the file is downloaded; on an error the collection
    page comes back with the message next to the form, which keeps its values. Empty fields
    mean "not given" (the form always sends every field)."""
    resolved, early = await admin_session(request, db)
    if early is not None:
        return early
    assert resolved is not None
    values = {
        name: request.query_params.get(name, "").strip()
        for name in EXPORT_FIELDS
        if request.query_params.get(name, "").strip()
    }
    req = exports.ExportRequest(
        collection_id=collection_id,
        format=values.get("format", "qrels"),
        labels=values.get("labels"),
        source=values.get("source", "first"),
        assessor=values.get("assessor"),
        missing_features=values.get("missing_features", "error"),
        plan=values.get("plan"),
    )
    try:
        body = await run_in_threadpool(exports.export_stream, db=db, req=req)
    except DomainError as exc:
        return await _collection_response(
            request,
            resolved,
            db,
            collection_id,
            export_form=values,
            export_error=_error_text(exc),
            status=exc.status_code,
        )
    req = exports.resolve(req)
    return StreamingResponse(
        iterate_in_threadpool(body),
        media_type=exports.FORMATS[req.format].media_type,
        headers={"Content-Disposition": f'attachment; filename="{exports.download_name(req)}"'},
    )


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
        return Response(_error_text(exc), status_code=exc.status_code)
    return admin_page(request, resolved, "collections/_progress.html", ctx)


# --------------------------------------------------------------------------- form posts


def _field(form: FormData, name: str, default: str = "") -> str:
    value = form.get(name)
    return value.strip() if isinstance(value, str) else default


def _form_int(form: FormData, name: str) -> int | None:
    """An optional integer field; Invalid (shown as a message) if it is not a plain decimal
    integer ('²'.isdigit() is True, yet int('²') fails, so no isdigit() checks)."""
    value = _field(form, name)
    if not value:
        return None
    if not value.isascii() or not value.lstrip("-").isdigit():
        raise Invalid(f"{name} must be an integer, got {value[:20]!r}")
    return int(value)


@router.post("/admin/collections", dependencies=[Depends(require_csrf_form)])
async def create_collection(request: Request, db: DbDep) -> Response:
    resolved, form, early = await _guarded_form(request)
    if early is not None:
        return early
    try:
        coll = await run_in_threadpool(
            collections.create_collection,
            db=db,
            name=_field(form, "name"),
            description=_field(form, "description"),
        )
    except DomainError as exc:
        return await _home_response(
            request,
            resolved,
            db,
            forms={"collection": _posted(form)},
            errors={"collection": form_errors(exc, "The collection was not created.")},
            status=exc.status_code,
        )
    return _back(request, f"/admin/collections/{coll.id}", f"Collection {coll.name!r} created.")


@router.post(
    "/admin/collections/{collection_id}/settings", dependencies=[Depends(require_csrf_form)]
)
async def collection_settings(request: Request, collection_id: int, db: DbDep) -> Response:
    resolved, form, early = await _guarded_form(request)
    if early is not None:
        return early
    url = f"/admin/collections/{collection_id}"
    try:
        if "\x00" in _field(form, "name") + _field(form, "description"):
            raise Invalid("name and description must not contain NUL")
        await run_in_threadpool(
            collections_manage.update_collection,
            db=db,
            collection_id=collection_id,
            name=_field(form, "name") or None,
            description=_field(form, "description"),
            archived=form.get("archived") == "1",
        )
    except DomainError as exc:
        return await _collection_response(
            request,
            resolved,
            db,
            collection_id,
            forms={"settings": _posted(form)},
            errors={"settings": form_errors(exc, "The settings were not saved.")},
            status=exc.status_code,
        )
    return _back(request, url, "Collection updated.")


@router.post(
    "/admin/collections/{collection_id}/guidelines", dependencies=[Depends(require_csrf_form)]
)
async def collection_guidelines(request: Request, collection_id: int, db: DbDep) -> Response:
    """Preview (``action=preview``: the page again with the sanitised HTML, nothing stored) or
    save (``action=save``) the collection's judging guidelines."""
    resolved, form, early = await _guarded_form(request)
    if early is not None:
        return early
    raw = form.get("markdown")
    # Browsers post CRLF line ends; the API stores what it is sent, so store LF like it.
    markdown = raw.replace("\r\n", "\n") if isinstance(raw, str) else ""
    kept = {"guidelines": {"markdown": markdown}}  # the form as posted, shown again
    action = _field(form, "action", "save")
    try:
        if action not in ("preview", "save"):
            raise Invalid(f"unknown action {action[:20]!r}: preview or save")
        if action == "preview":
            html = await run_in_threadpool(collections.preview_guidelines, markdown)
            return await _collection_response(
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
        return await _collection_response(
            request,
            resolved,
            db,
            collection_id,
            forms=kept,
            errors={"guidelines": form_errors(exc, "The guidelines were not saved.")},
            status=exc.status_code,
        )
    return _back(request, f"/admin/collections/{collection_id}#guidelines", "Guidelines saved.")


#: Name of the plan form's run upload, and of the hidden field that carries the run's text from
#: the preview page to its "Create tasks" post (a file input cannot be re-posted).
RUN_UPLOAD = "pool_run"
RUN_TEXT = "pool_run_text"
#: The import forms' names by ``action`` (their values and errors are kept apart).
IMPORT_FORMS = {"import": "import", "attach-grades": "grades", "attach-features": "features"}
#: The file each import form needs, by its field name, as the page labels it.
FILE_LABELS = {
    "topics": "Topics",
    "queries": "Queries",
    "documents": "Documents",
    "qrels": "Qrels",
    "features": "LETOR file",
    "run": "TREC run",
    "ndjson": "NDJSON file",
    RUN_UPLOAD: "TREC run for pooling",
}


@router.post("/admin/collections/{collection_id}/import", dependencies=[Depends(require_csrf_form)])
async def import_page(request: Request, collection_id: int, db: DbDep) -> Response:
    resolved, early = await _guarded_post(request)
    if early is not None:
        return early
    form, within_limits = await upload_form(request)
    url = f"/admin/collections/{collection_id}"
    action = _field(form, "action", "import")
    name = IMPORT_FORMS.get(action, "import")
    if not within_limits:
        return await _import_refused(
            request,
            resolved,
            db,
            collection_id,
            form,
            name,
            FormErrors(
                "Nothing was imported: too many files or fields "
                f"(at most {MAX_UPLOAD_FILES} files, {MAX_UPLOAD_FIELDS} fields)."
            ),
            413,
        )
    files = {
        key: admin_imports.UploadedFile(value.filename or key, value.file)
        for key, value in form.multi_items()
        if isinstance(value, UploadFile) and value.filename
    }
    try:
        message = await _run_import(db, collection_id, action, form, files)
        summary = await run_in_threadpool(
            collections.get_collection, db=db, collection_id=collection_id
        )
    except KeyError as exc:
        field_name = str(exc.args[0])
        missing = FormErrors(f"Choose the {FILE_LABELS.get(field_name, field_name)} file.")
        return await _import_refused(request, resolved, db, collection_id, form, name, missing)
    except DomainError as exc:
        only = next(iter(files.values())).name if len(files) == 1 else ""
        errors = form_errors(exc, "Nothing was imported.", file=only)
        return await _import_refused(
            request, resolved, db, collection_id, form, name, errors, exc.status_code
        )
    if action == "import":
        message += (
            f" The collection now has {summary.queries} queries, "
            f"{summary.distinct_documents} documents and {summary.documents} "
            "query–document pairs."
        )
    return _back(request, url, message)


async def _import_refused(
    request: Request,
    resolved: sessions.ResolvedSession,
    db: Any,
    collection_id: int,
    form: FormData,
    name: str,
    errors: FormErrors,
    status: int = 422,
) -> Response:
    """The collection page with the import form ``name`` as it was posted and its errors."""
    return await _collection_response(
        request,
        resolved,
        db,
        collection_id,
        forms={name: _posted(form)},
        errors={name: errors},
        rechoose=_chosen_files(form),
        status=status,
    )


def _pairs(n: int) -> str:
    return f"{n} query–document pair" + ("" if n == 1 else "s")


async def _run_import(
    db: Any,
    collection_id: int,
    action: str,
    form: FormData,
    files: Mapping[str, admin_imports.UploadedFile],
) -> str:
    """Run the import form's ``action`` through its service; the success message. Raises
    KeyError naming a required file that was not chosen, DomainError for the rest."""
    if action == "attach-grades":
        report = await run_in_threadpool(
            admin_imports.attach_grades,
            db=db,
            collection_id=collection_id,
            qrels=files["qrels"],
            qrels_format=_field(form, "qrels_format", "auto"),
        )
        return (
            f"{report.matched} grades attached to query–document pairs "
            f"({report.unmatched} lines unmatched)."
        )
    if action == "attach-features":
        report = await run_in_threadpool(
            admin_imports.attach_features,
            db=db,
            collection_id=collection_id,
            features=files["features"],
        )
        return (
            f"{report.matched} feature vectors attached to query–document pairs "
            f"({report.unmatched} rows unmatched)."
        )
    kind = _field(form, "kind", "trec")
    if kind == "ndjson":
        # The REST import's service: one object per (query, document), all or nothing.
        upload = files["ndjson"]
        content = upload.content
        assert not isinstance(content, str | os.PathLike)  # a web upload is a spooled file
        nd = await run_in_threadpool(
            collections.import_ndjson, db=db, collection_id=collection_id, data=content
        )
        return (
            f"Imported {nd.lines} lines of {upload.name}: {nd.queries_created} new queries, "
            f"{_pairs(nd.documents_created)} new ({nd.documents_unchanged} already there "
            "unchanged)."
        )
    imported = await run_in_threadpool(
        admin_imports.import_files,
        db=db,
        collection_id=collection_id,
        kind=kind,
        files=files,
        pairing=_field(form, "pairing", "qrels"),
        qrels_format=_field(form, "qrels_format", "auto"),
        run_depth=_form_int(form, "run_depth"),
        unjudged_grade=_form_int(form, "unjudged_grade"),
        ignore_unknown_qrels=form.get("ignore_unknown_qrels") == "1",
    )
    return " ".join(
        [
            f"Imported {_pairs(imported.rows)}: {imported.queries_created} new queries, "
            f"{_pairs(imported.documents_created)} new "
            f"({imported.documents_unchanged} already there unchanged).",
            *([f"Qrels: {imported.qrels}."] if imported.qrels else []),
            *(f"Note: {note}." for note in imported.notes),
        ]
    )




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


def _plan_spec(collection_id: int, form: FormData, run: str | None = None) -> planning.PlanSpec:
    """The plan form as a :class:`planning.PlanSpec`, with the REST/CLI semantics: the pool
    size n is "Pool size n" for a sample and "Run depth" (empty = the whole run) for
    ``pool_mode=run``, whose documents are the top n of the run that the query has."""
    options: dict[str, dict[str, Any]] = {
        "topk": {
            key: form.get(f"opt_{key}") == "1"
            for key in ("allow_ties", "pair_cache", "not_relevant")
        }
    }
    strategy = _field(form, "strategy")
    if strategy:
        options["topk"]["strategy"] = strategy
    prior = _field(form, "prior", "none") or "none"
    if prior == "feature":
        prior = f"feature:{_field(form, 'prior_feature')}"
    queries = _field(form, "query_ids")
    mode = _field(form, "pool_mode", "all")
    n = _form_int(form, "run_depth") if mode == "run" else _form_int(form, "pool_n")
    return planning.PlanSpec(
        collection_id=collection_id,
        assessors=[v for v in form.getlist("assessors") if isinstance(v, str) and v],
        query_ids=[q.strip() for q in queries.split(",") if q.strip()] if queries else None,
        scheme=_field(form, "scheme", "rotation"),
        shifts=tuple(
            int(x) for x in _field(form, "shifts", "0,2").split(",") if x.strip().isdigit()
        ),
        per_query={
            "topk": int(_field(form, "per_topk", "2") or 0),
            "graded": int(_field(form, "per_graded", "2") or 0),
        },
        seed=int(_field(form, "seed", "0") or 0),
        csv=_field(form, "csv") or None,
        name=_field(form, "name", "plan") or "plan",
        k=int(_field(form, "k", "10") or 10),
        options=options,
        pool=planning.PoolSpec(
            mode=mode,
            n=n,
            seed=int(_field(form, "pool_seed", "0") or 0),
            dedupe=form.get("dedupe") == "1",
            run=run if mode == "run" else None,
            run_order=mode in planning.RANKED_POOLS and form.get("run_order") == "1",
        ),
        prior=prior,
        prior_run=run if prior == "run" else None,
    )


@router.post("/admin/collections/{collection_id}/plan", dependencies=[Depends(require_csrf_form)])
async def plan_page(request: Request, collection_id: int, db: DbDep) -> Response:
    resolved, form, early = await _guarded_form(request)
    if early is not None:
        return early
    url = f"/admin/collections/{collection_id}"
    creating = form.get("create") == "1"
    summary = "The plan was not created."
    try:
        wants_run = _field(form, "pool_mode") == "run" or _field(form, "prior") == "run"
        run = await _run_text(form) if wants_run else None
        spec = _plan_spec(collection_id, form, run)
        if creating:
            created = await run_in_threadpool(planning.create_plan, db=db, spec=spec)
            return _back(
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
            "options_json": json.dumps(preview.options),
            "csv": planning.plan_entries_csv(preview),
            "cost_model": planning.COST_MODEL,
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
    values = _posted(form)
    return await _collection_response(
        request,
        resolved,
        db,
        collection_id,
        forms={"plan": values},
        errors={"plan": errors},
        rechoose=_chosen_files(form),
        status=status,
    )


@router.post("/admin/users", dependencies=[Depends(require_csrf_form)])
async def create_user(request: Request, db: DbDep) -> Response:
    resolved, form, early = await _guarded_form(request)
    if early is not None:
        return early
    try:
        user = await run_in_threadpool(
            users.create_user,
            db=db,
            username=_field(form, "username"),
            password=str(form.get("password") or ""),
            role=_field(form, "role", "assessor"),
        )
    except DomainError as exc:
        values = {k: v for k, v in _posted(form).items() if k != "password"}
        return await _home_response(
            request,
            resolved,
            db,
            forms={"user": values},
            errors={"user": form_errors(exc, "The user was not created.")},
            status=exc.status_code,
        )
    return _back(request, "/admin", f"User {user.username!r} created.")


@router.post("/admin/users/{username}/{action}", dependencies=[Depends(require_csrf_form)])
async def user_action(request: Request, username: str, action: str, db: DbDep) -> Response:
    resolved, form, early = await _guarded_form(request)
    if early is not None:
        return early
    try:
        if action in ("disable", "enable"):
            if action == "disable" and username == resolved.user.username:
                return _back(request, "/admin", "You cannot disable yourself.", "error")
            await run_in_threadpool(
                users.set_disabled,
                db=db,
                username=username,
                disabled=action == "disable",
                actor=resolved.user.username,
            )
            message = f"{username} {action}d."
        elif action == "password":
            await run_in_threadpool(
                users_manage.reset_password,
                db=db,
                username=username,
                password=str(form.get("password") or ""),
            )
            message = f"Password of {username} reset; their sessions ended."
        else:
            return _back(request, "/admin", f"Unknown action {action!r}.", "error")
    except DomainError as exc:
        return _back(request, "/admin", _error_text(exc), "error")
    return _back(request, "/admin", message)
