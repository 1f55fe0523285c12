"""The judging loop's hot path: bearer-token ``GET /api/v1/tasks/{id}/next`` and
``POST /api/v1/tasks/{id}/judgments`` answered by a plain ASGI handler.

Why: a judgment is one small JSON request, and at 32 assessors the FastAPI machinery around
the use case (route matching over every route, dependency solving, body validation plumbing,
seven middleware layers, the threadpool's capacity limiter) cost more server CPU than the use
case itself (measured with py-spy on ``benchmarks/api_load.py``). The handler runs in front of
the whole stack (``HeapjudgeApp.__call__`` in :mod:`app.main`), adds the same response
headers as ``SecurityHeadersMiddleware`` and calls the *same* use cases
(:mod:`app.services.judging`), the same request model (:class:`JudgmentIn`) and the same error
mapping (:func:`app.errors.error_parts`) as the routes in :mod:`app.routers.api.tasks`, which
stay the documented API (OpenAPI) and answer everything this handler passes on:

- no ``Authorization`` header (a browser with its session cookie: CSRF is checked there), a
  scheme other than ``Bearer`` or an empty token (401 there);
- a body without ``Content-Length`` (chunked) or longer than ``max_body_bytes`` (the stack's
  streamed limit answers 413), not ``application/json`` or not valid (422 there): a body
  already read is handed on unchanged;
- anything but a plain decimal task id (up to 18 digits), another method, another path.

``tests/app/test_hotpath.py`` sends the same requests through both paths and compares status
and body byte for byte.

Work runs on a small thread pool of its own (:data:`THREADS` threads, one per process, shared
by the apps of a process): SQLite admits one writer at a time, and more threads than that only
contended for the GIL and the write lock (the default threadpool has 40). One case runs on the
event loop thread itself: a submit on SQLite whose session is cached
(``submit_judgment(nowait=True)``: a bounded handful of statements, no replay, and never a
wait on the event loop: a busy write lock or a cache miss raises ``WouldBlock`` with nothing
done). A busy lock is tried again after short pauses in which the loop serves other requests
(:data:`_PAUSES`, up to the SQLite busy timeout); a cache miss goes to the pool. Handing that
~0.3 ms of work to a thread and back cost more than the work.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi.encoders import jsonable_encoder
from pydantic import ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.db import Database, WouldBlock
from app.errors import HANDLED_ERRORS, error_parts
from app.schemas import JudgmentIn
from app.security import BearerToken, bearer_token
from app.services import judging

log = logging.getLogger("heapjudge")

#: ``/api/v1/tasks/<id>/next`` and ``.../judgments``; ids longer than 18 digits (past int64)
#: go to the routes, which answer them as the API always has.
_PATH = re.compile(r"/api/v1/tasks/([0-9]{1,18})/(next|judgments)")
_ROUTES = {("GET", "next"), ("POST", "judgments")}

_NOT_YET = object()

#: Worker threads of the hot path (per process).
THREADS = 8
_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def executor() -> ThreadPoolExecutor:
    """The process's hot-path thread pool (created on first use; threads start lazily)."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="judging")
        return _executor


def _header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of the request header ``name`` (lower case), or None."""
    for key, value in scope["headers"]:
        if key == name:
            return value
    return None


def _bearer(scope: Scope) -> str | None:
    """The token of a well-formed ``Authorization: Bearer <token>`` header, else None."""
    value = _header(scope, b"authorization")
    return bearer_token(value.decode("latin-1")) if value is not None else None


def _is_json(scope: Scope) -> bool:
    value = _header(scope, b"content-type")
    return value is not None and value.split(b";", 1)[0].strip().lower() == b"application/json"


def _content_length(scope: Scope) -> int | None:
    value = _header(scope, b"content-length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _dumps(body: Any) -> bytes:
    """JSON as Starlette's JSONResponse writes it (compact, UTF-8, no NaN)."""
    return json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


