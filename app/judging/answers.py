"""**The one way an answer becomes a judgment**: :func:`record_answer`, called by the judging
loop's submit (:func:`app.judging.service.submit_judgment`) and by a second assessor's answer
(:func:`app.second_opinions.service.answer`), inside the write transaction that holds the
task's row lock. The session takes the answer (which validates it), the judgment row is
stored, the task's machine answers what it may next, and the task's status follows.

(The Postgres fast path, :func:`app.judging.service.submit_on_loop`, stores the same row in
one statement for the one case where none of the rest applies: a fresh answer to a task
without machine or routing, and falls back to :func:`app.judging.service.submit_judgment`
otherwise.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.judging.loop import Replayed, prepared_by_job
from app.judging.repository import JudgmentStore
from app.kernel.errors import Conflict
from app.machine import alarms
from app.machine import service as machines
from labeling.errors import Finished, WrongQuestion
from labeling.protocol.topk import TopKSession
from labeling.protocol.types import Answer
from labeling.strategies.assist import AssistStrategy


def record_answer(
    store: JudgmentStore,
    r: Replayed,
    seq: int,
    answer: Answer,
    *,
    status: str,
    active_ms: int,
    now: Any,
    comment: str | None,
    conflict: Callable[[str], Conflict],
    answered_by: int | None = None,
) -> int | None:
    """Record ``answer`` to question ``seq`` of ``r``'s task (in ``status`` before it): the
    session takes it (a wrong or finished question is ``conflict(message)``, a 409; an answer
    the question does not accept raises :class:`labeling.errors.InvalidAnswer`, the session
    unchanged), the judgment is stored (``answered_by``: who gave it, when not the task's
    assessor), the machine answers what it may up to the next person's question (a task with
    a machine; docs/machine-judges.md#the-service) and the status follows (pending → active,
    → done). The judgment's id, or None when a live judgment ``seq`` exists already (the
    session is then ahead of the log: the caller replays)."""
    audited = _audit_count(r.session)
    try:
        r.session.submit(answer)  # validates; unchanged if it raises
    except (WrongQuestion, Finished) as exc:
        raise conflict(str(exc)) from exc
    inserted = store.insert(
        r.task.id, seq, answer, active_ms, now, comment, answered_by=answered_by
    )
    if inserted is None:
        return None
    r.version = (r.version[0] + 1, inserted)
    _store_audits(store, r, audited, inserted, now)
    machine_answers(store, r, now)
    change = status_change(status, bool(r.session.done))
    if change:
        store.mark(r.task.id, change, now)
    return inserted


def machine_answers(store: JudgmentStore, r: Replayed, now: Any) -> int:
    """Let ``r``'s machine answer every question it may from the pending one on
    (:meth:`labeling.protocol.topk.TopKSession.let_machine_answer`) and store each answer as
    a judgment with source ``machine``, in ``store``'s write transaction; ``r.version``
    follows. How many were stored (0 without a machine). A conflict on the live
    ``(task, seq)`` index (never under the row lock) is a 409 and the transaction rolls
    back."""
    session = r.session
    if not isinstance(session, TopKSession) or session.machine is None:
        return 0
    judge = machines.machine_judge(session)
    if judge is not None and alarms.stopped(store.db, store.cursor, r.task.collection_id, judge):
        return 0  # the audits showed the machine worse than it claims: people answer
    if prepared_by_job(r.task):
        # Opinions a job stored since the session was built are used from now on.
        machines.refresh_opinions(store.db, store.cursor, r.task.id, session.machine)
    start = len(session.answers)
    new = session.let_machine_answer()
    newest = r.version[1]
    for i, answer in enumerate(new):
        stored = store.insert(r.task.id, start + i, answer, 0, now)
        if stored is None:
            raise Conflict(f"question {start + i} was answered concurrently")
        newest = stored
    r.version = (r.version[0] + len(new), newest)
    return len(new)


def _audit_count(session: Any) -> int:
    """How many people's answers the session's assist rule has recorded as evidence (0
    without one)."""
    state = getattr(session, "state", None)
    return len(state.evidence_records) if isinstance(state, AssistStrategy) else 0


def _store_audits(
    store: JudgmentStore, r: Replayed, before: int, judgment_id: int, now: Any
) -> None:
    """Store what a person's answer (judgment ``judgment_id``) tells about the machine (its
    stratum's evidence, and the audit if it was one), and raise
    the study's alarm when its test rejects the machine (:func:`app.machine.alarms
    .record_audits`), in the answer's transaction."""
    state = getattr(r.session, "state", None)
    judge = machines.machine_judge(r.session)
    if not isinstance(state, AssistStrategy) or judge is None:
        return
    new = state.evidence_records[before:]
    if new:
        alarms.record_audits(store.db, store.cursor, r.task, judge, judgment_id, new, now)


def status_change(status: str, done: bool) -> str:
    """The :data:`app.judging.repository.MARK` change after judgments were stored on a task
    in ``status`` ("" for none)."""
    change = "active" if status == "pending" else ""
    if done:
        change = "active+done" if change else "done"
    return change
