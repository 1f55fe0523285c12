"""Log in and log out (server-side sessions from :mod:`app.auth.sessions`; docs/security.md).

- The login form is protected against login CSRF by a double-submit token: ``GET /login``
  sets a random value in an HttpOnly ``SameSite=Strict`` cookie and in the form; ``POST /login``
  requires both to match, plus the Sec-Fetch-Site / Origin check.
- Bad credentials get one generic message whatever went wrong (unknown user, wrong password,
  disabled account); :func:`app.auth.throttling.authenticate` verifies a dummy hash for
  unknown users so both paths cost the same, and throttles repeated failures per
  (username, ip) from the ``login_attempt`` table (answer 429 with Retry-After).
- A successful login always mints a new session (and deletes the one the browser had), so a
  planted cookie is worthless (no fixation).
- Logout is a POST with the session's CSRF token; it deletes the session row, so the old
  cookie value is useless afterwards, then clears the cookie.
"""

from __future__ import annotations

import secrets
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from app.auth import sessions, throttling, tokens
from app.http.deps import DbDep, check_csrf, client_ip, web_session
from app.kernel.errors import Forbidden
from app.web.templates import render, set_flash

router = APIRouter()

LOGIN_CSRF_COOKIE = "heapjudge_login_csrf"
BAD_CREDENTIALS = "Unknown username or wrong password."


def safe_next(value: str | None) -> str:
    """A local path to go to after login (no open redirect): default ``/tasks``."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/tasks"
    if any(ord(c) < 32 for c in value):
        return "/tasks"
    return value


def login_redirect(request: Request) -> RedirectResponse:
    """303 to the login form, coming back to the current path afterwards."""
    target = request.url.path
    if request.url.query:
        target += "?" + request.url.query
    return RedirectResponse(f"/login?next={quote(target, safe='/')}", status_code=303)


def _login_page(
    request: Request,
    *,
    next_url: str,
    username: str = "",
    error: str = "",
    status_code: int = 200,
) -> Response:
    token = secrets.token_urlsafe(32)
    response = render(
        request,
        "users/login.html",
        {"login_csrf": token, "next_url": next_url, "username": username, "error": error},
        status_code=status_code,
    )
    response.set_cookie(
        LOGIN_CSRF_COOKIE,
        token,
        max_age=3600,
        path="/login",
        httponly=True,
        samesite="strict",
        secure=request.app.state.settings.secure_cookies,
    )
    return response


@router.get("/login")
async def login_form(request: Request, db: DbDep, next: str | None = None) -> Response:
    resolved = await web_session(request, db)
    # Without a ``next``, "/" decides by role: admins land on their dashboard.
    target = safe_next(next) if next else "/"
    if resolved is not None:
        return RedirectResponse(target, status_code=303)
    return _login_page(request, next_url=target)


@router.post("/login")
async def login_submit(
    request: Request,
    db: DbDep,
    username: Annotated[str, Form(max_length=200)] = "",
    password: Annotated[str, Form(max_length=1024)] = "",
    csrf_token: Annotated[str, Form(max_length=200)] = "",
    next: Annotated[str, Form(max_length=2000)] = "/tasks",
) -> Response:
    settings = request.app.state.settings
    next_url = safe_next(next)
    if not sessions.origin_allowed(request.headers, settings.public_origin):
        return _forbidden(request, "This login form was sent from another site.")
    if not tokens.tokens_match(request.cookies.get(LOGIN_CSRF_COOKIE), csrf_token):
        # Usually an expired form or cookies switched off: show a fresh form, not a dead end.
        return _login_page(
            request,
            next_url=next_url,
            username=username[:64],
            error="The login form expired. Please try again.",
            status_code=403,
        )
    try:
        user = await run_in_threadpool(
            throttling.authenticate, db, username, password, ip=client_ip(request)
        )
    except throttling.LoginThrottled as throttled:
        minutes = max(1, round(throttled.retry_after / 60))
        response = _login_page(
            request,
            next_url=next_url,
            username=username[:64],
            error=f"Too many failed attempts. Try again in about {minutes} minute"
            f"{'s' if minutes != 1 else ''}.",
            status_code=429,
        )
        response.headers["Retry-After"] = str(throttled.retry_after)
        return response
    if user is None:
        return _login_page(
            request,
            next_url=next_url,
            username=username[:64],
            error=BAD_CREDENTIALS,
            status_code=401,
        )
    old = request.cookies.get(sessions.SESSION_COOKIE)
    if old:
        await run_in_threadpool(sessions.delete_web_session, db, old)
    raw, _csrf = await run_in_threadpool(sessions.create_web_session, db, user)
    response = RedirectResponse(next_url, status_code=303)
    response.set_cookie(
        sessions.SESSION_COOKIE,
        raw,
        max_age=settings.session_absolute_seconds,
        path="/",
        httponly=True,
        samesite="lax",
        secure=settings.secure_cookies,
    )
    response.delete_cookie(LOGIN_CSRF_COOKIE, path="/login")
    return response


@router.post("/logout")
async def logout(request: Request, db: DbDep) -> Response:
    raw = request.cookies.get(sessions.SESSION_COOKIE)
    resolved = await run_in_threadpool(sessions.resolve_web_session, db, raw)
    if resolved is not None:
        try:
            await check_csrf(request, resolved.csrf_token, db.settings)
        except Forbidden as exc:
            return _forbidden(
                request, str(exc.detail), user=resolved.user, csrf_token=resolved.csrf_token
            )
        await run_in_threadpool(sessions.delete_web_session, db, raw)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(sessions.SESSION_COOKIE, path="/")
    # The judged documents this browser kept (private, for a day: app/web/documents.py) go
    # with the session, so the next person at a shared computer cannot open them from the cache.
    response.headers["Clear-Site-Data"] = '"cache"'
    if resolved is not None:
        set_flash(request, response, "You are logged out.", "success")
    return response


def _forbidden(
    request: Request, reason: str, *, user: object = None, csrf_token: str = ""
) -> Response:
    """The HTML 403 page for a refused form post (cross-site or missing CSRF token)."""
    return render(
        request,
        "error.html",
        {
            "title": "Request refused",
            "message": "This form was refused (" + reason.rstrip(".") + "). "
            "Go back, reload the page and try again.",
        },
        user=user,
        csrf_token=csrf_token,
        status_code=403,
    )
