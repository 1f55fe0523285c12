"""Read-only view data for the assessor pages (my tasks, judging page, done page).

The task list comes from the REST API's service call (:func:`app.services.tasks.list_tasks`).

The pages show what the judgment log says: a task's protocol state is rebuilt by replaying its
live judgments (``undone`` false, in ``seq`` order) through :func:`labeling.session.open_session`,
exactly as the REST API does. (The judging page takes its first question from
:func:`app.services.judging.next_question`, the body of ``GET /api/v1/tasks/{id}/next``, so
``app/static/js/judge.js`` handles the first and every later question alike.)

Documents are shown in ``<iframe sandbox srcdoc=...>``. :func:`render_frame` builds that
document on the server, the only place where it can be built, since nothing runs in the frame:
a fixed prefix (charset, a readable default style, the "more below" cue) followed by the stored
HTML, or by the escaped and reflowed plain text, with the query's words marked and reading
anchors for keyboard scrolling (:mod:`labeling.highlight`). The result is a plain ``str`` (never
``Markup``), so the template entity-encodes it into the attribute; judge.js gets the same
string for later documents from ``GET /tasks/{id}/frames`` and ``/lookahead``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import select

from app.db import Database
from app.models import Collection, Document, Query, Task
from app.services import tasks
from app.services.judging import answer_of, live_judgments, replay_task
from labeling.highlight import Marked, mark_html, mark_text, query_terms
from labeling.session import AnySession, TopKSession, open_session
from labeling.types import GRADE_NAMES, Answer, GradeAnswer, PairAnswer, PairQuestion

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
    """The ``srcdoc`` document for one judged document and its number of reading anchors.

    HTML is kept as stored, with query words marked and reading anchors placed in its text
    runs (:func:`labeling.highlight.mark_html`); plain text is escaped, reflowed into
    paragraphs without a leading copy of the title, and marked
    (:func:`labeling.highlight.mark_text`). ``terms`` empty: no highlighting.
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


def frame_srcdoc(
    *,
    text: str | None,
    html_body: str | None,
    title: str | None = None,
    terms: frozenset[str] = frozenset(),
) -> str:
    """The ``srcdoc`` string of :func:`render_frame` (plain str; the template escapes it)."""
    return render_frame(text=text, html_body=html_body, title=title, terms=terms).markup


@lru_cache(maxsize=256)
def highlight_terms(query_title: str) -> frozenset[str]:
    """The stems highlighted for a query (:func:`labeling.highlight.query_terms`)."""
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

    def framed(self, terms: frozenset[str] = frozenset()) -> FramedDoc:
        """This document rendered for its frame, highlighting ``terms``."""
        frame = render_frame(text=self.text, html_body=self.html, title=self.title, terms=terms)
        return FramedDoc(self.doc_id, self.title, frame.markup, frame.anchors)

    @property
    def srcdoc(self) -> str:
        return self.framed().srcdoc


@dataclass(frozen=True, slots=True)
class FramedDoc:
    """A document as the judging page shows it: title, ``srcdoc`` and reading anchors."""

    doc_id: str
    title: str
    srcdoc: str
    anchors: int

    def as_json(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "title": self.title,
            "srcdoc": self.srcdoc,
            "anchors": self.anchors,
        }


def doc_view(payload: dict[str, Any]) -> DocView:
    """A document of a question body (``{"doc_id", "title", "text", "html"}``)."""
    return DocView(
        str(payload["doc_id"]), payload.get("title") or "", payload.get("text"), payload.get("html")
    )


@dataclass(slots=True)
class TaskView:
    """Everything a judging or done page needs about one task."""

    task: Task
    query: Query
    collection_name: str
    session: AnySession
    docs: dict[str, DocView]
    active_ms: int

    def doc(self, doc_id: str) -> DocView:
        return self.docs.get(doc_id) or DocView(doc_id, doc_id, "(document not found)", None)


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
    the REST task list's service call (:func:`app.services.tasks.list_tasks`)."""
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


def task_owner_and_query(db: Database, task_id: int) -> tuple[int, str] | None:
    """(assessor id, query title) of a task; None when the task does not exist."""
    with db.read() as s:
        row = s.execute(
            select(Task.assessor_id, Query.title)
            .join(Query, Query.id == Task.query_id)
            .where(Task.id == task_id)
        ).first()
    return None if row is None else (int(row[0]), str(row[1] or ""))


def task_documents(db: Database, task_id: int, doc_ids: Sequence[str]) -> list[DocView]:
    """The task's documents among ``doc_ids`` (others are ignored), in the order asked."""
    with db.read() as s:
        task = s.get(Task, task_id)
        if task is None:
            return []
        wanted = [d for d in dict.fromkeys(doc_ids) if d in set(task.doc_ids)]
        if not wanted:
            return []
        docs = {
            d.external_id: DocView(d.external_id, d.title or "", d.text, d.html)
            for d in s.scalars(
                select(Document).where(
                    Document.query_id == task.query_id, Document.external_id.in_(wanted)
                )
            )
        }
    return [docs[d] for d in wanted if d in docs]


def load_task(db: Database, task_id: int) -> TaskView | None:
    """Replay one task and load its query and documents; None when it does not exist."""
    with db.read() as s:
        task = s.get(Task, task_id)
        if task is None:
            return None
        query = s.get(Query, task.query_id)
        collection = s.get(Collection, task.collection_id)
        rows = live_judgments(s, task_id)
        ids = list(task.doc_ids)
        docs = {
            d.external_id: DocView(d.external_id, d.title or "", d.text, d.html)
            for d in s.scalars(
                select(Document).where(
                    Document.query_id == task.query_id, Document.external_id.in_(ids)
                )
            )
        }
    assert query is not None
    return TaskView(
        task=task,
        query=query,
        collection_name=collection.name if collection else "",
        session=replay_task(task, rows),
        docs=docs,
        active_ms=sum(r.active_ms for r in rows),
    )


