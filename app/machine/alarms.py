"""Audits that act (docs/machine-judges.md#audits-that-act): the assist rule's audits stored
per collection and judge, the sequential test over them
(:class:`labeling.machine.trust.AuditMonitor`), and the alarm that stops the machine on the
collection until an admin resumes it.

* **In the judging loop** (its write transaction, raw cursor): :func:`record_audits` stores
  the audits a person's answer gave (the session's ``audit_records``) and raises the alarm
  when the test over the study's live audits since the last resume rejects the machine's
  claims; :func:`stopped` tells :func:`app.judging.service` not to let the machine answer;
  :func:`study_monitor` starts a task's session test from the other tasks' audits.
* **For the admin**: :func:`collection_alarms` (``GET /api/v1/admin/collections/{id}/machine/
  alarms``, the progress page and ``heapjudge admin progress``) and :func:`resume_alarm`
  (``POST .../alarms/{alarm_id}/resume``, ``heapjudge admin machine resume``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Table, and_, bindparam, func, insert, select, update

from app.kernel.caches import Slot
from app.kernel.db import Database
from app.kernel.errors import Conflict, NotFound
from app.kernel.models import (
    Collection,
    Judgment,
    MachineAlarm,
    MachineAudit,
    TaskMachine,
    utcnow,
)
from app.kernel.prepared import Prepared, native
from labeling.machine.trust import ALARM_ALPHA, N_STRATA, AuditMonitor, StratumEvidence

__all__ = [
    "collection_alarms",
    "collection_audits",
    "record_audits",
    "resume_alarm",
    "stopped",
    "study_monitor",
    "study_strata",
    "task_audits",
]

A = MachineAudit.__table__
L = MachineAlarm.__table__
J = Judgment.__table__
assert isinstance(A, Table) and isinstance(L, Table)

#: The study's live audits after the last resumed alarm (by judgment id), in order.
_SINCE = (
    select(func.coalesce(func.max(L.c.last_judgment_id), 0))
    .where(
        L.c.collection_id == bindparam("collection_id"),
        L.c.judge == bindparam("judge"),
        L.c.resumed_at.is_not(None),
    )
    .scalar_subquery()
)
AUDITS = (
    select(
        A.c.judgment_id,
        native(A.c.claimed).label("claimed"),
        A.c.wrong,
        A.c.task_id,
        A.c.stratum,
        A.c.tested,
    )
    .join(J, and_(J.c.id == A.c.judgment_id, J.c.undone.is_(False)))
    .where(
        A.c.collection_id == bindparam("collection_id"),
        A.c.judge == bindparam("judge"),
        A.c.judgment_id > _SINCE,
    )
    .order_by(A.c.judgment_id)
)
ACTIVE = select(L.c.id).where(
    L.c.collection_id == bindparam("collection_id"),
    L.c.judge == bindparam("judge"),
    L.c.resumed_at.is_(None),
)
INSERT_AUDIT = insert(A).values(
    judgment_id=bindparam("judgment_id"),
    task_id=bindparam("task_id"),
    collection_id=bindparam("collection_id"),
    judge=bindparam("judge"),
    claimed=bindparam("claimed"),
    wrong=bindparam("wrong"),
    stratum=bindparam("stratum"),
    tested=bindparam("tested"),
    created_at=bindparam("now"),
)
INSERT_ALARM = insert(L).values(
    collection_id=bindparam("collection_id"),
    judge=bindparam("judge"),
    task_id=bindparam("task_id"),
    audits=bindparam("audits"),
    agree=bindparam("agree"),
    claimed_wrong=bindparam("claimed_wrong"),
    log_ratio=bindparam("log_ratio"),
    last_judgment_id=bindparam("last_judgment_id"),
    raised_at=bindparam("now"),
)


class _Statements:
    def __init__(self, db: Database) -> None:
        dialect = db.engine.dialect
        self.audits = Prepared(AUDITS, dialect)
        self.active = Prepared(ACTIVE, dialect)
        self.insert_audit = Prepared(INSERT_AUDIT, dialect)
        self.insert_alarm = Prepared(INSERT_ALARM, dialect)


_STATEMENTS: Slot[_Statements] = Slot("machine alarm statements", _Statements)


def _study(collection_id: int, judge: str) -> dict[str, Any]:
    return {"collection_id": collection_id, "judge": judge}


def stopped(db: Database, cursor: Any, collection_id: int, judge: str) -> bool:
    """Whether an alarm stops ``judge`` on the collection (not resumed)."""
    sql = _STATEMENTS.of(db)
    return bool(sql.active.rows(cursor, _study(collection_id, judge)))


def study_monitor(
    db: Database, cursor: Any, collection_id: int, judge: str, task_id: int
) -> AuditMonitor:
    """The audit test over the study's live audits since the last resume, of tasks other than
    ``task_id`` (the task's own are replayed by its session)."""
    monitor = AuditMonitor()
    for row in _STATEMENTS.of(db).audits.rows(cursor, _study(collection_id, judge)):
        if row.task_id != task_id and row.tested:
            monitor.record(float(row.claimed), bool(row.wrong))
    return monitor


def study_strata(
    db: Database, cursor: Any, collection_id: int, judge: str, task_id: int
) -> StratumEvidence:
    """The evidence of the assist rule's bound per stratum: people's live answers of tasks
    other than ``task_id`` (its own are replayed by its session) since the last resume, by
    the stratum they were asked in (rows without one are audits stored before strata)."""
    evidence = StratumEvidence()
    for row in _STATEMENTS.of(db).audits.rows(cursor, _study(collection_id, judge)):
        if row.task_id != task_id and row.stratum is not None and 0 <= row.stratum < N_STRATA:
            evidence.add(int(row.stratum), bool(row.wrong))
    return evidence


def record_audits(
    db: Database,
    cursor: Any,
    task: Any,
    judge: str,
    judgment_id: int,
    records: Sequence[tuple[int | None, bool, float | None]],
    now: datetime,
) -> bool:
    """Store what a person's answer (judgment ``judgment_id``) tells about the machine, at
    most one row: ``(stratum, the person contradicted the machine, the claimed P(wrong) when
    the audit took the question from it, else None)`` (the session's ``evidence_records``),
    and raise the alarm if the study's test over its audits now rejects the machine; whether
    an alarm was raised."""
    sql = _STATEMENTS.of(db)
    study = _study(task.collection_id, judge)
    tested = False
    for stratum, wrong, claimed in records[:1]:
        tested = claimed is not None
        values = {**study, "judgment_id": judgment_id, "task_id": task.id, "now": now}
        sql.insert_audit.execute(
            cursor,
            {
                **values,
                "claimed": 1.0 if claimed is None else claimed,
                "wrong": wrong,
                "stratum": stratum,
                "tested": tested,
            },
        )
    if not tested or sql.active.rows(cursor, study):
        return False
    rows = [r for r in sql.audits.rows(cursor, study) if r.tested]
    monitor = AuditMonitor()
    for row in rows:
        monitor.record(float(row.claimed), bool(row.wrong))
    if not monitor.alarmed:
        return False
    sql.insert_alarm.execute(
        cursor,
        {
            **study,
            "task_id": task.id,
            "audits": monitor.audits,
            "agree": monitor.agree,
            "claimed_wrong": monitor.claimed / monitor.audits,
            "log_ratio": monitor.log_ratio,
            "last_judgment_id": max(int(r.judgment_id) for r in rows),
            "now": now,
        },
    )
    return True


def collection_audits(s: Any, collection_id: int) -> dict[str, list[tuple[float, bool]]]:
    """The collection's live audits per judge since its last resumed alarm, in the
    transaction ``s``, as the loss estimate takes them (``labeling.study.uncertainty
    .estimate_loss``'s ``audits``): ``(stated P(right) = 1 − claimed P(wrong), the person
    agreed with the machine)``, in judgment order."""
    resumed: dict[str, int] = {}
    for judge, last in s.execute(
        select(MachineAlarm.judge, func.max(MachineAlarm.last_judgment_id))
        .where(MachineAlarm.collection_id == collection_id, MachineAlarm.resumed_at.is_not(None))
        .group_by(MachineAlarm.judge)
    ):
        resumed[str(judge)] = int(last)
    out: dict[str, list[tuple[float, bool]]] = {}
    for judgment_id, judge, claimed, wrong in s.execute(
        select(
            MachineAudit.judgment_id, MachineAudit.judge, MachineAudit.claimed, MachineAudit.wrong
        )
        .join(Judgment, and_(Judgment.id == MachineAudit.judgment_id, Judgment.undone.is_(False)))
        .where(MachineAudit.collection_id == collection_id, MachineAudit.tested.is_(True))
        .order_by(MachineAudit.judgment_id)
    ):
        if judgment_id > resumed.get(str(judge), 0):
            out.setdefault(str(judge), []).append((1.0 - float(claimed), not wrong))
    return out


def task_audits(s: Any, task: Any) -> list[tuple[float, bool]] | None:
    """The audits of the study of ``task``'s machine (:func:`collection_audits` of its judge),
    None when the task has no machine."""
    judge = s.scalar(select(TaskMachine.judge).where(TaskMachine.task_id == task.id))
    if judge is None:
        return None
    return collection_audits(s, int(task.collection_id)).get(str(judge), [])


def _alarm_dict(alarm: MachineAlarm) -> dict[str, Any]:
    return {
        "id": alarm.id,
        "judge": alarm.judge,
        "task_id": alarm.task_id,
        "active": alarm.resumed_at is None,
        "raised_at": alarm.raised_at.isoformat(),
        "resumed_at": None if alarm.resumed_at is None else alarm.resumed_at.isoformat(),
        "resumed_by": alarm.resumed_by,
        "audits": alarm.audits,
        "agree": alarm.agree,
        "agreement": alarm.agree / alarm.audits if alarm.audits else None,
        "claimed_wrong": alarm.claimed_wrong,
        "log_ratio": alarm.log_ratio,
        "test": (
            "one-sided SPRT of H0 P(wrong) <= the claimed bound against H1 P(wrong) = 1/2; "
            f"alarm when the likelihood ratio reaches 1/{ALARM_ALPHA:g} (false-alarm rate "
            f"<= {ALARM_ALPHA:g} over the study)"
        ),
    }


def collection_alarms(*, db: Database, collection_id: int) -> dict[str, Any]:
    """The collection's machine alarms, newest first (active ones stop the machine), and
    whether any is active; 404 for an unknown collection."""
    with db.read() as s:
        if s.get(Collection, collection_id) is None:
            raise NotFound(f"no collection with id {collection_id}")
        rows = s.scalars(
            select(MachineAlarm)
            .where(MachineAlarm.collection_id == collection_id)
            .order_by(MachineAlarm.id.desc())
        ).all()
        alarms = [_alarm_dict(a) for a in rows]
    return {
        "collection_id": collection_id,
        "active": any(a["active"] for a in alarms),
        "alarms": alarms,
    }


def resume_alarm(*, db: Database, collection_id: int, alarm_id: int, by: str) -> dict[str, Any]:
    """Resume the machine after an alarm (the admin recalibrated it, e.g. a new judge or
    more gold answers): the test starts afresh from the audits after it. 404 for an unknown
    alarm of the collection, 409 for one already resumed."""
    with db.write() as s:
        alarm = s.get(MachineAlarm, alarm_id)
        if alarm is None or alarm.collection_id != collection_id:
            raise NotFound(f"no machine alarm {alarm_id} on collection {collection_id}")
        if alarm.resumed_at is not None:
            raise Conflict(f"machine alarm {alarm_id} was resumed already")
        s.execute(
            update(MachineAlarm)
            .where(MachineAlarm.id == alarm_id)
            .values(resumed_at=utcnow(), resumed_by=by[:150])
        )
        s.flush()
        s.refresh(alarm)
        return _alarm_dict(alarm)
