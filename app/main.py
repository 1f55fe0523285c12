"""Application assembly: ``create_app(settings) -> FastAPI``.

No module-level app or engine: every app owns its :class:`app.kernel.db.Database` on
``app.state.db`` (tests build several apps over different databases in one process). Run with
``heapjudge serve`` (applies migrations first) or
``uvicorn app.main:create_app --factory`` (settings from ``HEAPJUDGE_*``).

Routers are listed explicitly in :func:`_api_routers`; another area adds its API router with a
one-line edit there. The web router ``app.web.router`` (HTML pages) is included last.

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
from starlette.types import ASGIApp

from app.http.errors import install_error_handlers
from app.http.middleware import (
    API_PREFIX,
    CONTENT_SECURITY_POLICY,
    BodySizeLimitMiddleware,
    SecurityHeadersMiddleware,
)
from app.kernel.db import Database
from app.kernel.settings import Settings, load_settings

STATIC_DIR = Path(__file__).resolve().parent / "static"

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
    """Every JSON API router (mounted under /api/v1). Add yours here with one line. (The
    judging loop's routes are not among them: :func:`create_app` adds them first, directly.)"""
    from app.analysis import endpoints as analysis
    from app.campaign_pools import endpoints as pools
    from app.collections import admin_endpoints as collections_admin
    from app.collections import endpoints as collections
    from app.exports import endpoints as exports
    from app.machine import admin_endpoints as machine_admin
    from app.planning import endpoints as planning
    from app.retrieval import endpoints as retrieval
    from app.runs import endpoints as runs
    from app.second_opinions import endpoints as second_opinions
    from app.tasks import endpoints as tasks
    from app.tasks import progress_endpoints as progress
    from app.training import endpoints as training
    from app.users import admin_endpoints as users_admin
    from app.users import auth_endpoints as auth
    from app.users import endpoints as users

    return [
        auth.router,
        users.router,
        collections.router,
        tasks.router,
        second_opinions.router,
        exports.router,
        analysis.router,
        collections_admin.router,
        planning.router,
        pools.router,
        progress.router,
        users_admin.router,
        training.router,
        retrieval.router,
        runs.router,
        machine_admin.router,
    ]


class HeapjudgeApp(FastAPI):
    """FastAPI with :class:`SecurityHeadersMiddleware` outside its whole stack, so that the
    500 answer of Starlette's outermost ``ServerErrorMiddleware`` carries the headers too."""

    def build_middleware_stack(self) -> ASGIApp:
        https = bool(self.state.settings.secure_cookies)
        return SecurityHeadersMiddleware(super().build_middleware_stack(), https=https)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the service for ``settings`` (default: :func:`app.kernel.settings.load_settings`,
    the environment; ``serve`` puts its settings there for uvicorn's worker processes)."""
    settings = settings or load_settings()
    settings.check()
    db = Database(settings)
    from app.judging.jobs import enqueue_opinions_later

    # The judging loop asks for an llm task's opinions after its commits (on a background
    # thread: the request never waits for the queue); the queue is above the loop.
    db.want_opinions = enqueue_opinions_later(settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # Everything imported and built so far lives as long as the process: move it out of
        # the collector's sight. A full collection otherwise rescans them all and stalls every
        # request in flight (docs/performance.md). Collect first, so no garbage is frozen with
        # them.
        gc.collect()
        gc.freeze()
        yield
        from app.campaign_pools.service import stop_build_process

        stop_build_process()
        db.dispose()

    app = HeapjudgeApp(
        title="heapjudge",
        version="1",
        summary="Top-k relevance labeling service (HeapSort preference judging, five grades)",
        lifespan=lifespan,
        docs_url=None,  # served by _add_docs with local assets
        redoc_url=None,
        # FastAPI's built-in OpenTelemetry export is off: the service configures no
        # OpenTelemetry provider, and asking the OpenTelemetry API on every request whether
        # one was configured is work on every judgment for nothing (docs/performance.md).
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.settings = settings
    app.state.db = db

    install_error_handlers(app)
    from app.judging.endpoints import judging_loop

    # The judging loop's routes go into the app's own router, before every other route: the
    # router then calls each one's own ASGI app (LeanRoute's, app/http/lean_route.py),
    # where an included router would wrap it in FastAPI's generic one and match the path
    # twice (once to choose the router, once inside it).
    app.router.routes[:0] = judging_loop.routes
    for router in _api_routers():
        app.include_router(router, prefix=API_PREFIX)

    from app import web

    app.include_router(web.router)
    _add_docs(app)
    if STATIC_DIR.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    app.add_middleware(BodySizeLimitMiddleware, max_bytes=settings.max_body_bytes)
    return app
