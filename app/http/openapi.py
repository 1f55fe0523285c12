"""OpenAPI error declarations.

:func:`declare_errors` declares on every API route each error status it can answer, derived
from what the route is (authenticated, admin-only, with parameters, a write), so
``/openapi.json`` lists them all with the :class:`ErrorOut` schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from fastapi import APIRouter
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.utils import create_model_field
from pydantic import BaseModel, ConfigDict, Field

from app.http import deps

# Every error answer of the API has one shape, ErrorOut (docs/rest-api.md#errors); the
# statuses each route can answer are declared from app.http.openapi.declare_errors.


class ErrorItem(BaseModel):
    """One problem of a 422 whose ``detail`` is a list, saying what (``msg``) and where.

    Request validation (FastAPI/pydantic) gives ``type``, ``loc``, ``msg``, ``input`` and
    maybe ``ctx``; a file import gives ``file`` (when the import has several files), ``line``
    (1-based; 0 for a summary item) and ``msg``; a plan's constraint violations also carry
    ``code``, ``severity`` and the ``assessor``/``query_id``/``method`` concerned."""

    model_config = ConfigDict(extra="allow")

    msg: str
    type: str | None = Field(default=None, description="Validation: the error type.")
    loc: list[str | int] | None = Field(
        default=None, description='Validation: where, e.g. ["body", "grade"].'
    )
    input: Any = Field(default=None, description="Validation: the value refused.")
    ctx: dict[str, Any] | None = None
    file: str | None = Field(default=None, description="Imports: the file's name.")
    line: int | None = Field(default=None, description="Imports: the 1-based line (0: none).")
    code: str | None = Field(default=None, description="Plans: the violated constraint.")
    severity: Literal["error", "warning"] | None = None
    message: str | None = Field(default=None, description="Plans: the violation, for people.")
    assessor: str | None = None
    query_id: str | None = None
    method: str | None = None


class ErrorOut(BaseModel):
    """The body of every error answer (4xx, 5xx)."""

    detail: str | list[ErrorItem] = Field(
        description="What is wrong: a text, or (422) a list of items saying what and where."
    )
    message: str | None = Field(
        default=None, description="With a list of items: a one-line summary of them."
    )
    # The judging loop's question body (``QuestionOut`` of app.judging.schemas) as an object:
    # this package sits below the concepts and names none of them.
    current: dict[str, Any] | None = Field(
        default=None,
        description="Judging loop, 409: the pending question (or done), as `GET .../next` "
        "answers it (QuestionOut).",
    )
    retry_after: int | None = Field(
        default=None, description="429: seconds until a login may be tried again."
    )
    unknown_runs: list[str] | None = Field(
        default=None,
        description="422 of a pool from stored runs: the run names or ids the collection lacks.",
    )


# ---------------------------------------------------------------------- OpenAPI declarations

#: Every error status the service answers, with when (the OpenAPI description of each).
ERROR_STATUSES: dict[int, str] = {
    400: "The body cannot be parsed at all (not UTF-8) or the Content-Length header is malformed.",
    401: "No or bad credentials (`WWW-Authenticate: Bearer`).",
    403: "Not allowed: admin role required, not the caller's task, or a cookie request "
    "without a valid CSRF token.",
    404: "No such object.",
    409: "The request conflicts with the stored state.",
    413: "The body exceeds `HEAPJUDGE_MAX_BODY_BYTES`.",
    415: "A form body sent with the session cookie to an endpoint that takes none (JSON, "
    "NDJSON): send the endpoint's media type and the CSRF token in `X-CSRF-Token`.",
    422: "Invalid input: a list of items saying what and where (at most 20, each echoing a "
    "short excerpt of the input; a JSON body past the shape limits is one `json_too_complex` "
    "item), or a text.",
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
    """OpenAPI ``responses`` declaring ``statuses`` with the :class:`ErrorOut`
    body (use in a route decorator for a status :func:`declare_errors` cannot derive)."""
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
    - a write: 409 (it conflicts with stored data); and 415 when authenticated and it takes
      no form (a form body carrying the cookie caller's CSRF token);
    - plus the error statuses the route's decorator declares itself (``responses=``).
    """
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
        if 401 in statuses and not deps.takes_form(route):
            statuses.add(415)  # a form body with the cookie (app.http.deps.check_csrf)
    statuses |= {int(s) for s in route.responses if str(s).isdigit() and int(s) in ERROR_STATUSES}
    return statuses


def declare_errors(router: APIRouter) -> APIRouter:
    """Declare on every route of ``router`` the error statuses it can answer
    (:func:`route_error_statuses`) with the :class:`ErrorOut` body; a
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
