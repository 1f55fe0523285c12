"""Presentation of the assessor pages' data (my tasks, judging page, done page); no queries.

The data comes from the services the REST API uses: the task list from
:func:`app.tasks.service.list_tasks`; a task from :func:`app.judging.pages.task_page`,
which replays its live log as ``GET /api/v1/tasks/{id}/next`` does and carries that endpoint's
body as the first question (so ``app/static/js/judge/`` handles the first and every later
question alike); documents for the frames and the lookahead from
:func:`app.judging.pages.task_documents` and :func:`app.judging.pages.lookahead`
(the judging loop's document cache).

Documents are shown in sandboxed frames, each loaded from its own URL
(``GET /tasks/{id}/document?doc=...``, :mod:`app.web.documents`), so that a document is
answered with its own policy and never inherits the page's. :func:`render_frame` builds that
document on the server, the only place where it can be built, since nothing runs in the frame:
a fixed prefix (charset, a readable default style, the "more below" cue) followed by the stored
HTML, or by the escaped and reflowed plain text, with the query's words marked and reading
anchors for keyboard scrolling (:mod:`labeling.retrieval.highlight`). The page and the judging
script get, per document, its URL (:meth:`FramedDoc.src`: the rendering's version in it, so the
browser may keep it) and its number of anchors: in the page for the first question, from
``GET /tasks/{id}/frames`` and ``/lookahead`` for later ones.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode

from app.judging.pages import TaskPage
from app.kernel.db import Database
from app.tasks import service as tasks
from labeling.protocol.types import GRADE_NAMES
from labeling.retrieval.highlight import Marked, mark_html, mark_text, query_terms

#: Start of every framed document: the charset, a viewport and a calm default style. A
#: document's own CSS comes after and may override it (it only ever styles its frame). The
#: ``.hj-more`` cue fades in at the bottom while the document continues below the frame: a CSS
#: scroll-driven animation on the frame's own scroller (no script runs in the frame); when the
#: document fits, the scroll timeline is inactive and the cue keeps its base style, hidden.
FRAME_PREFIX = (
    '<!doctype html><html><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    "<style>html{color-scheme:light}"
    "body{margin:0;padding:14px 18px 40px;font:16px/1.6 system-ui,-apple-system,'Segoe UI',"
    "Roboto,'Noto Sans',Arial,sans-serif;color:#1b1f24;background:#fff;overflow-wrap:anywhere}"
    "img,video,table{max-width:100%}img{height:auto}pre{white-space:pre-wrap}"
    ".hj-text p{margin:0 0 .8em;max-width:75ch}"
    "mark{background:#ffe98a;color:inherit;border-radius:2px;box-shadow:0 0 0 1px #e0c040}"
    ".hj-more{position:fixed;left:0;right:0;bottom:0;height:34px;padding:10px 18px 0;"
    "pointer-events:none;font:600 12px/1 system-ui,sans-serif;letter-spacing:.04em;"
    "text-transform:uppercase;text-align:right;color:#0b5cad;opacity:0;"
    "background:linear-gradient(rgba(255,255,255,0),#fff 70%);"
    "animation:hj-more linear both;animation-timeline:scroll(root)}"
    "@keyframes hj-more{0%,97%{opacity:1}100%{opacity:0}}"
    "</style></head><body>"
)
#: End of every framed document: the "more below" cue (see :data:`FRAME_PREFIX`).
FRAME_SUFFIX = "<div class=hj-more aria-hidden=true>more below &#9662;</div></body></html>"

METHOD_LABELS = {"topk": "Pairwise top-k", "graded": "Five grades"}
STATUS_LABELS = {
    "pending": "Not started",
    "active": "In progress",
    "done": "Finished",
    "cancelled": "Cancelled",
}


def render_frame(
    *,
    text: str | None,
    html_body: str | None,
    title: str | None = None,
    terms: frozenset[str] = frozenset(),
) -> Marked:
    """The framed document for one judged document and its number of reading anchors.

    HTML is kept as stored, with query words marked and reading anchors placed in its text
    runs (:func:`labeling.retrieval.highlight.mark_html`); plain text is escaped, reflowed into
    paragraphs without a leading copy of the title, and marked
    (:func:`labeling.retrieval.highlight.mark_text`). ``terms`` empty: no highlighting.
    """
    return _render_frame_cached(text, html_body, title, terms)


#: Rendered frames kept per (text, html, title, terms): the judging page asks for a document
#: again and again (first as a lookahead candidate, later when it is shown, again after every
#: undo or highlight switch), and marking a 5,000-word document takes milliseconds that would
#: otherwise sit on the page's critical path. About 128 documents of a few hundred kB at most.
FRAME_CACHE_SIZE = 128


@lru_cache(maxsize=FRAME_CACHE_SIZE)
def _render_frame_cached(
    text: str | None, html_body: str | None, title: str | None, terms: frozenset[str]
) -> Marked:
    body = mark_html(html_body, terms) if html_body else mark_text(text or "", terms, title=title)
    return Marked(FRAME_PREFIX + body.markup + FRAME_SUFFIX, body.anchors)


@lru_cache(maxsize=FRAME_CACHE_SIZE)
def _version_of(markup: str) -> str:
    return hashlib.sha256(markup.encode("utf-8")).hexdigest()[:16]


def frame_version(markup: str) -> str:
    """A short fingerprint of a rendered document: part of its URL, so a URL names one
    rendering and the browser may keep it (:mod:`app.web.documents`)."""
    return _version_of(markup)


@lru_cache(maxsize=256)
def highlight_terms(query_title: str) -> frozenset[str]:
    """The stems highlighted for a query (:func:`labeling.retrieval.highlight.query_terms`)."""
    return query_terms(query_title)


@dataclass(frozen=True, slots=True)
class DocView:
    doc_id: str
    title: str
    text: str | None
    html: str | None

    def as_json(self) -> dict[str, Any]:
        """The document as the REST API returns it."""
        return {"doc_id": self.doc_id, "title": self.title, "text": self.text, "html": self.html}

    def framed(self, base: str, terms: frozenset[str] = frozenset()) -> FramedDoc:
        """This document rendered for its frame, highlighting ``terms``, served under ``base``
        (the page's document URL, e.g. ``/tasks/7/document``)."""
        frame = self.rendered(terms)
        return FramedDoc(
            self.doc_id,
            self.title,
            document_src(base, self.doc_id, bool(terms), frame),
            frame.anchors,
        )

    def rendered(self, terms: frozenset[str] = frozenset()) -> Marked:
        """The framed document itself and its number of reading anchors."""
        return render_frame(text=self.text, html_body=self.html, title=self.title, terms=terms)


def document_src(base: str, doc_id: str, highlighted: bool, frame: Marked) -> str:
    """The URL of a framed document: ``base?doc=ID&hl=0|1&v=VERSION``. The id is a query
    parameter, not a path segment: an identifier may be ``.`` or ``..``, which a browser
    would resolve as a dot segment of the path."""
    query = urlencode(
        {"doc": doc_id, "hl": "1" if highlighted else "0", "v": frame_version(frame.markup)}
    )
    return f"{base}?{query}"


@dataclass(frozen=True, slots=True)
class FramedDoc:
    """A document as the judging page shows it: title, the URL of its frame and its number of
    reading anchors (for keyboard scrolling)."""

    doc_id: str
    title: str
    src: str
    anchors: int

    def as_json(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "title": self.title,
            "src": self.src,
            "anchors": self.anchors,
        }


def doc_view(payload: dict[str, Any]) -> DocView:
    """A document of a question body (``{"doc_id", "title", "text", "html"}``)."""
    return DocView(
        str(payload["doc_id"]), payload.get("title") or "", payload.get("text"), payload.get("html")
    )


@dataclass(frozen=True, slots=True)
class TaskRow:
    """One line of the "My tasks" table."""

    id: int
    query_title: str
    collection_name: str
    method: str
    method_label: str
    status: str
    status_label: str
    judgments: int
    remaining: int
    done: bool


def list_tasks(db: Database, user: Any) -> list[TaskRow]:
    """The user's own tasks (not cancelled), unfinished first, with progress from replay:
    the REST task list's service call (:func:`app.tasks.service.list_tasks`)."""
    views = tasks.list_tasks(
        db=db, user=user, assessor=user.username, include_cancelled=False, with_progress=True
    )
    rows: list[TaskRow] = []
    for v in views:
        status = "done" if v.done else ("active" if v.judgments else v.status)
        rows.append(
            TaskRow(
                id=v.id,
                query_title=v.query,
                collection_name=v.collection,
                method=v.method,
                method_label=METHOD_LABELS.get(v.method, v.method),
                status=status,
                status_label=STATUS_LABELS.get(status, status),
                judgments=v.judgments,
                remaining=v.remaining or 0,
                done=bool(v.done),
            )
        )
    rows.sort(key=lambda r: (r.done, r.id))
    return rows


def next_open_task(db: Database, user: Any, after: int) -> TaskRow | None:
    """The assessor's (``user``'s) next unfinished task other than ``after`` (None when all
    are done)."""
    for row in list_tasks(db, user):
        if not row.done and row.id != after:
            return row
    return None


def top_list(page: TaskPage) -> list[DocView] | None:
    """The finished top-k list, best first, with titles (None for graded or unfinished)."""
    if page.method != "topk" or page.result is None:
        return None
    return [doc_view(page.documents.get(d) or {"doc_id": d}) for d in page.result.top]


def grade_counts(page: TaskPage) -> list[tuple[str, int]] | None:
    """(grade name, number of documents) for a finished graded task; None otherwise."""
    if page.method != "graded" or page.result is None:
        return None
    grades = page.result.grades
    return [
        (f"{i + 1} {name}", sum(1 for g in grades.values() if g == i))
        for i, name in enumerate(GRADE_NAMES)
    ]


def format_duration(ms: int) -> str:
    """``1 h 02 min``, ``3 min 05 s`` or ``42 s``."""
    s = max(0, int(ms)) // 1000
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return f"{h} h {m:02d} min"
    if m:
        return f"{m} min {sec:02d} s"
    return f"{sec} s"
