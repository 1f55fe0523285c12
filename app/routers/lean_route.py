"""A lean API route for small, frequent JSON requests (the judging loop).

:class:`LeanRoute` is an ordinary FastAPI route of the one application: declared with the
router's decorators, matched by the router, behind the same middleware (security headers,
body limit) and error handlers (:func:`app.errors.install_error_handlers`), and documented in
OpenAPI from the endpoint's signature. Only its request handler is lean: FastAPI's generic
dependency solver costs more than a warm judgment itself, so this handler does, in order,
what the solver would do for the one shape of endpoint it accepts,
``endpoint(<path params>, [<one JSON body model>], db: DbDep, caller: Caller)``:

1. authenticate (:func:`app.deps.get_caller`: bearer token or session cookie with CSRF;
   401 / 403 first, as the solver resolves dependencies before parameters);
2. validate the path parameters and the JSON body with the route's own FastAPI fields, so
   invalid input gets FastAPI's 422 body (``detail``: a list of ``{type, loc, msg, input}``); a
   body that is not JSON at all gets FastAPI's ``json_invalid`` item, one too deeply
   nested to parse FastAPI's 400;
3. call the endpoint; a plain dict result is sent as compact JSON (``JSONResponse``).

Other parameters (query, header, cookie) or dependencies are refused when the route is
built, so nothing an endpoint declares is silently skipped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request
from fastapi.dependencies.utils import get_missing_field_error
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException

from app.deps import get_caller, get_db

#: The dependencies a lean endpoint may declare, by the callable FastAPI would call.
_DEPENDENCIES = {get_db: "db", get_caller: "caller"}


def _is_json(content_type: str | None) -> bool:
    """``application/json`` or ``application/*+json``, parameters ignored (FastAPI's rule)."""
    if not content_type:
        return False
    kind, _, subtype = content_type.partition(";")[0].strip().lower().partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


async def _json_body(request: Request) -> Any:
    """The request's JSON body as FastAPI reads it: None if empty, the raw bytes if not
    declared as JSON (the model then refuses them)."""
    raw = await request.body()
    if not raw:
        return None
    if not _is_json(request.headers.get("content-type")):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        error = {
            "type": "json_invalid",
            "loc": ("body", exc.pos),
            "msg": "JSON decode error",
            "input": {},
            "ctx": {"error": exc.msg},
        }
        raise RequestValidationError([error], body=exc.doc) from exc
    except (ValueError, RecursionError) as exc:  # not UTF-8; nested beyond the parser's depth
        raise HTTPException(400, "There was an error parsing the body") from exc


class LeanRoute(APIRoute):
    """See the module docstring."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        dependant = self.dependant
        unsupported = [
            *dependant.query_params,
            *dependant.header_params,
            *dependant.cookie_params,
        ]
        if unsupported or len(dependant.body_params) > 1 or self._embed_body_fields:
            raise TypeError(f"{self.path}: a LeanRoute takes path params and one JSON body only")
        injected: dict[str, str] = {}
        for sub in dependant.dependencies:
            if sub.call not in _DEPENDENCIES or sub.name is None:
                raise TypeError(f"{self.path}: a LeanRoute may depend on DbDep and Caller only")
            injected[sub.name] = _DEPENDENCIES[sub.call]
        # FastAPI's own fields validate (its errors, with ``loc`` ("path", name) / ("body", ..)).
        path_fields = [(f.alias, f) for f in dependant.path_params]
        body_field = dependant.body_params[0] if dependant.body_params else None
        if body_field is not None and not body_field.field_info.is_required():
            raise TypeError(f"{self.path}: a LeanRoute's body is required")
        endpoint = self.endpoint

        async def handle(request: Request) -> Response:
            db = get_db(request)
            found = {"db": db, "caller": await get_caller(request, db)}
            values: dict[str, Any] = {}
            errors: list[Any] = []
            for name, field in path_fields:
                value, problems = field.validate(request.path_params[name], {}, loc=("path", name))
                values[field.name] = value
                errors.extend(problems)
            body = None
            if body_field is not None:
                body = await _json_body(request)
                if body is None:  # the body parameter is required
                    errors.append(get_missing_field_error(("body",)))
                else:
                    value, problems = body_field.validate(body, {}, loc=("body",))
                    values[body_field.name] = value
                    errors.extend(problems)
            if errors:
                raise RequestValidationError(errors, body=body)
            for name, what in injected.items():
                values[name] = found[what]
            result = await endpoint(**values)
            return result if isinstance(result, Response) else JSONResponse(result)

        return handle
