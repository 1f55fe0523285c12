"""FastAPI dependencies: the database, settings and the authenticated user (docs/security.md).

``CurrentUser`` accepts EITHER ``Authorization: Bearer <api token>`` OR the ``heapjudge_session``
cookie. A cookie-authenticated unsafe request (POST/PUT/PATCH/DELETE) must also pass the CSRF
checks of :mod:`app.auth.sessions`: ``Sec-Fetch-Site``/``Origin`` and the session's synchronizer
token, sent as the ``X-CSRF-Token`` header (JavaScript) or, for HTML form posts, the form field
``csrf_token``. Bearer requests are not exposed to CSRF (browsers never add the header).

``AdminUser`` additionally requires role admin (403). Disabled users fail authentication at
once (401) because token and session lookups both check the flag on every request.

After a cookie authentication ``request.state.web_session`` is the
:class:`app.auth.sessions.ResolvedSession` (its ``csrf_token`` is what templates embed).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, params
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile

from app.auth import sessions, tokens
from app.kernel.db import Database
from app.kernel.errors import Forbidden, Unauthorized, UnsupportedMediaType
from app.kernel.models import User
from app.kernel.settings import Settings

FORM_CONTENT_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
#: Multipart limits of the import uploads (web form and REST): the files of one import and a
#: few option fields.
MAX_UPLOAD_FILES = 8
MAX_UPLOAD_FIELDS = 20


def get_db(request: Request) -> Database:
    """The app's :class:`Database` (created by ``create_app``)."""
    db: Database = request.app.state.db
    return db


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


DbDep = Annotated[Database, Depends(get_db)]
SettingsDep = Annotated[Settings, Depends(get_settings)]


def client_ip(request: Request) -> str:
    """The peer address (no proxy headers are trusted)."""
    return request.client.host if request.client else ""


def takes_form(route: object) -> bool:
    """Whether ``route`` (the matched route) reads a form body: a FastAPI ``Form``/``File``
    body, a request body declared as a form in ``openapi_extra`` (the multipart uploads), or
    no declared body at all (the HTML pages read their forms themselves). A route declaring
    JSON (a model body) or another media type (NDJSON) does not."""
    if not isinstance(route, APIRoute):
        return True
    declared = (route.openapi_extra or {}).get("requestBody", {}).get("content")
    if declared:
        return any(kind.startswith(FORM_CONTENT_TYPES) for kind in declared)
    if route.body_field is not None:
        return isinstance(route.body_field.field_info, params.Form)
    return True


async def _form_csrf_token(request: Request) -> str | None:
    """The form field ``csrf_token`` of a form body. Reading the form consumes the body, so
    an endpoint that takes no form (JSON, NDJSON: :func:`takes_form`) answers 415 instead:
    its token belongs in the ``X-CSRF-Token`` header (docs/rest-api.md#authentication)."""
    content_type = request.headers.get("content-type", "")
    if not content_type.startswith(FORM_CONTENT_TYPES):
        return None
    if not takes_form(request.scope.get("route")):
        raise UnsupportedMediaType(
            "this endpoint takes no form body: send its media type (JSON: application/json) "
            f"and the CSRF token in the {sessions.CSRF_HEADER} header"
        )
    form = await request.form()
    value = form.get(sessions.CSRF_FORM_FIELD)
    return value if isinstance(value, str) else None


async def check_csrf(request: Request, expected: str, settings: Settings) -> None:
    """Raise 403 unless an unsafe cookie request is same-origin and carries the CSRF token
    (header ``X-CSRF-Token``, or form field ``csrf_token`` for form posts)."""
    if not sessions.origin_allowed(request.headers, settings.public_origin):
        raise Forbidden("cross-origin request refused")
    given = request.headers.get(sessions.CSRF_HEADER)
    if given is None:
        given = await _form_csrf_token(request)
    if not tokens.tokens_match(expected, given):
        raise Forbidden("missing or invalid CSRF token")


