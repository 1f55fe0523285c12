"""The calibration report of a collection's machine judges, from the stored judgments
(docs/machine-judges.md#the-calibration-report).

**Records.** Per judge (the tasks' ``task_machine.judge``: the judge's version without the
``+calibration/...`` suffix its answers carry, so every task of one source and judge version
is one group whatever calibration it froze), one
:class:`labeling.machine.calibration_report.CalibrationRecord` per live person's pair answer
with a winner (left or right) on a pair the task's machine had an opinion on, gathered by
:func:`app.analysis.machine.machine_evidence` (the records of the agreement analysis):

* ``raw``: the judge's raw P(left better) from the task's stored scores or prepared pair
  opinions (``σ((s_left − s_right) / scale)``, docs/machine-judges.md#the-service);
* ``calibrated``: that probability through the task's frozen study calibration
  (``task_machine.calibration``; the default prior when none is frozen), as the machine saw
  it when it decided whether to answer;
* ``first_shown``: ``left``. The judging page lays the pair out left then right, the judgment
  records it as shown, and nothing else says which side the person read first.

**Audits.** People answer two kinds of question the machine had an opinion on: the seeded
audits (the machine could have answered; a share goes to people, so its accuracy is measured
on unbiased pairs) and the questions it was not sure enough to answer (hard ones). The log
does not mark audits; each machine task is replayed once with its machine (the stored judge
behind the frozen calibration, :class:`labeling.machine.opinion.JudgeOpinion`) and
``session.pending_is_audit`` is read before each person's answer. The report is given for all
the records and for both subsets.

**Cost.** The replay is most of the report's time (and the frozen calibration's fit the next
part), so each task's audit seqs and its answers' calibrated probabilities
(:class:`TaskFigures`) are kept in process (:data:`AUDITS`, per database) under a digest of
everything they are computed from: the task's seed, k, documents and options, its stored judge
(scores, prepared opinions), when its calibration was frozen (once: the service stores one only
where none is, so the report does not read the large frozen documents of the tasks it finds in
the cache) and the content of its live log. A new or undone judgment, a new opinion or a
frozen calibration changes the digest and that task alone is replayed again; the others are
read from the cache. Other processes need no invalidation: every request reads the log and
compares digests.
The replay itself is skipped for a task none of whose person's answers can be an audit (the
seeded draw :func:`labeling.strategies.assist.audit_draw` of the pair is not below
:data:`~labeling.strategies.assist.AUDIT_SHARE`: the draw decides before the risk rule), and
stops after the last one that can: later answers cannot change an earlier question's verdict.
"""

from __future__ import annotations

import hashlib
import json
import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from app.analysis import repository
from app.analysis.machine import MachineEvidence, MachineTask, PersonAnswer, machine_evidence
from app.judging.loop import answer_of
from app.kernel.caches import LRU, Slot
from app.kernel.db import Database
from app.kernel.errors import Invalid, NotFound
from app.machine.judges import calibrator_from_json, strata_from_json
from labeling.machine.calibration import Calibrator
from labeling.machine.calibration_report import (
    CalibrationRecord,
    reliability_svg,
    report_from_records,
)
from labeling.machine.judges import JudgeQuery
from labeling.machine.opinion import JudgeOpinion
from labeling.protocol.session import open_session
from labeling.strategies.assist import AUDIT_SHARE, audit_draw

#: Largest number of confidence bins the report accepts.
MAX_BINS = 50

#: How many tasks' audits each database keeps in process (module docstring, "Cost").
AUDIT_CACHE_TASKS = 20_000

#: Per task id: ``(digest of the replay's inputs, its TaskFigures)`` (module docstring, "Cost").
AUDITS: Slot[LRU] = Slot("analysis.calibration.audits", lambda _db: LRU(AUDIT_CACHE_TASKS))


@dataclass(slots=True)
class _Row:
    """A judgment_log tuple with the attribute names replay reads (app.judging.loop.answer_of)."""

    id: int
    seq: int
    left_doc: str | None
    right_doc: str | None
    outcome: str | None
    doc_id: str | None
    grade: int | None
    active_ms: int
    reason: str | None
    source: str
    machine_version: str | None
    probability: float | None


def _row(t: tuple[Any, ...]) -> _Row:
    # judgment_log: task, seq, left, right, outcome, doc_id, grade, active_ms, created_at,
    # undone, reason, answered_by, source, probability, machine_version
    return _Row(0, t[1], t[2], t[3], t[4], t[5], t[6], t[7] or 0, t[10], t[12], t[14], t[13])


@dataclass
class JudgeRecords:
    """One judge's records (module docstring), each with whether it was an audit."""

    judge: str
    source: str
    tasks: int
    records: list[CalibrationRecord] = field(default_factory=list)
    audit: list[bool] = field(default_factory=list)


def _calibrator(m: MachineTask) -> Calibrator:
    return calibrator_from_json(m.calibration) if m.calibration else Calibrator("isotonic")


