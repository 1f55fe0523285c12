"""A judged document as its own response: what the judging pages' frames load.

The judging pages show each document in ``<iframe sandbox src=...>`` loaded from
``GET /tasks/{id}/document?doc=ID&hl=0|1&v=VERSION`` (:mod:`app.web.assess`) or
``/second-opinions/{id}/document`` (:mod:`app.web.second_opinions`), each checked exactly as
its page is. The answer is the server's rendering (:func:`app.web.page_data.render_frame`)
with :data:`app.http.middleware.DOCUMENT_HEADERS`: its own sandboxing policy, in which
inline styles are allowed (they style only this document, which runs no script and has an
opaque origin), so the pages themselves allow none (docs/security.md#html-from-users).

Caching: the URL carries the rendering's version (:func:`app.web.page_data.frame_version`).
When the version asked is the one served, the browser may keep the answer for a day without
asking again (``private``: for this browser only, never a shared cache), which is what lets
the page preload the next documents once and show them from memory or the disk cache;
otherwise (no version, or an older rendering) it must revalidate (``no-cache`` with an
``ETag``: a 304 when unchanged).
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import HTMLResponse, Response

from app.http.middleware import DOCUMENT_HEADERS
from app.web.page_data import frame_version
from labeling.retrieval.highlight import Marked

#: The cache policy of a document fetched by its current version (see the module docstring).
KEEP = "private, max-age=86400, immutable"
#: The cache policy of a document fetched without its current version.
REVALIDATE = "private, no-cache"


def _matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an ``If-None-Match`` header names ``etag`` (weak or strong, or ``*``)."""
    if not if_none_match:
        return False
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
    return "*" in tags or etag in tags


def document_response(request: Request, frame: Marked, version: str | None) -> Response:
    """The framed document ``frame`` with its headers; 304 when the browser holds it."""
    current = frame_version(frame.markup)
    etag = f'"{current}"'
    headers = {
        **DOCUMENT_HEADERS,
        "ETag": etag,
        "Cache-Control": KEEP if version == current else REVALIDATE,
    }
    if _matches(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers=headers)
    return HTMLResponse(frame.markup, headers=headers)


def uncached(response: Response) -> Response:
    """An error in place of a document, which no cache keeps."""
    response.headers["Cache-Control"] = "no-store"
    return response
