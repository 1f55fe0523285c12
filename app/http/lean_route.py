"""A lean API route for small, frequent JSON requests (the judging loop).

:class:`LeanRoute` is an ordinary FastAPI route of the one application: declared with the
router's decorators, matched by the router, behind the same middleware (security headers,
body limit, Starlette's error and exception middleware) and error handlers
(:func:`app.http.errors.install_error_handlers`), and documented in OpenAPI from the endpoint's
signature. Only its request handling is lean. FastAPI's generic dependency solver cost more
than a warm judgment itself, so the handler does, in order, what the solver would do for the
one shape of endpoint it accepts,
``endpoint(<path params>, [<one JSON body model, optional or not>], db: DbDep, caller: Caller)``:

1. authenticate (:func:`app.http.deps.get_caller`: bearer token or session cookie with CSRF;
   401 / 403 first, as the solver resolves dependencies before parameters);
2. validate the path parameters and the JSON body with the route's own FastAPI fields, so
   invalid input gets FastAPI's 422 body (``detail``: a list of ``{type, loc, msg, input}``,
   capped and cut short by :func:`app.http.errors.validation_detail`); a body that is not
   JSON at all gets FastAPI's ``json_invalid`` item (one past the shape limits never gets
   here: :class:`app.http.middleware.BodySizeLimitMiddleware` refused it as it arrived);
3. call the endpoint; a plain dict result is sent as compact UTF-8 JSON (:func:`encode_json`).

And the route's ASGI app (``Route.app``, what the router calls once the path matched) is
that handler itself, not FastAPI's ``request_response`` wrapper: the wrapper's exception
handling repeats what the app's exception middleware does with the same handlers, and its
exit stacks serve dependencies with ``yield`` and uploads, which a lean route has none of.
An error raised here therefore reaches the app's handlers exactly as from any other route.

Other parameters (query, header, cookie) or dependencies are refused when the route is
built, so nothing an endpoint declares is silently skipped.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import orjson
from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.routing import APIRoute
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.types import Receive, Scope, Send

from app.http.deps import get_caller, get_db

#: The dependencies a lean endpoint may declare, by the callable FastAPI would call.
_DEPENDENCIES = {get_db: "db", get_caller: "caller"}

_JSON = b"application/json"


def encode_json(content: Any) -> bytes:
    """``content`` as compact UTF-8 JSON, as Starlette's ``JSONResponse`` writes it, but with
    orjson: a question with its two documents took ``json.dumps`` 15-50 us, orjson a tenth.
    The values are the same; the bytes differ only in how a float is spelled in exponent
    notation (``1e20``, not ``1e+20``). A question's numbers are counts and a finite
    expectation (orjson would write NaN as null where JSONResponse refuses it)."""
    return orjson.dumps(content)


def _is_json(content_type: str | None) -> bool:
    """``application/json`` or ``application/*+json``, parameters ignored (FastAPI's rule)."""
    if not content_type:
        return False
    kind, _, subtype = content_type.partition(";")[0].strip().lower().partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


def _decode_json(raw: bytes) -> Any:
    """A JSON body as FastAPI decodes it (``json.loads``). orjson is tried first (a few
    microseconds less); whatever it refuses (invalid JSON, but also what the standard parser
    accepts and orjson does not: lone surrogate escapes, integers past 64 bits, NaN, a BOM
    or UTF-16) is left to ``json.loads``, whose verdict and error position FastAPI's error
    reports."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
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
    except (ValueError, RecursionError) as exc:  # not UTF-8 (nesting is limited before)
        raise HTTPException(400, "There was an error parsing the body") from exc


async def _json_body(request: Request) -> Any:
    """The request's JSON body as FastAPI reads it: None if empty, the raw bytes if not
    declared as JSON (the model then refuses them)."""
    raw = await request.body()
    if not raw:
        return None
    if not _is_json(request.headers.get("content-type")):
        return raw
    return _decode_json(raw)


def _missing(*loc: str) -> dict[str, Any]:
    """The validation error of a required field that is absent, as FastAPI words it (pydantic's
    ``missing`` error, without its documentation URL)."""
    error: dict[str, Any] = dict(
        ValidationError.from_exception_data(
            "Field required", [{"type": "missing", "loc": loc, "input": {}}]
        ).errors(include_url=False)[0]
    )
    error["input"] = None
    return error


class LeanRoute(APIRoute):
    """See the module docstring."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        self.app = self._asgi_app()

    def _endpoint_caller(self) -> Callable[[Request], Awaitable[Any]]:
        """``call(request)``: steps 1-3 of the module docstring; the endpoint's result."""
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
        body_required = body_field is not None and body_field.field_info.is_required()
        endpoint = self.endpoint

        async def call(request: Request) -> Any:
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
                if body is None:  # no body: missing if required, else the parameter's default
                    if body_required:
                        errors.append(_missing("body"))
                    else:
                        values[body_field.name] = body_field.field_info.get_default()
                else:
                    value, problems = body_field.validate(body, {}, loc=("body",))
                    values[body_field.name] = value
                    errors.extend(problems)
            if errors:
                raise RequestValidationError(errors, body=body)
            for name, what in injected.items():
                values[name] = found[what]
            return await endpoint(**values)

        return call

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """The handler FastAPI wraps when the route is reached through ``include_router``
        (the app registers the judging loop in its own router: :meth:`_asgi_app`)."""
        call = self._endpoint_caller()
        status = self.status_code or 200

        async def handle(request: Request) -> Response:
            result = await call(request)
            if isinstance(result, Response):
                return result
            return Response(encode_json(result), status_code=status, media_type="application/json")

        return handle

    def _asgi_app(self) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
        """The route's ASGI app: the endpoint's result sent as JSON (module docstring)."""
        call = self._endpoint_caller()
        status = self.status_code or 200

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            result = await call(Request(scope, receive, send))
            if isinstance(result, Response):
                await result(scope, receive, send)
                return
            body = encode_json(result)
            headers = [(b"content-length", str(len(body)).encode()), (b"content-type", _JSON)]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        return app
