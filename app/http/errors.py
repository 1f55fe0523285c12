"""Error handlers: domain errors and framework errors as JSON answers.

The handlers installed by :func:`install_error_handlers` turn :class:`app.kernel.errors.DomainError`
(and :mod:`labeling.errors`) into JSON ``{"detail": ...}`` with the right status (plus any
``extra`` keys, e.g. the current question on a 409): the one body shape
:class:`app.http.openapi.ErrorOut` (docs/rest-api.md#errors). A 500 is always a bug: the
catch-all handler still answers JSON, never an HTML traceback.

A 405 (and so any ``OPTIONS`` request) carries an ``Allow`` header listing every method of
the path, not only those of the first route that matched it (:func:`allowed_methods`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from itertools import islice
from typing import Any

import sqlalchemy.exc as sa_exc
from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match, Mount
from starlette.types import Scope

from app.http.bounded import ClientGone
from app.kernel.errors import DomainError, TooManyRequests, Unauthorized
from labeling import errors as lerr

log = logging.getLogger("heapjudge")


#: labeling.errors -> HTTP status.
LABELING_STATUS: tuple[tuple[type[lerr.LabelingError], int], ...] = (
    (lerr.ConfigError, 422),
    (lerr.InvalidAnswer, 422),
    (lerr.WrongQuestion, 409),
    (lerr.Finished, 409),
    (lerr.NotFinished, 409),
    (lerr.LabelingError, 422),
)


#: A 422 lists at most this many validation errors (then one saying how many were left out).
MAX_ERRORS = 20
#: An echoed string (``input``, a ``loc`` key) keeps at most this many characters, a message
#: (which may name the client's keys) at most :data:`MAX_MESSAGE_CHARS`.
MAX_ECHO_CHARS = 120
MAX_MESSAGE_CHARS = 500
#: An echoed array or object keeps at most this many items, nested at most this deep.
MAX_ECHO_ITEMS = 10
MAX_ECHO_DEPTH = 3
#: Fields whose values are never echoed, at any depth (docs/security.md#request-bodies).
SECRET_FIELDS = frozenset({"password", "new_password", "current_password", "token", "csrf_token"})
HIDDEN = "(hidden)"


def _short(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """``text`` cut to ``limit`` characters, made encodable as UTF-8: a lone
    surrogate (valid in a JSON escape, ``"\\ud800"``, not in UTF-8) is written as its
    ``\\udXXX`` escape, or the response itself would fail and the server drop the
    connection."""
    if len(text) > limit:
        text = text[:limit] + "..."
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def excerpt(value: Any, depth: int = 0) -> Any:
    """A short, encodable excerpt of ``value`` (what the client sent) to echo in a 422:
    strings cut, arrays and objects cut to their first items and a few levels, bytes
    shown as text, and the value of every :data:`SECRET_FIELDS` key hidden."""
    if isinstance(value, str):
        return _short(value)
    if isinstance(value, bytes | bytearray):
        return _short(bytes(value[: MAX_ECHO_CHARS * 4]).decode("utf-8", "replace"))
    if value is None or isinstance(value, bool | int | float):
        return value
    if depth >= MAX_ECHO_DEPTH:
        return "..."
    if isinstance(value, dict):
        return {
            _short(str(key)): HIDDEN if key in SECRET_FIELDS else excerpt(item, depth + 1)
            for key, item in islice(value.items(), MAX_ECHO_ITEMS)
        }
    if isinstance(value, list | tuple):
        return [excerpt(item, depth + 1) for item in value[:MAX_ECHO_ITEMS]]
    return _short(str(value))


def _error_item(error: Any) -> dict[str, Any]:
    """One validation error as echoed: ``loc`` and ``msg`` cut short, ``input`` an
    :func:`excerpt` (hidden under a secret field), ``ctx`` values as short text."""
    item = dict(error)
    loc = [part if isinstance(part, int) else _short(str(part)) for part in item.get("loc", ())]
    item["loc"] = loc
    if "msg" in item:
        item["msg"] = _short(str(item["msg"]), MAX_MESSAGE_CHARS)
    secret = any(part in SECRET_FIELDS for part in loc)
    if "input" in item:
        item["input"] = HIDDEN if secret else excerpt(item["input"])
    if secret:
        item.pop("ctx", None)  # a validator's message might quote the value
    elif isinstance(item.get("ctx"), dict):
        item["ctx"] = {_short(str(k)): excerpt(v) for k, v in islice(item["ctx"].items(), 5)}
    item.pop("url", None)
    return item


def validation_detail(errors: Any) -> list[Any]:
    """The ``detail`` list of a 422 for a request that failed validation: pydantic's error
    items (``type``, ``loc``, ``msg``, ``input``, ``ctx``), at most :data:`MAX_ERRORS` of
    them, each echoing only a short excerpt of the input and never a secret
    (:func:`_error_item`), so the answer stays small whatever was sent."""
    errors = list(errors)
    detail = [_error_item(error) for error in errors[:MAX_ERRORS]]
    if len(errors) > MAX_ERRORS:
        left = len(errors) - MAX_ERRORS
        detail.append(
            {
                "type": "too_many_errors",
                "loc": ["body"],
                "msg": f"{left} more validation errors not listed",
                "input": None,
            }
        )
    return detail


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

    async def _gone(_request: Request, _exc: Exception) -> Any:
        # The client left and its work was stopped (app.http.bounded): nobody reads this;
        # 499 ("client closed request", as nginx logs it) keeps it apart from errors.
        return Response(status_code=499)

    app.add_exception_handler(ClientGone, _gone)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Any:  # pragma: no cover - bug
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse({"detail": "internal server error"}, status_code=500)
