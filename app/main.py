"""Application assembly (contract C4): ``create_app(settings) -> FastAPI``.

No module-level app or engine: every app owns its :class:`app.db.Database` on
``app.state.db`` (tests build several apps over different databases in one process). Run with
``heapjudge serve`` (applies migrations first) or
``uvicorn app.main:create_app --factory`` (settings from ``HEAPJUDGE_*``).

Routers are listed explicitly in :func:`_api_routers`; another area adds its API router with a
one-line edit there. The web router ``app.routers.web.router`` (HTML pages) is included last.

API docs: ``/openapi.json`` and ``/docs`` (Swagger UI). The Swagger UI assets come from the
``fastapi-offline`` package and are served by the app under :data:`DOCS_ASSETS` (no CDN:
the docs work offline and the page's CSP stays ``'self'``; its one inline script is allowed by
its SHA-256 hash, :func:`inline_script_csp`). ReDoc is off: it has no offline bundle.
"""

from __future__ import annotations

import base64
import gc
import hashlib
import importlib.util
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.db import Database
from app.errors import BodySizeLimitMiddleware, install_error_handlers
from app.hotpath import JudgingHotPath
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
#: Where the app serves the Swagger UI files of the ``fastapi-offline`` package.
DOCS_ASSETS = "/docs-assets"

_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


def inline_script_csp(html: str) -> str:
    """The default policy plus ``'sha256-...'`` sources for each inline ``<script>`` of
    ``html`` (CSP Level 2 hash sources: base64 of the SHA-256 of the script text), so exactly
    these scripts run and nothing injected would."""
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(m.encode("utf-8")).digest()).decode() + "'"
        for m in _INLINE_SCRIPT.findall(html)
    )
    return CONTENT_SECURITY_POLICY.replace("script-src 'self'", f"script-src 'self' {hashes}")


def _with_script_hashes(response: HTMLResponse) -> HTMLResponse:
    html = bytes(response.body).decode("utf-8")
    response.headers["content-security-policy"] = inline_script_csp(html)
    return response


def swagger_ui_dir() -> Path | None:
    """The Swagger UI 5 files shipped by the ``fastapi-offline`` package (None if missing).

    Swagger UI 5 is needed: FastAPI writes OpenAPI 3.1, which Swagger UI 4 cannot render."""
    try:
        spec = importlib.util.find_spec("fastapi_offline")
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    if spec is None or spec.origin is None:  # pragma: no cover
        return None
    path = Path(spec.origin).parent / "static"
    return path if (path / "swagger-ui-bundle.js").is_file() else None


def _add_docs(app: FastAPI) -> None:
    """``/docs`` and its OAuth2 redirect page, with the assets served by the app itself."""
    assets = swagger_ui_dir()
    if assets is None:  # pragma: no cover - without the bundle there are no docs pages
        return
    app.mount(DOCS_ASSETS, StaticFiles(directory=assets), name="docs-assets")
    title = f"{app.title} API"

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return _with_script_hashes(
            get_swagger_ui_html(
                openapi_url=app.openapi_url or "/openapi.json",
                title=title,
                swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
                swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
                swagger_favicon_url=f"{DOCS_ASSETS}/favicon.png",
                oauth2_redirect_url="/docs/oauth2-redirect",
            )
        )

    @app.get("/docs/oauth2-redirect", include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return _with_script_hashes(get_swagger_ui_oauth2_redirect_html())


def _api_routers() -> list[APIRouter]:
    """Every JSON API router (mounted under /api/v1). Add yours here with one line."""
    from app.routers.api import (
        admin,
        analysis,
        auth,
        collections,
        exports,
        retrieval,
        tasks,
        training,
        users,
    )

    return [
        auth.router,
        users.router,
        collections.router,
        tasks.router,
        exports.router,
        analysis.router,
        admin.router,
        training.router,
        retrieval.router,
    ]


#: Sent when the public origin is https: browsers then refuse plain http for a year.
HSTS = (b"strict-transport-security", b"max-age=31536000; includeSubDomains")


def api_response_headers(https: bool) -> tuple[tuple[bytes, bytes], ...]:
    """The headers :class:`SecurityHeadersMiddleware` adds to a JSON API response."""
    return (
        *SECURITY_HEADERS,
        *((HSTS,) if https else ()),
        (b"cache-control", b"no-store"),
        (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    )


class HeapjudgeApp(FastAPI):
    """The FastAPI app with the judging hot path (:mod:`app.hotpath`) in front of its whole
    middleware stack: the hot path answers the judging loop's bearer-token requests and hands
    every other request (and lifespan) to FastAPI."""

    hot_path: JudgingHotPath | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.hot_path is None:
            await super().__call__(scope, receive, send)
        else:
            await self.hot_path(scope, receive, send)

    async def call_framework(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The app without the hot path (what the hot path falls back to)."""
        await super().__call__(scope, receive, send)


class SecurityHeadersMiddleware:
    """Adds the security headers (and a default CSP) to every HTTP response that lacks them;
    ``Strict-Transport-Security`` when served over https; ``Cache-Control: no-store`` on API
    responses (tokens, labels and exports must not linger in shared caches)."""

    def __init__(self, app: ASGIApp, https: bool = False) -> None:
        self.app = app
        self.extra = (HSTS,) if https else ()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        defaults = SECURITY_HEADERS + self.extra
        if scope.get("path", "").startswith(API_PREFIX + "/"):
            defaults += ((b"cache-control", b"no-store"),)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                for name, value in defaults:
                    if name not in present:
                        headers.append((name, value))
                # A response with its own policy (pages, /docs) keeps it.
                if b"content-security-policy" not in present:
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
        # Everything imported and built so far lives as long as the process: move it out of
        # the collector's sight. A full collection otherwise rescans those ~10^5 objects and
        # stalled every request for ~85 ms under load (measured with gc.callbacks). Collect
        # first, so no garbage is frozen with them.
        gc.collect()
        gc.freeze()
        yield
        db.dispose()

    app = HeapjudgeApp(
        title="heapjudge",
        version="1",
        summary="Top-k relevance labeling service (HeapSort preference judging, five grades)",
        lifespan=lifespan,
        docs_url=None,  # served by _add_docs with local assets
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.db = db

    install_error_handlers(app)
    for router in _api_routers():
        app.include_router(router, prefix=API_PREFIX)

    from app.routers import web

    app.include_router(web.router)
    _add_docs(app)
    if STATIC_DIR.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    # Outermost last: headers are added to every response, including 413s.
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(SecurityHeadersMiddleware, https=settings.secure_cookies)
    app.hot_path = JudgingHotPath(
        app.call_framework,
        db,
        headers=api_response_headers(settings.secure_cookies),
        max_body_bytes=settings.max_body_bytes,
    )
    return app