async def upload_form(request: Request, max_files: int = MAX_UPLOAD_FILES) -> tuple[FormData, bool]:
    """The multipart upload form and whether it keeps to ``max_files`` files (default
    ``MAX_UPLOAD_FILES``; a pool from many runs takes more) and ``MAX_UPLOAD_FIELDS`` fields.

    A cookie request whose CSRF token came as a form field had its form parsed (and cached by
    Starlette) with the default limits by :func:`check_csrf` first; the ``max_*`` arguments do
    not apply to a cached form, so the parts are counted here in every case."""
    form = await request.form(max_files=max_files, max_fields=MAX_UPLOAD_FIELDS)
    parts = form.multi_items()
    uploads = sum(isinstance(v, UploadFile) for _k, v in parts)
    return form, uploads <= max_files and len(parts) - uploads <= MAX_UPLOAD_FIELDS


def _bearer_token(request: Request) -> str | None:
    """The token of the ``Authorization: Bearer <token>`` header (None without the header);
    401 for another scheme or an empty token."""
    authorization = request.headers.get("authorization")
    if not authorization:
        return None
    token = tokens.bearer_token(authorization)
    if token is None:
        raise Unauthorized("unsupported Authorization header; use 'Bearer <token>'")
    return token


async def _authenticate(
    request: Request, db: Database, *, look_up_bearer: bool = True
) -> tokens.Caller | None:
    """The one authentication of every route: a bearer token, else the session cookie (with
    CSRF checked on unsafe methods); None without either (401 for a bearer token that is
    not valid). ``look_up_bearer=False`` returns a bearer token unchecked, as a
    :class:`~app.auth.tokens.BearerToken` for a use case that checks it in its own
    transaction."""
    token = _bearer_token(request)
    if token is not None:
        if not look_up_bearer:
            return tokens.BearerToken(token)
        user = await run_in_threadpool(tokens.resolve_api_token, db, token)
        if user is None:
            raise Unauthorized("invalid or expired token")
        return user
    cookie = request.cookies.get(sessions.SESSION_COOKIE)
    if not cookie:
        return None
    resolved = await run_in_threadpool(sessions.resolve_web_session, db, cookie)
    if resolved is None:
        return None
    if request.method not in sessions.SAFE_METHODS:
        await check_csrf(request, resolved.csrf_token, db.settings)
    request.state.web_session = resolved
    return resolved.user


async def get_optional_user(request: Request, db: DbDep) -> User | None:
    """The authenticated user or None (for pages that redirect to the login form)."""
    user = await _authenticate(request, db)
    assert not isinstance(user, tokens.BearerToken)
    return user


async def get_current_user(request: Request, db: DbDep) -> User:
    """The authenticated user; 401 otherwise."""
    user = await get_optional_user(request, db)
    if user is None:
        raise Unauthorized("not authenticated")
    return user


CurrentUser = Annotated[User, Depends(get_current_user)]


async def get_caller(request: Request, db: DbDep) -> tokens.Caller:
    """The caller of a judging-loop endpoint: :func:`get_current_user`, except that a
    bearer token is returned unchecked (:class:`~app.auth.tokens.BearerToken`): the use case
    checks it inside the transaction that does the work (one transaction per request
    instead of two). A bad bearer token AND a malformed body therefore get the body's 422
    before the token's 401 (neither reveals anything about credentials)."""
    caller = await _authenticate(request, db, look_up_bearer=False)
    if caller is None:
        raise Unauthorized("not authenticated")
    return caller


Caller = Annotated[tokens.Caller, Depends(get_caller)]


async def require_admin(user: CurrentUser) -> User:
    """The authenticated user if an admin; 403 otherwise. Use at ``include_router`` time:
    ``dependencies=[Depends(require_admin)]`` so no admin route can forget it."""
    if user.role != "admin":
        raise Forbidden("admin role required")
    return user


AdminUser = Annotated[User, Depends(require_admin)]


async def web_session(request: Request, db: Database) -> sessions.ResolvedSession | None:
    """The web session of the request's session cookie (None without a valid one)."""
    return await run_in_threadpool(
        sessions.resolve_web_session, db, request.cookies.get(sessions.SESSION_COOKIE)
    )


async def require_csrf_form(request: Request, db: DbDep) -> None:
    """For HTML form posts made with the session cookie: same-origin + form field
    ``csrf_token`` matching the session (403 otherwise; 401 without a session)."""
    resolved = await web_session(request, db)
    if resolved is None:
        raise Unauthorized("not authenticated")
    await check_csrf(request, resolved.csrf_token, db.settings)
    request.state.web_session = resolved
