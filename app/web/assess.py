"""Assessor pages: my tasks, the judging page (T1 pairwise or T2 five grades), the done page.

Pages need a browser session (the ``heapjudge_session`` cookie); without one they redirect
to the login form and come back afterwards. A task is shown only to its assessor (403 page
otherwise, 404 when it does not exist). The judging loop itself runs in
``app/static/js/judge/`` against the REST API (``/api/v1/tasks/{id}/next``, ``/judgments``,
``/undo``) with the session cookie and the ``X-CSRF-Token`` header; this module only renders
the page around the first question, which it takes from the same replay as the API
(:func:`app.judging.pages.task_page`; presentation in :mod:`app.web.page_data`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Request
from fastapi import Query as FastApiQuery
from fastapi.responses import JSONResponse, RedirectResponse, Response
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool

from app.auth import sessions
from app.collections import service as collections
from app.http.deps import DbDep, web_session
from app.http.middleware import FRAME_CSP
from app.judging import pages
from app.kernel.errors import Forbidden, NotFound
from app.kernel.models import User
from app.second_opinions import service as second_opinions
from app.web import documents, page_data
from app.web.auth import login_redirect
from app.web.templates import render
from labeling.protocol.types import GRADE_NAMES

router = APIRouter()

T = TypeVar("T")


def error_page(
    request: Request,
    resolved: sessions.ResolvedSession,
    *,
    title: str,
    message: str,
    status_code: int,
) -> Response:
    return render(
        request,
        "error.html",
        {"title": title, "message": message},
        user=resolved.user,
        csrf_token=resolved.csrf_token,
        nav_active="tasks",
        status_code=status_code,
    )


async def _own_task(
    request: Request, db: Any, task_id: int
) -> tuple[sessions.ResolvedSession | None, pages.TaskPage | None, Response | None]:
    """(session, task page data, early response): the early response is a redirect to the
    login form, or an error page for a missing or foreign task."""
    resolved = await web_session(request, db)
    if resolved is None:
        return None, None, login_redirect(request)
    try:
        page = await run_in_threadpool(
            lambda: pages.task_page(db=db, user=resolved.user, task_id=task_id)
        )
    except NotFound:
        message = f"There is no task {task_id}."
        return (
            resolved,
            None,
            error_page(request, resolved, title="Task not found", message=message, status_code=404),
        )
    except Forbidden:
        message = "This task is assigned to another assessor."
        return (
            resolved,
            None,
            error_page(request, resolved, title="Not your task", message=message, status_code=403),
        )
    return resolved, page, None


#: Cookie holding the assessor's highlighting choice ("0" off; anything else on), set by
#: the judging script when the H key toggles it, read here so the first render already follows it.
HIGHLIGHT_COOKIE = "heapjudge_highlight"


def highlight_on(request: Request, hl: int | None = None) -> bool:
    """Whether query terms are highlighted: ``hl`` if given (0 off), else the cookie."""
    if hl is not None:
        return hl != 0
    return request.cookies.get(HIGHLIGHT_COOKIE) != "0"


def guidelines_seen_key(user_id: int, collection_id: int) -> str:
    """The browser's ``localStorage`` key under which the judging script remembers which version of
    a
    collection's guidelines this user has seen (docs/assessor-guide.md#guidelines)."""
    return f"heapjudge.guidelines.{user_id}.{collection_id}"


def guidelines_version(markdown: str) -> str:
    """A short fingerprint of the guidelines text ("" for none): the panel opens by itself
    when the stored fingerprint differs, i.e. on the first visit and after an edit."""
    if not markdown.strip():
        return ""
    return hashlib.sha256(markdown.encode("utf-8")).hexdigest()[:16]


@router.get("/")
async def home(request: Request, db: DbDep) -> Response:
    """Admins land on their dashboard, assessors on their tasks."""
    resolved = await web_session(request, db)
    if resolved is None:
        return RedirectResponse("/login", status_code=303)
    return RedirectResponse(
        "/admin" if resolved.user.role == "admin" else "/tasks", status_code=303
    )


@router.get("/tasks")
async def my_tasks(request: Request, db: DbDep) -> Response:
    resolved = await web_session(request, db)
    if resolved is None:
        return login_redirect(request)
    rows = await run_in_threadpool(page_data.list_tasks, db, resolved.user)
    opinions = await run_in_threadpool(second_opinions.list_items, db=db, user=resolved.user)
    return render(
        request,
        "tasks/tasks.html",
        {"rows": rows, "second_opinions": opinions},
        user=resolved.user,
        csrf_token=resolved.csrf_token,
        nav_active="tasks",
    )


