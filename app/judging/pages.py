"""The assessor's judging pages: read-only views for the judging page, its done page and the
page's preloading (app/web/assess.py), with the same statements, replay, question body and
document cache as the REST judging loop, and only for the task's own assessor (an admin reads
tasks through the REST API).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.auth.tokens import Caller, Identity, caller_identity
from app.judging import routing
from app.judging.loop import (
    LOOP_CACHES,
    Payload,
    Session,
    answer_of,
    check_task_access,
    document_payloads,
    pending_ids,
    question_body,
    replay,
    replay_task,
    replayed_body,
    routes,
    session_after,
    uses_machine,
)
from app.judging.repository import JudgmentStore
from app.judging.service import next_question
from app.kernel.db import Database
from app.machine import service as machines
from labeling.protocol.topk import TopKSession
from labeling.protocol.types import GradeAnswer, PairAnswer, PairQuestion


@dataclass(frozen=True, slots=True)
class TaskPage:
    """What the judging page and the done page show about one of the caller's tasks."""

    task_id: int
    method: str
    k: int
    options: dict[str, Any]
    status: str
    collection_id: int
    query_title: str
    query_description: str
    question: Payload
    """The body of ``GET /api/v1/tasks/{id}/next``
    (:func:`app.judging.service.next_question`): ``done``, ``progress``, ``active_ms`` and the
    pending question."""
    result: Any
    """The protocol's result once the log is complete (``session.result()``), else None."""
    documents: dict[str, Payload]
    """Payloads of the documents of a finished top-k list (for their titles)."""

    @property
    def done(self) -> bool:
        return bool(self.question["done"])


def _own_task(store: JudgmentStore, who: Identity, task_id: int) -> Any:
    """The task row if ``who`` is its assessor: 404 if it does not exist, 403 otherwise."""
    task = store.task(task_id)
    check_task_access(task, who, task_id, judge=True)
    return task


def task_page(*, db: Database, user: Caller, task_id: int) -> TaskPage:
    """The caller's task replayed from its log, with its query's text and (as
    :func:`app.judging.service.next_question`) the pending question; 404 / 403 for a missing
    or foreign task."""
    with db.raw_read() as cursor:
        store = JudgmentStore(db, cursor)
        task = _own_task(store, caller_identity(db, cursor, user, writable=False), task_id)
    machine = uses_machine(task)
    if machine:
        # The machine first answers what it may (docs/machine-judges.md#the-service): the
        # page shows the question a person is to answer, and the cached session has the
        # machine.
        next_question(db=db, user=user, task_id=task_id)
    with db.raw_read() as cursor:
        store = JudgmentStore(db, cursor)
        task = _own_task(store, caller_identity(db, cursor, user, writable=False), task_id)
        replayed = replay(task, store.live_log(task_id))
        question = replayed_body(db, replayed, store)
        result = replayed.session.result() if replayed.session.done else None
        top = list(result.top) if result is not None and task.method == "topk" else []
        documents = document_payloads(db, replayed.task, top, store) if top else {}
        query = store.query_text(task.query_id)
    if result is None and not machine:
        LOOP_CACHES.of(db).sessions.put(task_id, replayed)  # warms the cache for the first submit
        if routes(replayed):  # after the read transaction: routing writes
            question = routing.gate(db, replayed, question)
    return TaskPage(
        task_id=task.id,
        method=task.method,
        k=task.k,
        options=dict(task.options or {}),
        status=task.status,
        collection_id=query.collection_id,
        query_title=query.title,
        query_description=query.description,
        question=question,
        result=result,
        documents=documents,
    )


def task_documents(
    *, db: Database, user: Caller, task_id: int, doc_ids: Sequence[str]
) -> tuple[str, list[Payload]]:
    """(query text, payloads of the task's documents among ``doc_ids`` in the order asked;
    ids not in the task are left out) for the caller's task; 404 / 403 as :func:`task_page`."""
    with db.raw_read() as cursor:
        store = JudgmentStore(db, cursor)
        task = _own_task(store, caller_identity(db, cursor, user, writable=False), task_id)
        pool = set(task.doc_ids)
        wanted = [d for d in dict.fromkeys(doc_ids) if d in pool]
        found = document_payloads(db, task, wanted, store) if wanted else {}
        title = store.query_text(task.query_id).title
    return title, [found[d] for d in wanted]


