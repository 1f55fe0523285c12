"""The judging loop's building blocks, shared by its use cases (:mod:`app.judging.service`,
:mod:`app.judging.pages`) and the second opinions that route its questions: the session
replayed from a task's log, the on-loop store (the replayed sessions and the documents'
payloads, in process), the access check and the one builder of a question's body.

Document payloads (title, text, html: what a question shows) are cached per (task id, task
``created_at``, doc id). Documents never change while a task that references them exists:
there is no document update path, deleting a collection deletes its tasks, and a reused
SQLite rowid comes with a new ``created_at``. On the first miss the task's whole pool is read
(up to :data:`PREFETCH_MAX` documents), so a task reads its documents once per process
instead of once per question.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from app.auth.tokens import Identity
from app.judging.repository import JudgmentStore, LogRow, LogVersion, log_version
from app.kernel.caches import LRU, Slot
from app.kernel.db import Database
from app.kernel.errors import Conflict, Forbidden, NotFound
from app.kernel.models import User
from labeling.protocol.session import open_session
from labeling.protocol.spec import LlmSource, parse_machine
from labeling.protocol.topk import TopKSession
from labeling.protocol.types import (
    BrokenAnswer,
    GradeAnswer,
    GradeQuestion,
    LogEntry,
    MachineAnswer,
    PairAnswer,
    PairQuestion,
    Progress,
)
from labeling.strategies.assist import Machine

# --------------------------------------------------------------------------- documents

Payload = dict[str, Any]

#: ``fetch(query_id, doc_ids)``: the stored documents found, by external id.
Fetch = Callable[[int, Sequence[str]], dict[str, Any]]

#: Pools up to this size are read whole on the first miss.
PREFETCH_MAX = 256


def document_payload(doc: Any, doc_id: str) -> Payload:
    """A document as the client sees it; absent text/html are left out (not null)."""
    if doc is None:  # cannot happen for a consistent database; never fail the loop for it
        return {"doc_id": doc_id, "title": doc_id}
    out: Payload = {"doc_id": doc_id, "title": doc.title}
    if doc.text is not None:
        out["text"] = doc.text
    if doc.html is not None:
        out["html"] = doc.html
    return out


class DocumentCache:
    """Payloads of the documents of tasks (see the module docstring)."""

    def __init__(self, size: int = 4096) -> None:
        self._lru = LRU(size)

    def has(self, task: Any, doc_ids: Sequence[str]) -> bool:
        """Whether the payloads of all ``doc_ids`` of ``task`` are cached (no fetch needed)."""
        return all((task.id, task.created_at, d) in self._lru for d in doc_ids)

    def payloads(self, task: Any, doc_ids: Sequence[str], fetch: Fetch) -> dict[str, Payload]:
        """Payloads of ``doc_ids`` of ``task`` (anything with ``id``, ``created_at``,
        ``query_id`` and ``doc_ids``); what is not cached is read with ``fetch``. Each
        payload is a copy: callers may decorate it."""
        out: dict[str, Payload] = {}
        missing: list[str] = []
        for doc_id in doc_ids:
            cached = self._lru.get((task.id, task.created_at, doc_id))
            if cached is None:
                missing.append(doc_id)
            else:
                out[doc_id] = dict(cached)
        if not missing:
            return out
        pool = list(task.doc_ids or ())
        if len(pool) <= PREFETCH_MAX:
            key = (task.id, task.created_at)
            rest = (d for d in pool if (*key, d) not in self._lru)
            missing = list(dict.fromkeys([*missing, *rest]))
        found = fetch(task.query_id, missing)
        for doc_id in missing:
            doc = found.get(doc_id)
            payload = document_payload(doc, doc_id)
            if doc_id in doc_ids:
                out[doc_id] = payload
            if doc is not None:
                self._lru.put((task.id, task.created_at, doc_id), dict(payload))
        return out


# --------------------------------------------------------------------------- replay


class Session(Protocol):
    """What the judging loop uses of a protocol session
    (:func:`labeling.protocol.session.open_session`:
    a :class:`~labeling.protocol.topk.TopKSession` or a
    :class:`~labeling.protocol.graded.GradedSession`).
    A top-k session's own questions (the Step-2 challenger, a deliberate repeat) are asked of
    a :class:`~labeling.protocol.topk.TopKSession` itself."""

    @property
    def pending(self) -> PairQuestion | GradeQuestion | None:
        """The question to show, or None when done."""

    @property
    def done(self) -> bool:
        """Whether the log is complete."""

    @property
    def answers(self) -> Sequence[LogEntry]:
        """The answers so far, in ``seq`` order (a person's or a machine's)."""

    @property
    def allowed_outcomes(self) -> Sequence[str] | Sequence[int]:
        """The answers the pending question accepts."""

    def submit(self, answer: LogEntry) -> None:
        """Take ``answer`` to the pending question (unchanged if it raises)."""

    def progress(self) -> Progress:
        """Judgments so far and remaining questions."""

    def result(self) -> Any:
        """The ground truth once the log is complete."""


def answer_of(row: LogRow) -> LogEntry:
    """The protocol answer recorded in a judgment row (a machine's:
    :class:`~labeling.protocol.types.MachineAnswer`, taken as given on replay)."""
    if row.source == "machine":
        return MachineAnswer(
            row.left_doc or "",
            row.right_doc or "",
            row.outcome,  # type: ignore[arg-type]  # the provenance CHECK: left or right
            float(row.probability if row.probability is not None else 0.0),
            row.machine_version or "",
        )
    if row.outcome == "broken":
        return BrokenAnswer(row.doc_id or "", row.reason or "", row.left_doc, row.right_doc)
    if row.doc_id is not None:
        return GradeAnswer(row.doc_id, int(row.grade if row.grade is not None else -1))
    return PairAnswer(row.left_doc or "", row.right_doc or "", row.outcome)  # type: ignore[arg-type]


def replay_task(task: Any, rows: Sequence[LogRow], machine: Machine | None = None) -> Session:
    """Rebuild the protocol session of ``task`` (an ORM Task or a task row) from its live
    log. Logged machine answers replay as given; ``machine`` (the judging loop's, which lets
    it answer past the log's end) is needed only to derive new ones."""
    session: Session = open_session(
        task.method,
        task.doc_ids,
        k=task.k,
        seed=task.seed,
        options=task.options,
        answers=[answer_of(r) for r in rows],
        machine=machine,
    )
    return session


@dataclass(frozen=True, slots=True)
class TaskConfig:
    """What never changes in a task: its protocol config (status and assessor may)."""

    id: int
    collection_id: int
    query_id: int
    method: str
    k: int
    seed: int
    options: Any
    doc_ids: Any
    created_at: Any


@dataclass(slots=True)
class Replayed:
    """A replayed session and the log version it was built from."""

    task: TaskConfig
    session: Session
    version: LogVersion
    active_ms: int

    def matches(self, created_at: Any, version: LogVersion) -> bool:
        """True if this is the session of the task incarnation ``created_at`` at ``version``."""
        return self.task.created_at == created_at and self.version == version


def replay(task: Any, rows: Sequence[LogRow], machine: Machine | None = None) -> Replayed:
    active_ms = sum(r.active_ms for r in rows)
    session = replay_task(task, rows, machine)
    return Replayed(task_config(task), session, log_version(rows), active_ms)


# --------------------------------------------------------------------------- caches


class LoopCaches:
    """The judging loop's caches of one :class:`Database` (:data:`LOOP_CACHES`)."""

    def __init__(self) -> None:
        #: Replayed sessions by task id (one entry per recently judged task).
        self.sessions = LRU(256)
        self.documents = DocumentCache()


#: The judging loop's caches of every :class:`Database`.
LOOP_CACHES: Slot[LoopCaches] = Slot("judging loop", lambda db: LoopCaches())


def clear_caches(db: Database) -> None:
    """Forget cached sessions and documents (tests; never needed for correctness)."""
    LOOP_CACHES.clear(db)


# --------------------------------------------------------------------------- question bodies


def uses_machine(task: Any) -> bool:
    """Whether a task (a row, an ORM Task or a :class:`TaskConfig`) has a machine judge
    (option ``machine``, docs/machine-judges.md#the-service): one dict lookup."""
    return bool(task.options.get("machine"))


def prepared_by_job(task: Any) -> bool:
    """Whether a task's machine opinions are prepared by a job while it is judged (``llm``),
    rather than once at creation (``bm25``, ``model:<id>``)."""
    machine = parse_machine(task.options.get("machine"))
    return machine is not None and isinstance(machine.source, LlmSource)


def routes(r: Replayed) -> bool:
    """Whether the pending question of ``r`` is a repeat its task routes to a second assessor
    (docs/noise.md#routing-re-asks-to-a-second-assessor). One dict lookup for a task that
    routes nothing, so the hot path of every other task stays as it was."""
    return (
        bool(r.task.options.get("second_assessor"))
        and isinstance(r.session, TopKSession)
        and r.session.pending_is_repeat
    )


def document_payloads(
    db: Database, task: Any, doc_ids: Sequence[str], store: JudgmentStore | None = None
) -> dict[str, Payload]:
    """Payloads of the task's documents ``doc_ids``, from the document cache; what is not
    cached is read on ``store`` (or in a read transaction of its own)."""

    def fetch(query_id: int, ids: Sequence[str]) -> dict[str, Any]:
        if store is not None:
            return store.documents(query_id, ids)
        with db.raw_read() as cursor:
            return JudgmentStore(db, cursor).documents(query_id, ids)

    return LOOP_CACHES.of(db).documents.payloads(task, doc_ids, fetch)


def question_body(
    task: Any,
    session: Session,
    active_ms: int,
    documents: Callable[[Sequence[str]], dict[str, Payload]],
) -> Payload:
    """The body of ``GET /tasks/{id}/next`` for ``session`` (the one builder of a question's
    body; docs/rest-api.md#the-judging-loop); ``documents(ids)`` gives the document payloads.

    ``progress.estimated_remaining`` is ``ceil(expected_remaining)``, 0 once done.
    ``challenger`` (topk) is the side, ``"left"`` or ``"right"``, showing Step 2's new
    document (the stream item "not relevant" refers to; ``TopKSession.pending_challenger``),
    null otherwise."""
    p = session.progress()
    body: Payload = {
        "task_id": task.id,
        "method": task.method,
        "done": bool(session.done),
        "progress": {
            "judgments": p.judgments,
            "estimated_remaining": math.ceil(p.expected_remaining - 1e-9) if not p.done else 0,
            "expected_remaining": p.expected_remaining,
            "max_remaining": p.max_remaining,
            "done": p.done,
        },
        "active_ms": active_ms,
    }
    q = session.pending
    if isinstance(q, PairQuestion):
        docs = documents([q.left, q.right])
        challenger = session.pending_challenger if isinstance(session, TopKSession) else None
        body["seq"] = q.seq
        body["pair"] = {"left": docs[q.left], "right": docs[q.right]}
        body["allowed_outcomes"] = list(session.allowed_outcomes)
        body["challenger"] = (
            "left" if challenger == q.left else "right" if challenger == q.right else None
        )
    elif isinstance(q, GradeQuestion):
        body["seq"] = q.seq
        body["document"] = documents([q.doc_id])[q.doc_id]
    return body


def replayed_body(db: Database, r: Replayed, store: JudgmentStore | None = None) -> Payload:
    """The question body of ``r`` (:func:`question_body`), not routed to a second assessor
    (:mod:`app.judging.routing` decides that). Documents come from the cache, else
    are read on ``store`` (or in a read transaction of their own)."""

    def documents(doc_ids: Sequence[str]) -> dict[str, Payload]:
        return document_payloads(db, r.task, doc_ids, store)

    return question_body(r.task, r.session, r.active_ms, documents)


def documents_as_refs(body: Payload) -> Payload:
    """``body`` with its documents as ``{doc_id, title}`` (no text or html): the answer a
    client asks for with ``"documents": "refs"`` when it renders documents itself (the judging
    page, from /tasks/{id}/frames), which saves it reading and parsing both texts on every
    answer."""
    out = dict(body)
    if "pair" in out:
        out["pair"] = {side: _ref(doc) for side, doc in out["pair"].items()}
    if "document" in out:
        out["document"] = _ref(out["document"])
    return out


def _ref(doc: Payload) -> Payload:
    return {"doc_id": doc["doc_id"], "title": doc.get("title", "")}


# --------------------------------------------------------------------------- checks


def check_task_access(
    row: Any, user: User | Identity, task_id: int, *, judge: bool = False
) -> None:
    """Raise unless ``user`` may act on the task ``row`` (an ORM Task or a Core row with
    ``assessor_id``; ``None`` when missing → 404): its assessor, or an admin; with
    ``judge=True`` only its assessor (403), because a judgment row does not record who gave
    it (an admin's answer would pass as the assessor's)."""
    if row is None:
        raise NotFound(f"no task with id {task_id}")
    if row.assessor_id == user.id:
        return
    if user.role != "admin":
        raise Forbidden(f"task {task_id} belongs to another assessor")
    if judge:
        raise Forbidden(f"task {task_id} belongs to another assessor; admins can read it only")


def authorise(task: Any, who: Identity, task_id: int, *, judge: bool) -> None:
    """404 / 403 unless ``who`` may act on ``task`` (a row, or None if missing); with
    ``judge`` also 409 for a cancelled task."""
    check_task_access(task, who, task_id, judge=judge)
    if judge and task.status == "cancelled":
        raise Conflict(f"task {task_id} is cancelled")


def comment_of(data: dict[str, Any]) -> str | None:
    """The request's comment, trimmed; None when absent or blank."""
    comment = data.get("comment")
    if comment is None:
        return None
    comment = str(comment).strip()
    return comment or None


def task_config(task: Any) -> TaskConfig:
    return TaskConfig(
        task.id,
        task.collection_id,
        task.query_id,
        task.method,
        task.k,
        task.seed,
        task.options,
        task.doc_ids,
        task.created_at,
    )


def session_after(
    task: Any, answers: Sequence[LogEntry], machine: Machine | None = None
) -> Session:
    """The session of ``task`` after ``answers`` (none of them stored), with ``machine``."""
    session: Session = open_session(
        task.method,
        task.doc_ids,
        k=task.k,
        seed=task.seed,
        options=task.options,
        answers=answers,
        machine=machine,
    )
    return session


def pending_ids(session: Session) -> list[str]:
    q = session.pending
    if isinstance(q, PairQuestion):
        return [q.left, q.right]
    return [q.doc_id] if q is not None else []