@dataclass(frozen=True, slots=True)
class Lookahead:
    """What may come after the pending question: the documents to preload and, per answer,
    the next question itself (for showing it the moment the key is pressed)."""

    docs: list[DocView]
    next: dict[str, dict[str, Any]]
    """Answer key -> the next question in the shape of the API's question body, reduced to what
    the page draws: ``seq``, ``pair`` (``left``/``right``: ``doc_id``, ``title``) or
    ``document``, ``allowed_outcomes``, ``challenger`` and ``progress``. Keys: the outcomes
    allowed now (topk) or ``"grade"`` (graded: the next document does not depend on the grade).
    An answer after which the task is done is left out (the page then waits for the server)."""


def _next_body(session: AnySession, titles: dict[str, str]) -> dict[str, Any] | None:
    """The page's view of ``session.pending`` (see :attr:`Lookahead.next`); None when done."""
    q = session.pending
    if q is None:
        return None
    p = session.progress()
    body: dict[str, Any] = {
        "seq": q.seq,
        "done": False,
        "progress": {
            "judgments": p.judgments,
            "estimated_remaining": math.ceil(p.expected_remaining - 1e-9),
            "expected_remaining": p.expected_remaining,
            "max_remaining": p.max_remaining,
            "done": False,
        },
    }
    if isinstance(q, PairQuestion):
        assert isinstance(session, TopKSession)  # a pair question comes from a top-k session
        challenger = session.pending_challenger
        body["pair"] = {
            side: {"doc_id": d, "title": titles.get(d, "")}
            for side, d in (("left", q.left), ("right", q.right))
        }
        body["allowed_outcomes"] = list(session.allowed_outcomes)
        body["challenger"] = (
            "left" if challenger == q.left else "right" if challenger == q.right else None
        )
    else:
        body["document"] = {"doc_id": q.doc_id, "title": titles.get(q.doc_id, "")}
    return body


def lookahead(db: Database, task_id: int, seq: int) -> Lookahead | None:
    """What the assessor may see after answering question ``seq``, for preloading.

    For a topk task: the next question after each answer the protocol accepts now (replayed
    hypothetically; nothing is stored). For a graded task: the next two documents (their order
    does not depend on the grades). ``docs`` leaves out the documents of the current question.
    None when ``seq`` is not the pending question (the page is stale).
    """
    with db.read() as s:
        task = s.get(Task, task_id)
        if task is None:
            return None
        rows = live_judgments(s, task_id)
        session = replay_task(task, rows)
        pending = session.pending
        if pending is None or pending.seq != seq:
            return None
        answers = [answer_of(r) for r in rows]
        upcoming: list[str] = []
        branches: dict[str, AnySession] = {}
        current: set[str]
        if isinstance(pending, PairQuestion):
            current = {pending.left, pending.right}
            for outcome in session.allowed_outcomes:
                after = _replay(task, [*answers, PairAnswer(pending.left, pending.right, outcome)])
                nxt = after.pending
                if isinstance(nxt, PairQuestion):
                    upcoming += [nxt.left, nxt.right]
                    branches[outcome] = after
        else:
            current = {pending.doc_id}
            hypothetical = list(answers)
            q: Any = pending
            for step in range(2):
                hypothetical.append(GradeAnswer(q.doc_id, 0))
                after = _replay(task, hypothetical)
                q = after.pending
                if q is None:
                    break
                if step == 0:
                    branches["grade"] = after
                upcoming.append(q.doc_id)
        wanted = list(dict.fromkeys(d for d in upcoming if d not in current))
        shown = {d for b in branches.values() for d in _pending_ids(b)}
        found = {
            d.external_id: d
            for d in s.scalars(
                select(Document).where(
                    Document.query_id == task.query_id,
                    Document.external_id.in_(sorted(set(wanted) | shown)),
                )
            )
        }
    titles = {d: doc.title or "" for d, doc in found.items()}
    docs = [
        DocView(d, found[d].title or "", found[d].text, found[d].html) for d in wanted if d in found
    ]
    nxt_bodies = {key: _next_body(b, titles) for key, b in branches.items()}
    return Lookahead(docs, {key: b for key, b in nxt_bodies.items() if b is not None})


def _pending_ids(session: AnySession) -> list[str]:
    q = session.pending
    if isinstance(q, PairQuestion):
        return [q.left, q.right]
    return [q.doc_id] if q is not None else []


def _replay(task: Task, answers: Sequence[Answer]) -> AnySession:
    return open_session(
        task.method,
        list(task.doc_ids),
        k=task.k,
        seed=int(task.seed),
        options=dict(task.options or {}),
        answers=answers,
    )


def top_list(view: TaskView) -> list[DocView] | None:
    """The finished top-k list, best first, with titles (None for graded or unfinished)."""
    if view.task.method != "topk" or not view.session.done:
        return None
    return [view.doc(d) for d in view.session.result().top]  # type: ignore[union-attr]


def grade_counts(view: TaskView) -> list[tuple[str, int]] | None:
    """(grade name, number of documents) for a finished graded task; None otherwise."""
    if view.task.method != "graded" or not view.session.done:
        return None
    grades = view.session.result().grades  # type: ignore[union-attr]
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
