"""Domain errors, their HTTP mapping and their OpenAPI declarations, in one place.

Services raise :class:`DomainError` subclasses (or let :mod:`labeling.errors` propagate); the
handlers installed by :func:`install_error_handlers` turn them into JSON ``{"detail": ...}``
with the right status (plus any ``extra`` keys, e.g. the current question on a 409): the one
body shape :class:`app.schemas.ErrorOut` (docs/rest-api.md#errors). A 500 is always a bug:
the catch-all handler still answers JSON, never an HTML traceback.

:func:`declare_errors` declares on every API route each error status it can answer, derived
from what the route is (authenticated, admin-only, with parameters, a write), so
``/openapi.json`` lists them all with the :class:`~app.schemas.ErrorOut` schema.

A 405 (and so any ``OPTIONS`` request) carries an ``Allow`` header listing every method of
the path, not only those of the first route that matched it (:func:`allowed_methods`).

:class:`BodySizeLimitMiddleware` enforces ``max_body_bytes`` by counting the bytes actually
received (a ``Content-Length`` check alone is bypassed by chunked bodies,
docs/security.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.dependencies.models import Dependant
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from fastapi.utils import create_model_field
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from labeling import errors as lerr

log = logging.getLogger("heapjudge")


class DomainError(Exception):
    """Base of the service's domain errors. ``detail`` is shown to the client."""

    status_code = 400

    def __init__(self, detail: Any, *, extra: dict[str, Any] | None = None) -> None:
        super().__init__(detail if isinstance(detail, str) else repr(detail))
        self.detail = detail
        self.extra = extra or {}


class Unauthorized(DomainError):
    status_code = 401


class Forbidden(DomainError):
    status_code = 403


class NotFound(DomainError):
    status_code = 404


class Conflict(DomainError):
    status_code = 409


class PayloadTooLarge(DomainError):
    status_code = 413


class Invalid(DomainError):
    """Bad input: ``detail`` says what and where (line numbers for files)."""

    status_code = 422


def issue_items(issues: Any) -> list[dict[str, Any]]:
    """A parser's ``ParseIssue`` list (``labeling.sources.SourceError.issues``) as the items
    of an :class:`Invalid` detail: ``{"file", "line", "msg"}`` each."""
    return [{"file": i.file, "line": i.line, "msg": i.message} for i in issues]


class TooManyRequests(DomainError):
    status_code = 429


#: labeling.errors -> HTTP status.
LABELING_STATUS: tuple[tuple[type[lerr.LabelingError], int], ...] = (
    (lerr.ConfigError, 422),
    (lerr.InvalidAnswer, 422),
    (lerr.WrongQuestion, 409),
    (lerr.Finished, 409),
    (lerr.NotFinished, 409),
    (lerr.LabelingError, 422),
)