@router.get("/tasks/{task_id}")
async def judge_page(request: Request, db: DbDep, task_id: int) -> Response:
    resolved, page, early = await _own_task(request, db, task_id)
    if early is not None:
        return early
    assert resolved is not None and page is not None
    if page.status == "cancelled":
        return error_page(
            request,
            resolved,
            title="Task cancelled",
            message="An administrator cancelled this task.",
            status_code=409,
        )
    question = page.question
    if page.done:
        return RedirectResponse(f"/tasks/{task_id}/done", status_code=303)
    if question.get("waiting"):  # a repeat routed to a second assessor (docs/noise.md)
        return render(
            request,
            "second_opinions/waiting.html",
            {
                "query": {"title": page.query_title},
                "task_id": task_id,
                "waiting": question["waiting"],
            },
            user=resolved.user,
            csrf_token=resolved.csrf_token,
            nav_active="tasks",
        )
    progress = question["progress"]
    done_count = int(progress["judgments"])
    remaining = math.ceil(float(progress["estimated_remaining"]))
    total = done_count + remaining
    settings = request.app.state.settings
    highlight = highlight_on(request)
    terms = page_data.highlight_terms(page.query_title) if highlight else frozenset()
    guidelines = await run_in_threadpool(
        collections.get_guidelines, db=db, collection_id=page.collection_id, viewer=None
    )
    boot = _boot(page, resolved, settings, highlight, guidelines)
    context: dict[str, Any] = {
        "query": {"title": page.query_title, "description": page.query_description},
        "question": question,
        "boot": boot,
        "remaining": remaining,
        "progress_pct": round(100 * done_count / total) if total else 0,
        "idle_seconds": settings.idle_pause_seconds,
        "allow_ties": boot["allow_ties"],
        "not_relevant": boot["not_relevant"],
        "highlight": highlight,
        "collection_name": guidelines.collection_name,
        # Sanitised by app.collections.guidelines (markdown-it-py with raw HTML off, then the nh3
        # allow-list), so it may be embedded; the page CSP runs no inline script either way.
        "guidelines_html": Markup(guidelines.html),
    }
    base = document_base(task_id)
    if page.method == "topk":
        context["left"] = page_data.doc_view(question["pair"]["left"]).framed(base, terms)
        context["right"] = page_data.doc_view(question["pair"]["right"]).framed(base, terms)
        template = "judging/pairwise.html"
    else:
        context["document"] = page_data.doc_view(question["document"]).framed(base, terms)
        context["grade_names"] = GRADE_NAMES
        template = "judging/graded.html"
    return render(
        request,
        template,
        context,
        user=resolved.user,
        csrf_token=resolved.csrf_token,
        nav_active="tasks",
    )


def _boot(
    page: pages.TaskPage,
    resolved: sessions.ResolvedSession,
    settings: Any,
    highlight: bool,
    guidelines: Any,
) -> dict[str, Any]:
    """The judging page's boot payload (read by app/static/js/judge/main.js)."""
    return {
        "task_id": page.task_id,
        "method": page.method,
        "k": page.k,
        "allow_ties": bool(page.options.get("allow_ties", False)),
        "not_relevant": bool(page.options.get("not_relevant", False)),
        "csrf_token": resolved.csrf_token,
        "idle_seconds": settings.idle_pause_seconds,
        "active_ms": int(page.question["active_ms"]),
        "done_url": f"/tasks/{page.task_id}/done",
        "login_url": f"/login?next=/tasks/{page.task_id}",
        "frame_csp": FRAME_CSP,
        "document_url": document_base(page.task_id),
        "lookahead_url": f"/tasks/{page.task_id}/lookahead",
        "frames_url": f"/tasks/{page.task_id}/frames",
        "highlight": highlight,
        "highlight_cookie": HIGHLIGHT_COOKIE,
        "guidelines_key": guidelines_seen_key(resolved.user.id, page.collection_id),
        "guidelines_version": guidelines_version(guidelines.markdown),
        "grade_names": list(GRADE_NAMES),
        "question": page.question,
    }


async def _page_json(
    request: Request, db: Any, work: Callable[[User], tuple[str, T]], hl: int | None
) -> tuple[frozenset[str], T] | Response:
    """For the frame endpoints of the judging page: ``work(user)``'s result (a service call
    that checks the task is the user's and gives its query's text) with the terms to
    highlight, or a JSON error (401 without a session, the service's 404 / 403)."""
    resolved = await web_session(request, db)
    if resolved is None:
        return JSONResponse({"detail": "not authenticated"}, status_code=401)
    try:
        title, found = await run_in_threadpool(work, resolved.user)
    except (NotFound, Forbidden) as exc:
        return JSONResponse({"detail": str(exc)}, status_code=exc.status_code)
    on = highlight_on(request, hl)
    return (page_data.highlight_terms(title) if on else frozenset()), found