def replay_digest(m: MachineTask, rows: Sequence[tuple[Any, ...]]) -> bytes:
    """A digest of everything :class:`TaskFigures` are computed from for task ``m``: the
    task's seed, k, documents and options, the stored judge, when its calibration was frozen
    and the live log's content (every column but ``created_at``, which replay does not
    read)."""
    task, stored = m.task, m.stored
    parts = (
        task.id,
        task.seed,
        task.k,
        list(task.doc_ids),
        json.dumps(task.options, sort_keys=True, default=str),
        m.judge,
        sorted(stored.scores.items()),
        sorted(stored.opinions.items()),
        # Frozen once (app.machine stores one only where none is): when, not the document.
        m.calibrated_at,
        [t[:8] + t[9:] for t in rows],
    )
    return hashlib.blake2b(repr(parts).encode(), digest_size=20).digest()


def replay_audit_seqs(m: MachineTask, rows: Sequence[tuple[Any, ...]]) -> set[int]:
    """The seqs of the person's answers of task ``m`` that were audits: its live log replayed
    once with its machine, ``pending_is_audit`` read before each person's answer (only up to
    the last answer whose pair's audit draw is below the audit share: no other can be one)."""
    task = m.task
    drawn = [
        t[1]
        for t in rows
        if t[12] == "person"
        and t[2] is not None
        and t[3] is not None
        and audit_draw(task.seed, t[2], t[3]) < AUDIT_SHARE
    ]
    if not drawn:
        return set()
    last = max(drawn)
    machine = JudgeOpinion(
        m.stored,
        JudgeQuery(str(task.query_id), ""),
        _calibrator(m),
        stratum_evidence=strata_from_json(m.calibration or {}),
    )
    session = open_session(
        "topk", task.doc_ids, k=task.k, seed=task.seed, options=task.options, machine=machine
    )
    out: set[int] = set()
    for t in rows:
        if session.done:
            break
        row = _row(t)
        if row.source == "person" and session.pending_is_audit:
            out.add(row.seq)
        if row.seq >= last:
            break
        session.submit(answer_of(row))
    return out


@dataclass(frozen=True, slots=True)
class TaskFigures:
    """What a task's records need beyond its answers, as :data:`AUDITS` keeps it: the seqs of
    its person's answers that were audits and the calibrated probability of each answer on a
    pair the machine had an opinion on (in the answers' order)."""

    audits: frozenset[int]
    calibrated: array[float]  # 8 bytes an answer ("d": the float64 the calibration gives)


def task_figures(
    m: MachineTask, answers: Sequence[PersonAnswer], rows: Sequence[tuple[Any, ...]]
) -> TaskFigures:
    """Task ``m``'s :class:`TaskFigures`: its log replayed (:func:`replay_audit_seqs`), its
    answers' raw probabilities through its frozen calibration."""
    raw = [a.raw for a in answers if not math.isnan(a.raw)]
    # One call for the task's answers: the isotonic map is read elementwise (np.interp), so
    # each value is the one a call per answer gives.
    calibrated = _calibrator(m).probability(raw).tolist() if raw else []
    return TaskFigures(frozenset(replay_audit_seqs(m, rows)), array("d", calibrated))


def _with_calibrations(tasks: Sequence[MachineTask], db: Database) -> list[MachineTask]:
    """``tasks`` with their frozen calibrations read (and when they were frozen, again)."""
    with db.read() as s:
        details = repository.machine_calibrations(s, [m.task.id for m in tasks])
    return [
        replace(m, calibration=details[m.task.id][1], calibrated_at=details[m.task.id][2])
        if m.task.id in details
        else m
        for m in tasks
    ]


def figures_of(
    evidence: MachineEvidence, tasks: Sequence[MachineTask], db: Database | None = None
) -> dict[int, TaskFigures]:
    """The :class:`TaskFigures` of those of ``tasks`` people answered, by task id. With
    ``db``, each kept in its :data:`AUDITS` under :func:`replay_digest` and built again only
    when the digest changes (the frozen calibrations read then, if ``evidence`` was read
    without them); without, every one built (``evidence`` must hold the calibrations)."""
    answered = [m for m in tasks if evidence.person_answers.get(m.task.id)]

    def build(m: MachineTask) -> TaskFigures:
        return task_figures(m, evidence.person_answers[m.task.id], evidence.live_logs[m.task.id])

    if db is None:
        if not evidence.calibrations:
            raise ValueError("evidence read without its calibrations: pass the database")
        return {m.task.id: build(m) for m in answered}
    cache = AUDITS.of(db)
    out: dict[int, TaskFigures] = {}
    stale = []
    for m in answered:
        found = cache.get(m.task.id)
        if found is not None and found[0] == replay_digest(m, evidence.live_logs[m.task.id]):
            out[m.task.id] = found[1]
        else:
            stale.append(m)
    if stale and not evidence.calibrations:
        stale = _with_calibrations(stale, db)
    for m in stale:
        out[m.task.id] = figures = build(m)
        if m.calibration is not None or m.calibrated_at is None:  # read whole: keep it
            cache.put(m.task.id, (replay_digest(m, evidence.live_logs[m.task.id]), figures))
    return out