def _encodable(value: Any) -> Any:
    """``value`` with every string made encodable as UTF-8: a lone surrogate (valid in a JSON
    escape, ``"\\ud800"``, but not in UTF-8) is written as its ``\\udXXX`` escape. The 422
    echoes what the client sent (``input``, ``loc``); an unencodable echo would make the
    response itself fail and the server drop the connection."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encodable(v) for v in value]
    return value


def validation_detail(errors: Any) -> list[Any]:
    """The ``detail`` list of a 422 for a request that failed validation: pydantic's error
    items (``type``, ``loc``, ``msg``, ``input``, ``ctx``), safe to encode as JSON."""
    return [_encodable(item) for item in errors]


def labeling_status(exc: lerr.LabelingError) -> int:
    for cls, status in LABELING_STATUS:
        if isinstance(exc, cls):
            return status
    return 422


def error_parts(exc: BaseException) -> tuple[int, dict[str, Any], dict[str, str] | None] | None:
    """``(status, JSON body, extra headers)`` for an error the service answers itself, or None
    for an unexpected one (a bug: 500). The one mapping behind the app's exception
    handlers."""
    if isinstance(exc, DomainError):
        headers = None
        if isinstance(exc, Unauthorized):
            headers = {"WWW-Authenticate": "Bearer"}
        if isinstance(exc, TooManyRequests) and "retry_after" in exc.extra:
            headers = {"Retry-After": str(exc.extra["retry_after"])}
        return exc.status_code, {"detail": exc.detail, **exc.extra}, headers
    if isinstance(exc, lerr.LabelingError):
        return labeling_status(exc), {"detail": str(exc) or type(exc).__name__}, None
    if isinstance(exc, RequestValidationError):
        return 422, {"detail": validation_detail(exc.errors())}, None
    if isinstance(exc, StarletteHTTPException):
        return exc.status_code, {"detail": exc.detail}, getattr(exc, "headers", None)
    # Database refusals that input validation did not anticipate are still client errors, not
    # 500s: a value the column cannot hold (a NUL character in Postgres text, an integer out of
    # range), a constraint the request violated, or SQLite's lock wait running out.
    if isinstance(exc, sa_exc.DataError):
        log.info("data error: %s", exc.orig)
        detail = "a value is not acceptable to the database (NUL character or out of range)"
        return 422, {"detail": detail}, None
    if isinstance(exc, sa_exc.IntegrityError):
        log.info("integrity error: %s", exc.orig)
        return 409, {"detail": "the request conflicts with stored data"}, None
    if isinstance(exc, sa_exc.OperationalError):
        log.warning("database unavailable: %s", exc.orig)
        detail = "the database is busy or unavailable; retry"
        return 503, {"detail": detail}, {"Retry-After": "1"}
    # An integer the database driver cannot bind (an id of 2**64 in a URL: SQLite's driver
    # raises OverflowError before the query runs; Postgres says DataError, handled above).
    if isinstance(exc, OverflowError):
        log.info("number out of range: %s", exc)
        return 422, {"detail": "a number in the request is out of range"}, None
    return None


#: The exception classes :func:`error_parts` answers (each gets the same handler).
HANDLED_ERRORS: tuple[type[Exception], ...] = (
    DomainError,
    lerr.LabelingError,
    RequestValidationError,
    StarletteHTTPException,
    sa_exc.DataError,
    sa_exc.IntegrityError,
    sa_exc.OperationalError,
    OverflowError,
)


#: The methods an ``Allow`` header can name.
HTTP_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def allowed_methods(routes: Iterable[BaseRoute], scope: Scope) -> list[str]:
    """Every method some route accepts for ``scope``'s path (the ``Allow`` header of a 405).
    Starlette's router names only the methods of the first route whose path matched, but one
    path is often served by several routes (``GET`` and ``POST /api/v1/tasks``). Mounts
    (static files) are left out: they match a path whatever the method."""
    candidates = [r for r in routes if not isinstance(r, Mount)]
    return [
        method
        for method in HTTP_METHODS
        if any(r.matches({**scope, "method": method})[0] is Match.FULL for r in candidates)
    ]


def install_error_handlers(app: FastAPI) -> None:
    """Register the JSON error handlers on ``app``."""

    async def _handled(request: Request, exc: Exception) -> Any:
        parts = error_parts(exc)
        if parts is None:  # pragma: no cover - every registered class has a mapping
            raise exc
        status, body, headers = parts
        if status == 405:
            allow = allowed_methods(request.app.router.routes, request.scope)
            headers = {**(headers or {}), "Allow": ", ".join(allow)}
        return JSONResponse(jsonable_encoder(body), status_code=status, headers=headers)

    for cls in HANDLED_ERRORS:
        app.add_exception_handler(cls, _handled)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Any:  # pragma: no cover - bug
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse({"detail": "internal server error"}, status_code=500)


# ---------------------------------------------------------------------- OpenAPI declarations

#: Every error status the service answers, with when (the OpenAPI description of each).
ERROR_STATUSES: dict[int, str] = {
    400: "The body cannot be parsed at all (nested too deep, not UTF-8) or the "
    "Content-Length header is malformed.",
    401: "No or bad credentials (`WWW-Authenticate: Bearer`).",
    403: "Not allowed: admin role required, not the caller's task, or a cookie request "
    "without a valid CSRF token.",
    404: "No such object.",
    409: "The request conflicts with the stored state.",
    413: "The body exceeds `HEAPJUDGE_MAX_BODY_BYTES`.",
    422: "Invalid input: a list of items saying what and where, or a text.",
    429: "Too many failed logins from this address or for this user (`Retry-After`).",
    503: "The database is busy or unavailable (`Retry-After: 1`); retry.",
}

_RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before retrying.",
        "schema": {"type": "string"},
    }
}
_HEADERS: dict[int, dict[str, Any]] = {
    401: {
        "WWW-Authenticate": {
            "description": "The scheme to authenticate with.",
            "schema": {"type": "string"},
        }
    },
    429: _RETRY_AFTER,
    503: _RETRY_AFTER,
}

#: Statuses any API route can answer whatever it does: a malformed Content-Length or body
#: (400), a body over the limit (413), the database unavailable (503).
ANY_ROUTE = (400, 413, 503)

#: The write methods: a cookie caller's CSRF check (403) and a constraint violation (409).
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` declaring ``statuses`` with the :class:`~app.schemas.ErrorOut`
    body (use in a route decorator for a status :func:`declare_errors` cannot derive)."""
    from app.schemas import ErrorOut

    out: dict[int | str, dict[str, Any]] = {}
    for status in sorted(set(statuses)):
        entry: dict[str, Any] = {"model": ErrorOut, "description": ERROR_STATUSES[status]}
        if status in _HEADERS:
            entry["headers"] = _HEADERS[status]
        out[status] = entry
    return out


