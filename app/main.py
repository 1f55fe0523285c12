"""Application assembly (contract C4): ``create_app(settings) -> FastAPI``.

No module-level app or engine: every app owns its :class:`app.db.Database` on
``app.state.db`` (tests build several apps over different databases in one process). Run with
``heapjudge serve`` (applies migrations first) or
``uvicorn app.main:create_app --factory`` (settings from ``HEAPJUDGE_*``).

Routers are listed explicitly in :func:`_api_routers`; another area adds its API router with a
one-line edit there. The web router ``app.routers.web.router`` (HTML pages) is included last.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import APIRouter, FastAPI
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.db import Database
from app.errors import BodySizeLimitMiddleware, install_error_handlers
from app.settings import Settings

API_PREFIX = "/api/v1"
STATIC_DIR = Path(__file__).resolve().parent / "static"

#: The default page policy (anchors B4). Pages may set a stricter one themselves.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "script-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
)
#: The interactive API docs load Swagger UI assets; they get no page CSP.
CSP_EXEMPT_PATHS = ("/docs", "/redoc", "/docs/oauth2-redirect")


def _api_routers() -> list[APIRouter]:
    """Every JSON API router (mounted under /api/v1). Add yours here with one line."""
    from app.routers.api import admin, analysis, auth, collections, exports, tasks, training, users

    return [
        auth.router,
        users.router,
        collections.router,
        tasks.router,
        exports.router,
        analysis.router,
        admin.router,
        training.router,
    ]


class SecurityHeadersMiddleware:
    """Adds the security headers (and a default CSP) to every HTTP response that lacks them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        add_csp = scope.get("path", "") not in CSP_EXEMPT_PATHS

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                for name, value in SECURITY_HEADERS:
                    if name not in present:
                        headers.append((name, value))
                if add_csp and b"content-security-policy" not in present:
                    headers.append((b"content-security-policy", CONTENT_SECURITY_POLICY.encode()))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the service for ``settings`` (default: from the environment)."""
    settings = settings or Settings()
    settings.check()
    db = Database(settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        db.dispose()

    app = FastAPI(
        title="heapjudge",
        version="1",
        summary="Top-k relevance labeling service (HeapSort preference judging, five grades)",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.db = db

    install_error_handlers(app)
    for router in _api_routers():
        app.include_router(router, prefix=API_PREFIX)

    from app.routers import web

    app.include_router(web.router)
    if STATIC_DIR.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    # Outermost first: headers are added to every response, including 413s.
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(SecurityHeadersMiddleware)
    return app