class JudgingHotPath:
    """Pure ASGI app answering the judging loop's bearer-token requests (see the module
    docstring); every other request goes to ``app`` (the framework) untouched.

    ``headers`` are added to every response (the security headers of the stack);
    ``max_body_bytes`` is the stack's body limit."""

    def __init__(
        self,
        app: ASGIApp,
        db: Database,
        *,
        headers: Sequence[tuple[bytes, bytes]] = (),
        max_body_bytes: int,
    ) -> None:
        self.app = app
        self.db = db
        self.headers = list(headers)
        self.max_body_bytes = max_body_bytes

    async def _respond(
        self, send: Send, status: int, payload: Any, headers: dict[str, str] | None = None
    ) -> None:
        body = _dumps(payload)
        raw = [
            (b"content-length", str(len(body)).encode("ascii")),
            (b"content-type", b"application/json"),
            *(
                (k.lower().encode("latin-1"), v.encode("latin-1"))
                for k, v in (headers or {}).items()
            ),
            *self.headers,
        ]
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        match = _PATH.fullmatch(scope["path"])
        if match is None or (scope["method"], match[2]) not in _ROUTES:
            await self.app(scope, receive, send)
            return
        token = _bearer(scope)
        if token is None:
            await self.app(scope, receive, send)
            return
        task_id = int(match[1])
        caller = BearerToken(token)
        db = self.db
        work: Callable[[], Any]
        if scope["method"] == "GET":

            def work() -> Any:
                return judging.next_question(db=db, user=caller, task_id=task_id)

        else:
            length = _content_length(scope)
            if length is None or length > self.max_body_bytes:
                await self.app(scope, receive, send)
                return
            body, disconnected = await _read_body(receive)
            if disconnected:
                return
            data = _judgment(scope, body)
            if data is None:  # the routes answer it (422), from the same bytes
                await self.app(scope, _replay(body, receive), send)
                return

            def work() -> Any:
                return judging.submit_judgment(db=db, user=caller, task_id=task_id, data=data)

        try:
            payload = _NOT_YET
            if scope["method"] == "POST" and db.is_sqlite:
                payload = await _inline(
                    lambda: judging.submit_judgment(
                        db=db, user=caller, task_id=task_id, data=data, nowait=True
                    ),
                    db.settings.sqlite_busy_timeout_ms / 1000,
                )
            if payload is _NOT_YET:
                payload = await asyncio.get_running_loop().run_in_executor(executor(), work)
        except HANDLED_ERRORS as exc:
            parts = error_parts(exc)
            if parts is None:  # pragma: no cover - every handled class has a mapping
                raise
            status, error, headers = parts
            await self._respond(send, status, jsonable_encoder(error), headers)
            return
        except Exception:  # a bug: answer as the stack's catch-all handler does
            log.exception("unhandled error on %s %s", scope["method"], scope["path"])
            await self._respond(send, 500, {"detail": "internal server error"})
            return
        await self._respond(send, 200, payload)


#: Pauses (s) between attempts of the event-loop path while another thread or process writes:
#: a judging write holds the lock for ~0.3 ms, so the first pauses are short; then every 4 ms.
#: The request keeps waiting here rather than going to the pool: requests that went to the
#: pool when they found the lock taken made the pool's writes keep it taken for the next ones,
#: and under 32 assessors the process flipped for good into that slower path (measured: every
#: submit of a 32-assessor run through the pool, twice the CPU per judgment, half the rate).
_PAUSES = (0.0005, 0.001, 0.002, 0.004)


async def _inline(attempt: Callable[[], Any], patience: float) -> Any:
    """``attempt()`` on the event loop thread, retried after short pauses (the loop serves
    other requests meanwhile) while the write lock is busy, for up to ``patience`` seconds
    (the SQLite busy timeout); :data:`_NOT_YET` if it does not qualify, or never got the
    lock (the pool then waits for it as usual, and answers 503 if it cannot)."""
    waited = 0.0
    step = 0
    while True:
        try:
            return attempt()
        except WouldBlock as exc:
            if not exc.busy or waited >= patience:
                return _NOT_YET
        pause = _PAUSES[min(step, len(_PAUSES) - 1)]
        step += 1
        await asyncio.sleep(pause)
        waited += pause


def _judgment(scope: Scope, body: bytes) -> dict[str, Any] | None:
    """The judgment as the route would pass it on (``model_dump(exclude_none=True)``), or
    None if the route should answer (not JSON, not valid)."""
    if not _is_json(scope):
        return None
    try:
        return JudgmentIn.model_validate(json.loads(body)).model_dump(exclude_none=True)
    except (ValueError, ValidationError, RecursionError):  # bad JSON, bad UTF-8, deep nesting
        return None


async def _read_body(receive: Receive) -> tuple[bytes, bool]:
    """The whole request body and whether the client went away first (its declared length is
    within the limit, checked before; the server holds the body to that length)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"", True
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), False


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that yields ``body`` once, then defers to the real one (disconnects)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