def _dependants(dependant: Dependant) -> Iterator[Dependant]:
    """``dependant`` and, depth first, every dependency it has."""
    yield dependant
    for sub in dependant.dependencies:
        yield from _dependants(sub)


def route_error_statuses(route: APIRoute) -> set[int]:
    """The error statuses ``route`` can answer, from what it is:

    - any route: :data:`ANY_ROUTE`;
    - with parameters or a body: 422 (validation; an id out of the database's range);
    - with path parameters: 404 (no such object);
    - authenticated (bearer or cookie): 401; and 403 when admin-only, when it names an object
      (the caller's own tasks only), or for a write (a cookie caller's CSRF check);
    - a write: 409 (it conflicts with stored data);
    - plus the error statuses the route's decorator declares itself (``responses=``).
    """
    from app import deps

    every = list(_dependants(route.dependant))  # the parameters of dependencies count too
    calls = {d.call for d in every}
    path_params = any(d.path_params for d in every)
    has_input = route.openapi_extra is not None or any(
        d.path_params or d.query_params or d.header_params or d.cookie_params or d.body_params
        for d in every
    )
    statuses = set(ANY_ROUTE)
    write = bool((route.methods or set()) & UNSAFE_METHODS)
    if has_input:
        statuses.add(422)
    if path_params:
        statuses.add(404)
    if calls & {deps.get_current_user, deps.get_caller, deps.require_admin}:
        statuses.add(401)
        if deps.require_admin in calls or path_params or write:
            statuses.add(403)
    if write:
        statuses.add(409)
    statuses |= {int(s) for s in route.responses if str(s).isdigit() and int(s) in ERROR_STATUSES}
    return statuses


def declare_errors(router: APIRouter) -> APIRouter:
    """Declare on every route of ``router`` the error statuses it can answer
    (:func:`route_error_statuses`) with the :class:`~app.schemas.ErrorOut` body; a
    description the decorator gave is kept. Call it on a router once its routes are all
    added and before the app includes it; routers it included are declared too. Returns
    ``router``."""
    for route in router.routes:
        included = getattr(route, "original_router", None)  # a router it included
        if isinstance(included, APIRouter):
            declare_errors(included)
            continue
        if not isinstance(route, APIRoute):
            continue
        declared = error_responses(*route_error_statuses(route))
        for status, entry in declared.items():
            given = route.responses.get(status) or route.responses.get(str(status)) or {}
            route.responses.pop(str(status), None)
            route.responses[status] = {**entry, **given}
            # The body model's field, as APIRoute builds it for a status declared in its
            # decorator: OpenAPI reads it from here for a route the app uses as it is (the
            # judging loop's), not rebuilt by include_router.
            route.response_fields[status] = create_model_field(
                name=f"Response_{status}_{route.unique_id}",
                type_=route.responses[status]["model"],
                mode="serialization",
            )
    return router


class _BodyTooLarge(Exception):
    """Raised into the app by the limited ``receive`` once the body passes the limit."""


class BodySizeLimitMiddleware:
    """Pure ASGI middleware answering 413 when a request body exceeds ``max_bytes``.

    A declared ``Content-Length`` over the limit is refused before reading. Otherwise the body
    streams through to the app chunk by chunk (Starlette spools multipart uploads to disk, so
    nothing holds a whole upload in memory twice) while the bytes are counted, so chunked
    uploads without Content-Length are limited too. As soon as the running total
    passes the limit, the app's next ``receive`` raises; whatever the app then does (a parse
    error, a 400, an exception) is discarded and the client gets the 413 instead. The app
    therefore never acts on a truncated body: every handler reads its body before writing.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await self._reject(send, 400, "invalid Content-Length header")
                    return
                if declared > self.max_bytes:
                    await self._too_large(send)
                    return
        total = 0
        exceeded = False
        started = False

        async def limited_receive() -> Message:
            nonlocal total, exceeded
            if exceeded:
                raise _BodyTooLarge
            message = await receive()
            if message["type"] == "http.request":
                total += len(message.get("body", b""))
                if total > self.max_bytes:
                    exceeded = True
                    raise _BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if exceeded:
                return  # the app's answer to a body it could not finish reading
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except Exception:
            if not exceeded:
                raise
        if exceeded and not started:
            await self._too_large(send)

    async def _too_large(self, send: Send) -> None:
        await self._reject(send, 413, f"request body exceeds the limit of {self.max_bytes} bytes")

    @staticmethod
    async def _reject(send: Send, status: int, detail: str) -> None:
        import json

        body = json.dumps({"detail": detail}).encode("utf-8")
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode("ascii")),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
