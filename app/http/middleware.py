"""The service's two ASGI middlewares: the security headers of every response and the request
body size limit.

:class:`BodySizeLimitMiddleware` enforces ``max_body_bytes`` by counting the bytes actually
received (a ``Content-Length`` check alone is bypassed by chunked bodies, docs/security.md).

The security headers of every response are set in one place, :class:`SecurityHeadersMiddleware`.

Three kinds of response, told apart by what the response itself says:

- **HTML pages** (``text/html`` without a policy of their own: everything
  :func:`app.web.templates.render` returns): :data:`PAGE_HEADERS`, whose CSP is
  :data:`PAGE_CSP`, the same for every page: no inline script and no inline style anywhere
  (pages pass data in ``<script type="application/json">`` blocks and ``data-`` attributes;
  the styles are in ``app/static/css``), ``img-src data:`` and ``frame-src 'self'`` (the
  judging pages frame documents from this origin, nothing else). A header, not ``<meta>``: a
  meta CSP cannot set ``frame-ancestors`` and only applies once parsed;
- **judged documents** (``GET /tasks/{id}/document``, ``/second-opinions/{id}/document``,
  :mod:`app.web.documents`): each framed document is a response of its own with
  :data:`DOCUMENT_HEADERS`, whose CSP :data:`DOCUMENT_CSP` sandboxes it (no scripts, an
  opaque origin, whatever embeds or opens it) and lets it load nothing: inline styles are
  allowed *in the document's own response* (judged HTML keeps its look; a style can only
  change its own frame), images only as ``data:``; it may be framed by this origin only.
  Before, documents were ``srcdoc`` frames, which inherit the embedding page's policy, so the
  judging pages had to allow inline styles;
- **responses with their own CSP** (``/docs``, whose inline script is allowed by its hash):
  :data:`SECURITY_HEADERS`, their policy kept;
- **everything else** (the JSON API, redirects, static files, errors):
  :data:`SECURITY_HEADERS` and the default :data:`CONTENT_SECURITY_POLICY`; under ``/api/``
  also ``Cache-Control: no-store`` (tokens, labels and exports must not linger in shared
  caches).

``Strict-Transport-Security`` is added to all of them when the public origin is https. A
header the response set itself is never replaced.
"""

from __future__ import annotations

from fastapi.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.http.json_limits import (
    MAX_JSON_DEPTH,
    JsonShape,
    body_limit,
    reads_json,
    shape_error,
    string_limit,
)

#: A JSON body of one chunk of at most this many bytes holds fewer values than the limit
#: (:data:`app.http.json_limits.MAX_JSON_VALUES`): only its brackets are counted.
SMALL_JSON_BODY = 64 * 1024

API_PREFIX = "/api/v1"

#: The default policy (API responses, redirects, static files).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; "
    "script-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)

#: The policy of every HTML page (see the module docstring).
PAGE_CSP = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src data:",
        "font-src 'none'",
        "connect-src 'self'",
        "frame-src 'self'",
        "child-src 'none'",
        "worker-src 'none'",
        "media-src 'none'",
        "object-src 'none'",
        "manifest-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)

#: The extra policy the judging page asks of its document frames (``<iframe csp=...>``, CSP
#: Embedded Enforcement, honoured by Chromium): a judged document may use inline styles and
#: ``data:`` images, and fetch nothing. :data:`DOCUMENT_CSP` is at least as strict, so the
#: frame's own response satisfies it.
FRAME_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

#: The policy of a judged document's own response (see the module docstring): sandboxed
#: without any token, :data:`FRAME_CSP`, and framed by this origin only.
DOCUMENT_CSP = "; ".join(
    (
        "sandbox",
        FRAME_CSP,
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'self'",
    )
)

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
)

#: The headers of an HTML page.
PAGE_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", PAGE_CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=(), payment=(), usb=()"),
    (b"cache-control", b"no-store"),
)

#: The headers of a judged document (:mod:`app.web.documents` adds its cache headers).
DOCUMENT_HEADERS: dict[str, str] = {
    "Content-Security-Policy": DOCUMENT_CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "SAMEORIGIN",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
}

#: Sent when the public origin is https: browsers then refuse plain http for a year.
HSTS = (b"strict-transport-security", b"max-age=31536000; includeSubDomains")

_CSP = b"content-security-policy"
_NO_STORE = (b"cache-control", b"no-store")


