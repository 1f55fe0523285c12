"""The admin section's frame: the admin session (login redirect, 403 page), the page renderer,
the guards of form posts, and the admin home (``GET /admin``: collections and users with their
workload). The admin pages of each concept build on it: :mod:`app.web.collections` (a
collection's page, settings, guidelines, progress), :mod:`app.web.imports`,
:mod:`app.web.planning`, :mod:`app.web.exports`, :mod:`app.web.users`; and
:mod:`app.web.analysis`.

Every page needs an admin's browser session (login redirect without one, 403 page for an
assessor); every form post checks the CSRF field (``require_csrf_form``). A refused form comes
back on its page (status 422, or the service's status) with the values it was posted with, the
names of the files to choose again (a browser cannot refill a file input) and the errors as a
list (:mod:`app.web.forms`); never a 500. docs/admin-guide.md describes every page.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from app.auth import sessions
from app.auth.passwords import MIN_PASSWORD_CHARS
from app.collections import service as collections
from app.http.deps import DbDep, web_session
from app.kernel import queue
from app.kernel.errors import DomainError
from app.users import manage as users_manage
from app.web.auth import login_redirect
from app.web.forms import FormErrors, error_text
from app.web.templates import render, set_flash
from labeling.identifiers import USERNAME_HTML_PATTERN

router = APIRouter()


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
    """Render ``name`` for the session's user in the admin section of the navigation, with
    the queues whose worker is down (their heartbeat stale, :mod:`app.kernel.queue`)."""
    down = queue.workers_down(request.app.state.db.settings)
    return render(
        request,
        name,
        {"workers_down": [s.text() for s in down], **context},
        user=resolved.user,
        csrf_token=resolved.csrf_token,
        nav_active="admin",
        status_code=status,
    )


def admin_error(request: Request, resolved: sessions.ResolvedSession, exc: DomainError) -> Response:
    """The error page for a domain error of an admin page (an unknown collection, pool, run)."""
    return admin_page(
        request,
        resolved,
        "error.html",
        {"title": "Not found", "message": error_text(exc), "back_url": "/admin"},
        status=exc.status_code,
    )


def back(request: Request, url: str, message: str, level: str = "success") -> Response:
    """Redirect (303) to ``url`` with a flash message."""
    response = RedirectResponse(url, status_code=303)
    set_flash(request, response, message, level)
    return response


async def guarded_post(request: Request) -> tuple[Any, Response | None]:
    """For form posts: CSRF is checked by the dependency; here the admin role."""
    resolved = request.state.web_session
    return resolved, _refuse_non_admin(request, resolved)


async def guarded_form(request: Request) -> tuple[Any, FormData, Response | None]:
    """:func:`guarded_post`, then the posted form (empty when the post is refused)."""
    resolved, early = await guarded_post(request)
    if early is not None:
        return resolved, FormData(), early
    return resolved, await request.form(), None


@router.get("/admin")
async def admin_home(request: Request, db: DbDep) -> Response:
    resolved, early = await admin_session(request, db)
    if early is not None:
        return early
    assert resolved is not None
    return await home_response(request, resolved, db)


async def home_response(
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
    colls = await run_in_threadpool(collections.list_collections, db=db, viewer=None)
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
            # The user forms check on the client what the server enforces.
            "username_pattern": USERNAME_HTML_PATTERN,
            "min_password_chars": MIN_PASSWORD_CHARS,
        },
        status=status,
    )
