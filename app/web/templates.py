"""Jinja2 templates for the server-rendered pages.

Templates live in the top-level ``templates/`` directory: ``base.html`` (which every page
extends) and one folder per concept (``judging/``, ``tasks/``, ``users/``, ...). Autoescaping is
on for every template (not only ``.html``): document text, titles and query descriptions are
untrusted.

:func:`render` is what page routes call. It fills the context ``base.html`` needs
(``current_user``, ``csrf_token``, ``flashes``, ``nav_active``, ``static_url``). The page's
security headers are set with every other response's, by
:class:`app.http.middleware.SecurityHeadersMiddleware`. :data:`FRAME_CSP` is the policy the
judging pages ask of their document frames (``<iframe csp=...>``; the documents' own
responses send a stricter one, :mod:`app.web.documents`).

Flash messages survive one redirect in a cookie signed with the server secret (HMAC-SHA256),
so a forged cookie cannot put words in the app's mouth; messages are autoescaped like
everything else.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, StrictUndefined, Undefined

from app.http.middleware import FRAME_CSP
from app.kernel.settings import templates_dir

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Source tree, or <prefix>/share/heapjudge/templates after a regular install (see there).
TEMPLATES_DIR = templates_dir()
STATIC_DIR = Path(__file__).resolve().parents[1] / "static"


FLASH_COOKIE = "heapjudge_flash"


@dataclass(frozen=True, slots=True)
class Flash:
    """A one-time message shown under the nav: level is info | success | warning | error."""

    level: str
    message: str


def _make_environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=True,  # every template, whatever its extension
        undefined=Undefined,
        trim_blocks=False,
        lstrip_blocks=False,
    )
    env.globals["static_url"] = static_url
    env.globals["frame_csp"] = FRAME_CSP
    return env


@lru_cache(maxsize=1)
def _templates() -> Jinja2Templates:
    return Jinja2Templates(env=_make_environment())


def templates() -> Jinja2Templates:
    """The shared :class:`Jinja2Templates` (built once)."""
    return _templates()


def strict_environment() -> Environment:
    """A copy of the environment that fails on undefined names: a template test renders a
    partial with it so a name the page forgot to pass fails the test
    (tests/app/judging/test_machine_loss.py)."""
    env = _make_environment()
    env.undefined = StrictUndefined
    return env


@lru_cache(maxsize=256)
def _static_version(path: str) -> str:
    file = STATIC_DIR / path
    try:
        return hashlib.sha256(file.read_bytes()).hexdigest()[:12]
    except OSError:
        return "0"


def static_url(path: str) -> str:
    """``/static/<path>?v=<content hash>``: browsers may cache static files forever, and a
    changed file gets a new URL."""
    path = path.lstrip("/")
    return f"/static/{path}?v={_static_version(path)}"


def _secret(request: Request) -> bytes:
    settings = getattr(request.app.state, "settings", None)
    key = getattr(settings, "secret_key", None) or "heapjudge-flash"
    return hashlib.sha256(b"flash:" + key.encode("utf-8")).digest()


def set_flash(request: Request, response: Response, message: str, level: str = "info") -> None:
    """Attach a one-time message to ``response`` (shown on the next rendered page)."""
    payload = base64.urlsafe_b64encode(
        json.dumps({"l": level, "m": message[:500]}).encode("utf-8")
    ).decode("ascii")
    sig = hmac.new(_secret(request), payload.encode("ascii"), hashlib.sha256).hexdigest()[:32]
    settings = getattr(request.app.state, "settings", None)
    response.set_cookie(
        FLASH_COOKIE,
        f"{payload}.{sig}",
        max_age=120,
        path="/",
        httponly=True,
        samesite="lax",
        secure=bool(getattr(settings, "secure_cookies", False)),
    )


def read_flashes(request: Request) -> list[Flash]:
    """The flash carried by the request's cookie, if its signature holds."""
    raw = request.cookies.get(FLASH_COOKIE)
    if not raw or "." not in raw:
        return []
    payload, sig = raw.rsplit(".", 1)
    expected = hmac.new(_secret(request), payload.encode("ascii", "replace"), hashlib.sha256)
    if not hmac.compare_digest(expected.hexdigest()[:32], sig):
        return []
    try:
        data = json.loads(base64.urlsafe_b64decode(payload.encode("ascii")))
        level, message = str(data["l"]), str(data["m"])
    except (ValueError, KeyError, TypeError):
        return []
    if level not in ("info", "success", "warning", "error"):
        level = "info"
    return [Flash(level, message)]


def render(
    request: Request,
    name: str,
    context: dict[str, Any] | None = None,
    *,
    user: Any = None,
    csrf_token: str = "",
    nav_active: str = "",
    flashes: list[Flash] | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    """Render ``templates/<name>`` with the base context (the page's security headers are
    added by the middleware: it is an HTML response).

    ``user`` is the logged-in user (anything with ``username`` and ``role``) or None;
    ``csrf_token`` goes into every form (hidden field ``csrf_token``); ``flashes`` are shown in
    addition to the one carried by the flash cookie (which is consumed here).
    """
    carried = read_flashes(request)
    ctx: dict[str, Any] = {
        "current_user": user,
        "csrf_token": csrf_token,
        "nav_active": nav_active,
        "flashes": [*carried, *(flashes or [])],
    }
    ctx.update(context or {})
    response = templates().TemplateResponse(request, name, ctx, status_code=status_code)
    if carried or FLASH_COOKIE in request.cookies:
        response.delete_cookie(FLASH_COOKIE, path="/")
    return response