def _is_html(headers: list[tuple[bytes, bytes]]) -> bool:
    for name, value in headers:
        if name.lower() == b"content-type":
            return value.split(b";", 1)[0].strip().lower() == b"text/html"
    return False


class SecurityHeadersMiddleware:
    """Adds the headers of the module docstring to every HTTP response (pure ASGI)."""

    def __init__(self, app: ASGIApp, https: bool = False) -> None:
        self.app = app
        extra = (HSTS,) if https else ()
        self.page = PAGE_HEADERS + extra
        self.own_policy = SECURITY_HEADERS + extra
        self.default = SECURITY_HEADERS + extra + ((_CSP, CONTENT_SECURITY_POLICY.encode()),)
        self.api = (*self.default, _NO_STORE)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        is_api = scope.get("path", "").startswith(API_PREFIX + "/")
        page = self.page

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                if _CSP in present:
                    wanted = self.own_policy + ((_NO_STORE,) if is_api else ())
                elif not is_api and _is_html(headers):  # the API answers JSON
                    wanted = page
                else:
                    wanted = self.api if is_api else self.default
                headers.extend((n, v) for n, v in wanted if n not in present)
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


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

    A JSON body (``application/json`` or ``application/*+json``, what the app parses as
    JSON) is also held to the shape limits of :mod:`app.http.json_limits` before the app
    acts on it (unless the matched route reads another format whatever the header says:
    :func:`app.http.json_limits.reads_json`): each chunk is counted as it passes
    (:class:`app.http.json_limits.JsonShape`),
    and at the first one past the limits the rest of the body is read and dropped and
    ``receive`` raises a 422 that the app's error handlers answer. A body of one small
    chunk with few brackets is within the limits by its size.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        is_json, refused = self._read_headers(scope)
        if refused is not None:
            await self._reject(send, *refused)
            return
        total = 0
        exceeded = False
        started = False
        shape: JsonShape | None = None

        async def limited_receive() -> Message:
            nonlocal total, exceeded, shape
            if exceeded:
                raise _BodyTooLarge
            message = await receive()
            if message["type"] == "http.request":
                body = message.get("body", b"")
                total += len(body)
                if total > self.max_bytes:
                    exceeded = True
                    raise _BodyTooLarge
                if is_json and (
                    shape is not None
                    or message.get("more_body", False)
                    or len(body) > SMALL_JSON_BODY
                    or body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH
                ):
                    shape = await self._fed_shape(shape, scope, message, receive, total)
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

    def _read_headers(self, scope: Scope) -> tuple[bool, tuple[int, str] | None]:
        """Whether the body is declared JSON, and (status, detail) for a Content-Length that is
        not a number or is over the limit."""
        is_json = False
        for name, value in scope.get("headers", ()):
            if name == b"content-type":
                kind = value.partition(b";")[0].strip().lower()
                is_json = kind == b"application/json" or (
                    kind.startswith(b"application/") and kind.endswith(b"+json")
                )
            elif name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    return is_json, (400, "invalid Content-Length header")
                if declared > self.max_bytes:
                    return is_json, (413, self._too_large_detail())
        return is_json, None

    def _too_large_detail(self) -> str:
        return f"request body exceeds the limit of {self.max_bytes} bytes"

    async def _fed_shape(
        self, shape: JsonShape | None, scope: Scope, message: Message, receive: Receive, total: int
    ) -> JsonShape:
        """``shape`` (a new one for the first chunk) fed this chunk; past a limit the rest of
        the body is drained and the request refused (422)."""
        if shape is None:
            route = scope.get("route")
            shape = JsonShape(
                checked=reads_json(route),
                max_string=string_limit(route),
                max_bytes=body_limit(route),
            )
        problem = shape.feed(message.get("body", b""))
        if problem is not None:
            await self._drain(message, receive, total)
            raise HTTPException(422, shape_error(problem))
        return shape

    async def _drain(self, message: Message, receive: Receive, total: int) -> None:
        """Read and drop the rest of a refused body (the client sends it before reading the
        answer), still counting it against the limit."""
        while message.get("more_body", False) and total <= self.max_bytes:
            message = await receive()
            if message["type"] != "http.request":
                return
            total += len(message.get("body", b""))

    async def _too_large(self, send: Send) -> None:
        await self._reject(send, 413, self._too_large_detail())

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
