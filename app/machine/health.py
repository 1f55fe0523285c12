"""When the machine fails (docs/machine-judges.md#when-the-machine-fails): the calls of each
task's opinion jobs counted with the last error, and the collection's machine alarms.

* :func:`record_task_calls` (the ``llm`` opinion job, after each run): adds the job's calls
  (:class:`app.machine.llm.CallReport`: sent, failed, timed out, malformed) to the task's
  counters (``task_machine``) with the last error. When **every call the job sent gave no
  opinion** (failed, timed out or malformed; or the judge could not be made at all, e.g. no
  model configured in the worker's environment), an alarm of kind :data:`CALLS_FAILING` is
  raised on the task, its evidence the counts and the last error; the first call that
  answers again clears it. While it is open, the task's jobs only probe (one person question
  ahead instead of :data:`app.judging.opinions.LOOKAHEAD`), so a dead endpoint costs a few
  calls per answer, not dozens. People are asked meanwhile, as for any pair without an
  opinion: nothing is lost, nothing waits.
* ``machine_failure_alarm`` holds the alarms about a collection's machine's calls (the
  audits' alarms are :mod:`app.machine.alarms`'; the pages and the CLI show both):
  :func:`raise_alarm`, :func:`clear_alarms` (kind, task or the whole collection, evidence
  text, when raised, last seen and cleared); at most one open alarm per
  (collection, task, kind). :func:`open_alarms` lists them for the pages, the progress API and
  the CLI.

Texts kept here never hold a URL, a key or a model's reply (only its length): the error texts
come from :mod:`app.machine.llm_http`, which names what went wrong and nothing more.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.kernel.db import Database
from app.kernel.models import MachineFailureAlarm, Task, TaskMachine, utcnow
from app.machine.llm import CallReport

__all__ = [
    "CALLS_FAILING",
    "clear_alarms",
    "is_failing",
    "open_alarms",
    "raise_alarm",
    "record_task_calls",
    "task_calls",
]

#: The alarm of a task whose opinion job got no opinion from any call it made.
CALLS_FAILING = "calls_failing"
#: Longest evidence kept (characters).
MAX_EVIDENCE = 2000


def raise_alarm(
    s: Session, collection_id: int, task_id: int | None, kind: str, evidence: str, now: datetime
) -> None:
    """Open an alarm of ``kind`` on the task (None: the collection), or refresh the open one
    (its evidence and ``seen_at``)."""
    open_one = s.scalar(
        select(MachineFailureAlarm).where(
            MachineFailureAlarm.collection_id == collection_id,
            MachineFailureAlarm.task_id.is_(None)
            if task_id is None
            else MachineFailureAlarm.task_id == task_id,
            MachineFailureAlarm.kind == kind,
            MachineFailureAlarm.cleared_at.is_(None),
        )
    )
    if open_one is not None:
        open_one.evidence = evidence[:MAX_EVIDENCE]
        open_one.seen_at = now
        return
    s.add(
        MachineFailureAlarm(
            collection_id=collection_id,
            task_id=task_id,
            kind=kind,
            evidence=evidence[:MAX_EVIDENCE],
            raised_at=now,
            seen_at=now,
        )
    )


def clear_alarms(
    s: Session, collection_id: int, task_id: int | None, kind: str, now: datetime
) -> None:
    """Clear the open alarms of ``kind`` on the task (None: the collection's own)."""
    s.execute(
        update(MachineFailureAlarm)
        .where(
            MachineFailureAlarm.collection_id == collection_id,
            MachineFailureAlarm.task_id.is_(None)
            if task_id is None
            else MachineFailureAlarm.task_id == task_id,
            MachineFailureAlarm.kind == kind,
            MachineFailureAlarm.cleared_at.is_(None),
        )
        .values(cleared_at=now)
    )


def _evidence(task_id: int, report: CallReport) -> str:
    return (
        f"task {task_id}: {report.no_opinion} of {report.sent} machine calls gave no opinion "
        f"({report.failed} failed, {report.timed_out} of them timed out; {report.malformed} "
        f"malformed); last error: {report.last_error or 'none given'}. People are asked "
        "instead."
    )


def record_task_calls(
    db: Database, task_id: int, report: CallReport | None, *, error: str | None = None
) -> bool:
    """Add an opinion job's calls to task ``task_id``'s counters and raise or clear its
    :data:`CALLS_FAILING` alarm (module docstring). ``report`` None with ``error``: the judge
    could not be made (counted as one failed call). Whether an alarm is open afterwards."""
    if report is None:
        report = CallReport(sent=1, failed=1, last_error=error or "the judge could not be made")
    if report.sent == 0:
        return False
    now = utcnow()
    failing = report.answered == 0 and report.no_opinion > 0
    with db.write() as s:
        collection_id = s.scalar(select(Task.collection_id).where(Task.id == task_id))
        if collection_id is None:
            return False
        table = TaskMachine.__table__
        values: dict[str, Any] = {
            "calls": table.c.calls + report.sent,
            "calls_failed": table.c.calls_failed + report.no_opinion,
            "calls_timed_out": table.c.calls_timed_out + report.timed_out,
        }
        if report.last_error:
            values.update(last_error=report.last_error[:300], last_error_at=now)
        s.execute(update(TaskMachine).where(TaskMachine.task_id == task_id).values(**values))
        if failing:
            raise_alarm(s, collection_id, task_id, CALLS_FAILING, _evidence(task_id, report), now)
        elif report.answered:
            clear_alarms(s, collection_id, task_id, CALLS_FAILING, now)
    return failing


def is_failing(db: Database, task_id: int) -> bool:
    """Whether task ``task_id`` has an open :data:`CALLS_FAILING` alarm."""
    with db.read() as s:
        found = s.scalar(
            select(MachineFailureAlarm.id).where(
                MachineFailureAlarm.task_id == task_id,
                MachineFailureAlarm.kind == CALLS_FAILING,
                MachineFailureAlarm.cleared_at.is_(None),
            )
        )
    return found is not None


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def open_alarms(db: Database, collection_id: int | None = None) -> list[dict[str, Any]]:
    """The open machine alarms of a collection (every collection's when None), newest
    first: id, collection, task, kind, evidence, raised and last seen."""
    query = select(MachineFailureAlarm).where(MachineFailureAlarm.cleared_at.is_(None))
    if collection_id is not None:
        query = query.where(MachineFailureAlarm.collection_id == collection_id)
    with db.read() as s:
        rows = s.scalars(
            query.order_by(MachineFailureAlarm.raised_at.desc(), MachineFailureAlarm.id.desc())
        )
        return [
            {
                "id": a.id,
                "collection_id": a.collection_id,
                "task_id": a.task_id,
                "kind": a.kind,
                "evidence": a.evidence,
                "raised_at": _iso(a.raised_at),
                "seen_at": _iso(a.seen_at),
            }
            for a in rows
        ]


def task_calls(s: Session, collection_id: int) -> dict[int, dict[str, Any]]:
    """Per task of the collection with a machine: its calls, those without an opinion, those
    timed out, and the last error with its time."""
    rows = s.execute(
        select(
            TaskMachine.task_id,
            TaskMachine.calls,
            TaskMachine.calls_failed,
            TaskMachine.calls_timed_out,
            TaskMachine.last_error,
            TaskMachine.last_error_at,
        )
        .join(Task, Task.id == TaskMachine.task_id)
        .where(Task.collection_id == collection_id)
    )
    return {
        task_id: {
            "calls": calls,
            "failed": failed,
            "timed_out": timed_out,
            "last_error": error,
            "last_error_at": _iso(at),
        }
        for task_id, calls, failed, timed_out, error, at in rows
    }
