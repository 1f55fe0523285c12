"""The request body size limit.

:class:`BodySizeLimitMiddleware` enforces ``max_body_bytes`` by counting the bytes actually
received (a ``Content-Length`` check alone is bypassed by chunked bodies,
docs/security.md).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


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