def task_records(
    m: MachineTask, answers: Sequence[PersonAnswer], figures: TaskFigures
) -> list[tuple[CalibrationRecord, bool]]:
    """Task ``m``'s records (module docstring), each with whether it was an audit, from its
    answers in a :class:`MachineEvidence` and its :class:`TaskFigures`."""
    opined = [a for a in answers if not math.isnan(a.raw)]
    return [
        (
            CalibrationRecord(
                answer=a.outcome,
                calibrated=p,
                raw=float(a.raw),
                first_shown="left",
                query_id=m.query_id,
                left=a.left,
                right=a.right,
            ),
            a.seq in figures.audits,
        )
        for a, p in zip(opined, figures.calibrated, strict=True)
    ]


def judge_records(
    evidence: MachineEvidence, judge: str | None = None, *, db: Database | None = None
) -> list[JudgeRecords]:
    """The records of every judge of ``evidence`` (or of the one whose version or source is
    ``judge``), by judge version; with ``db``, each task's figures from its cache
    (:func:`figures_of`), else replayed."""
    tasks = [m for m in evidence.tasks if judge is None or judge in (m.judge, m.source)]
    figures = figures_of(evidence, tasks, db)
    out: dict[str, JudgeRecords] = {}
    for m in tasks:
        group = out.setdefault(m.judge, JudgeRecords(m.judge, m.source, 0))
        group.tasks += 1
        if m.task.id not in figures:
            continue
        answers = evidence.person_answers[m.task.id]
        for record, audit in task_records(m, answers, figures[m.task.id]):
            group.records.append(record)
            group.audit.append(audit)
    return [out[j] for j in sorted(out)]


def _report(records: Sequence[CalibrationRecord], bins: int) -> dict[str, Any]:
    return report_from_records(records, n_bins=bins).to_dict()


def judge_report(group: JudgeRecords, bins: int, *, svg: bool = False) -> dict[str, Any]:
    """One judge's report: all its records, then the audits and the hard questions apart;
    with ``svg``, also its reliability diagram (``svg``: the calibrated probabilities)."""
    audits = [r for r, a in zip(group.records, group.audit, strict=True) if a]
    hard = [r for r, a in zip(group.records, group.audit, strict=True) if not a]
    report = report_from_records(group.records, n_bins=bins)
    out = {
        "judge": group.judge,
        "source": group.source,
        "tasks": group.tasks,
        "report": report.to_dict(),
        "audits": _report(audits, bins),
        "hard": _report(hard, bins),
    }
    if svg:
        out["svg"] = reliability_svg(report.calibrated, f"Reliability diagram of {group.judge}")
    return out


def _check(bins: int) -> None:
    if not 1 <= bins <= MAX_BINS:
        raise Invalid(f"bins: must be between 1 and {MAX_BINS}, got {bins}")


def calibration_report(
    collection_id: int,
    *,
    db: Database,
    judge: str | None = None,
    bins: int = 10,
    svg: bool = False,
) -> dict[str, Any]:
    """The calibration report of the collection's machine judges (module docstring):
    ``collection``, ``bins`` and ``judges``, one entry per judge version (empty: no task has a
    machine; with ``svg`` each with its diagram). 404 for an unknown collection, or a
    ``judge`` no task of it has."""
    _check(bins)
    with db.read() as s:
        coll = repository.collection_by_id(s, collection_id)
        if coll is None:
            raise NotFound(f"collection {collection_id} not found")
        name = coll.name
    evidence = machine_evidence(collection_id, db=db, calibrations=False)
    groups = judge_records(evidence, judge, db=db)
    if judge is not None and not groups:
        known = sorted({m.judge for m in evidence.tasks})
        raise NotFound(
            f"judge: no task of collection {collection_id} has the judge {judge!r} "
            f"(its judges: {', '.join(known) or 'none'})"
        )
    return {
        "collection": {"id": collection_id, "name": name},
        "bins": bins,
        "judges": [judge_report(g, bins, svg=svg) for g in groups],
    }


def calibration_svg(
    collection_id: int, *, db: Database, judge: str | None = None, bins: int = 10
) -> str:
    """The reliability diagram (calibrated probabilities, all records) of the collection's one
    judge, or of ``judge``; 422 naming ``judge`` when several judges leave it ambiguous, 404
    without a machine judge."""
    _check(bins)
    evidence = machine_evidence(collection_id, db=db, calibrations=False)
    groups = judge_records(evidence, judge, db=db)
    if not groups:
        calibration_report(collection_id, db=db, judge=judge, bins=bins)  # the 404s
        raise NotFound(f"collection {collection_id} has no task with a machine judge")
    if len(groups) > 1:
        raise Invalid(
            "judge: the collection has several judges; name one of "
            + ", ".join(g.judge for g in groups)
        )
    report = report_from_records(groups[0].records, n_bins=bins)
    return reliability_svg(report.calibrated, f"Reliability diagram of {groups[0].judge}")