@dataclass(frozen=True, slots=True)
class Lookahead:
    """What may come after the pending question: the documents to preload and, per answer,
    the next question itself (for showing it the moment the key is pressed)."""

    docs: list[Payload]
    """Payloads of the documents that may be shown next, not those shown now."""
    next: dict[str, Payload]
    """Answer key -> the next question in the shape of the API's question body, reduced to what
    the page draws: ``seq``, ``pair`` (``left``/``right``: ``doc_id``, ``title``) or
    ``document``, ``allowed_outcomes``, ``challenger`` and ``progress``. Keys: the outcomes
    allowed now (topk) or ``"grade"`` (graded: the next document does not depend on the grade).
    An answer after which the task is done is left out (the page then waits for the server)."""


def lookahead(
    *, db: Database, user: Caller, task_id: int, seq: int
) -> tuple[str, Lookahead | None]:
    """(query text, what the assessor may see after answering question ``seq``) for
    preloading; 404 / 403 as :func:`task_page`.

    For a topk task: the next question after each answer the protocol accepts now (replayed
    hypothetically; nothing is stored). For a graded task: the next two documents (their order
    does not depend on the grades). The lookahead is None when ``seq`` is not the pending
    question (the page is stale)."""
    with db.raw_read() as cursor:
        store = JudgmentStore(db, cursor)
        task = _own_task(store, caller_identity(db, cursor, user, writable=False), task_id)
        title = store.query_text(task.query_id).title
        rows = store.live_log(task_id)
        # A task's machine answers after each answer too: the next person's question is the
        # one after the machine's (none is predicted while its calibration is not frozen).
        machine = (
            machines.task_opinion(db, cursor, task, freeze=False) if uses_machine(task) else None
        )
        if uses_machine(task) and machine is None:
            return title, Lookahead([], {})
        session = replay_task(task, rows, machine)
        pending = session.pending
        if pending is None or pending.seq != seq:
            return title, None
        answers = [answer_of(r) for r in rows]
        upcoming: list[str] = []
        branches: dict[str, Any] = {}
        current: set[str]
        if isinstance(pending, PairQuestion):
            assert isinstance(session, TopKSession)  # a pair question comes from a top-k session
            current = {pending.left, pending.right}
            for outcome in session.allowed_outcomes:
                answer = PairAnswer(pending.left, pending.right, outcome)
                after = session_after(task, [*answers, answer], machine)
                if isinstance(after, TopKSession):
                    after.let_machine_answer()  # in memory: nothing is stored
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
                after = session_after(task, hypothetical)
                q = after.pending
                if q is None:
                    break
                if step == 0:
                    branches["grade"] = after
                upcoming.append(q.doc_id)
        wanted = list(dict.fromkeys(d for d in upcoming if d not in current))
        shown = {d for b in branches.values() for d in pending_ids(b)}
        found = document_payloads(db, task, sorted(set(wanted) | shown), store)
    titles = {d: str(p.get("title") or "") for d, p in found.items()}
    nxt_bodies = {key: _next_body(task, b, titles) for key, b in branches.items()}
    return title, Lookahead(
        [found[d] for d in wanted], {key: b for key, b in nxt_bodies.items() if b is not None}
    )


def _next_body(task: Any, session: Session, titles: dict[str, str]) -> Payload | None:
    """The page's view of ``session.pending`` (see :attr:`Lookahead.next`): the question body
    (:func:`app.judging.loop.question_body`) with the documents as ``{doc_id, title}``; None
    when done."""
    if session.pending is None:
        return None

    def refs(doc_ids: Sequence[str]) -> dict[str, Payload]:
        return {d: {"doc_id": d, "title": titles.get(d, "")} for d in doc_ids}

    out = question_body(task, session, 0, refs)
    for key in ("task_id", "method", "active_ms"):
        del out[key]
    return out