def document_base(task_id: int) -> str:
    """The URL of a task's framed documents (:func:`document`), without its query."""
    return f"/tasks/{task_id}/document"


def framed_json(
    docs: list[dict[str, Any]], base: str, terms: frozenset[str]
) -> list[dict[str, Any]]:
    """The documents as the judging script loads them: ``doc_id``, ``title``, ``src`` (the
    frame's URL) and ``anchors``; rendering them here also warms the renderer's cache for the
    frames' own requests."""
    return [page_data.doc_view(d).framed(base, terms).as_json() for d in docs]


@router.get("/tasks/{task_id}/lookahead")
async def lookahead(
    request: Request, db: DbDep, task_id: int, seq: int, hl: int | None = None
) -> Response:
    """What may come after question ``seq``: ``docs``, the documents that may be shown next,
    rendered for their frames (the judging page preloads them into hidden sandboxed frames),
    and ``next``, the next question per answer (:class:`app.judging.pages.Lookahead`;
    The judging script does not use it yet: showing it before the server's answer broke quick key
    sequences, see docs/assessor-guide.md#the-next-pair). Read-only. ``hl=0|1`` overrides the
    highlighting cookie."""
    found = await _page_json(
        request, db, lambda user: pages.lookahead(db=db, user=user, task_id=task_id, seq=seq), hl
    )
    if isinstance(found, Response):
        return found
    terms, ahead = found
    docs = ahead.docs if ahead else []
    framed = await run_in_threadpool(framed_json, docs, document_base(task_id), terms)
    return JSONResponse(
        {"seq": seq, "docs": framed, "next": ahead.next if ahead is not None else {}},
        headers={"Cache-Control": "no-store"},
    )


@router.get("/tasks/{task_id}/frames")
async def frames(
    request: Request,
    db: DbDep,
    task_id: int,
    ids: Annotated[list[str], FastApiQuery(max_length=8)],
    hl: int | None = None,
) -> Response:
    """The task's documents ``ids`` rendered for their frames (for a document the page has not
    preloaded, and when highlighting is switched). Unknown ids are left out."""
    found = await _page_json(
        request,
        db,
        lambda user: pages.task_documents(db=db, user=user, task_id=task_id, doc_ids=ids),
        hl,
    )
    if isinstance(found, Response):
        return found
    terms, docs = found
    framed = await run_in_threadpool(framed_json, docs, document_base(task_id), terms)
    return JSONResponse({"docs": framed}, headers={"Cache-Control": "no-store"})


@router.get("/tasks/{task_id}/document")
async def document(
    request: Request,
    db: DbDep,
    task_id: int,
    doc: Annotated[str, FastApiQuery(min_length=1, max_length=200)],
    hl: int | None = None,
    v: Annotated[str | None, FastApiQuery(max_length=64)] = None,
) -> Response:
    """One document of the caller's task, rendered, as its frame's own response
    (:mod:`app.web.documents`: its own sandboxing policy and cache headers). 404 for a task
    or document that does not exist or is not in the task, 403 for another assessor's task."""
    found = await _page_json(
        request,
        db,
        lambda user: pages.task_documents(db=db, user=user, task_id=task_id, doc_ids=[doc]),
        hl,
    )
    if isinstance(found, Response):
        return documents.uncached(found)
    terms, docs = found
    if not docs:
        detail = {"detail": f"task {task_id} has no document {doc!r}"}
        return documents.uncached(JSONResponse(detail, status_code=404))
    frame = await run_in_threadpool(page_data.doc_view(docs[0]).rendered, terms)
    return documents.document_response(request, frame, v)


@router.get("/tasks/{task_id}/done")
async def done_page(request: Request, db: DbDep, task_id: int) -> Response:
    resolved, page, early = await _own_task(request, db, task_id)
    if early is not None:
        return early
    assert resolved is not None and page is not None
    if not page.done:
        return RedirectResponse(f"/tasks/{task_id}", status_code=303)
    active_ms = int(page.question["active_ms"])
    return render(
        request,
        "tasks/done.html",
        {
            "query": {"title": page.query_title, "description": page.query_description},
            "judgments": page.question["progress"]["judgments"],
            "active_time": page_data.format_duration(active_ms),
            "active_ms": active_ms,
            "method_label": page_data.METHOD_LABELS.get(page.method, page.method),
            "top": page_data.top_list(page),
            "grade_counts": page_data.grade_counts(page),
            "next_task": await run_in_threadpool(
                page_data.next_open_task, db, resolved.user, task_id
            ),
        },
        user=resolved.user,
        csrf_token=resolved.csrf_token,
        nav_active="tasks",
    )
