"""Use cases of a task's machine judge (docs/machine-judges.md#the-service).

* **At creation** (:func:`prepare_task`, from :func:`app.tasks.service.create_task` and the
  planner): the source is checked (422 naming ``options.machine.source``), the judge's raw
  score of every pool document is computed and stored (``machine_score``), and the judge's
  version is recorded in the task's ``options.machine.judge`` and ``task_machine``.
* **In the judging loop** (:func:`task_opinion`, inside the loop's write transaction): the
  task's :class:`labeling.machine.opinion.JudgeOpinion` over the stored scores and prepared
  pair opinions only (nothing is computed from documents in a request; a pair without a
  stored opinion gets none, and a person is asked), through the study calibration frozen for
  the task. The first time (the task's first write), the calibration is learned from the
  people's answers on the machine's pairs of the collection's other tasks with the same
  judge (:func:`app.machine.judges.judge_calibration`) and stored with the task, so every
  later replay sees the same probabilities; :attr:`JudgeOpinion.version` records the
  calibration's answer count with every machine answer. The collection's gold pairs
  (:mod:`app.machine.gold`) are frozen with it, each with the judge's raw opinion on it, and
  are the opinion's ``gold`` evidence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy.orm import Session

from app.kernel.caches import LRU, Slot
from app.kernel.db import Database
from app.kernel.models import Query, utcnow
from app.kernel.settings import Settings
from app.machine import alarms, health, judges
from app.machine.judge_repository import (
    MachineStore,
    save_machine,
    save_opinions,
    source_evidence,
)
from app.machine.llm import LlmUsage, budget_of
from app.machine.repository import collection_usage, failing_studies
from labeling.machine.judges import JudgeQuery
from labeling.machine.opinion import JudgeOpinion
from labeling.protocol.spec import MachineSource, MachineSpec, TaskSpec

__all__ = [
    "check_machine",
    "machine_health",
    "machine_judge",
    "machine_usage",
    "prepare_task",
    "refresh_opinions",
    "save_prepared",
    "store_pair_opinions",
    "task_opinion",
]


def check_machine(
    s: Session, collection_id: int, machine: MachineSpec | None, settings: Settings
) -> MachineSource | None:
    """The source of a task's machine (None: no machine), after
    :func:`app.machine.judges.check_source` (422 naming the field)."""
    if machine is None:
        return None
    judges.check_source(s, collection_id, machine.source, settings)
    return machine.source


def prepare_task(
    s: Session,
    collection_id: int,
    query: Query,
    doc_ids: Sequence[str],
    spec: TaskSpec,
    settings: Settings,
) -> tuple[TaskSpec, judges.PreparedScores | None]:
    """Check a new task's machine and compute its raw scores (before the task row exists):
    the spec with the judge's version recorded (``machine.judge``) and the scores (None
    without a machine). Store them with :func:`save_prepared` once the task has its id."""
    if check_machine(s, collection_id, spec.machine, settings) is None:
        return spec, None
    assert spec.machine is not None
    prepared = judges.prepare_scores(
        s, collection_id, query, doc_ids, spec.machine.source, settings
    )
    return replace(spec, machine=replace(spec.machine, judge=prepared.judge)), prepared


def save_prepared(s: Session, task_id: int, prepared: judges.PreparedScores | None) -> None:
    """Store what :func:`prepare_task` computed for task ``task_id``."""
    if prepared is not None:
        save_machine(s, task_id, prepared.source.text, prepared.judge, prepared.scores, utcnow())


def store_pair_opinions(
    *,
    db: Database,
    task_id: int,
    opinions: dict[tuple[str, str], float],
    prompt_hash: str | None = None,
) -> int:
    """Store a job's raw P(first better) of ordered pairs of a task (the ``llm`` judge's
    prepared opinions; pairs already stored are kept); how many were new."""
    for pair, p in opinions.items():
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"opinion on {pair} is not a probability: {p!r}")
    with db.write() as s:
        return save_opinions(s, task_id, opinions, utcnow(), prompt_hash)


def refresh_opinions(db: Database, cursor: Any, task_id: int, machine: Any) -> int:
    """Read the task's prepared pair opinions again into ``machine`` (the
    :class:`JudgeOpinion` of a cached session, over a :class:`app.machine.judges.StoredJudge`)
    and forget the pairs it had found no opinion for, so opinions a job stored since the
    session was built are used from the next question on; how many pairs it now has."""
    if not isinstance(machine, JudgeOpinion) or not isinstance(machine.judge, judges.StoredJudge):
        return 0
    machine.judge.opinions = MachineStore(db, cursor).opinions(task_id)
    for pair in [pair for pair, p in machine.raw.items() if math.isnan(p)]:
        del machine.raw[pair]
    return len(machine.judge.opinions)


def task_opinion(
    db: Database, cursor: Any, task: Any, *, freeze: bool = True
) -> JudgeOpinion | None:
    """The task's machine (None without one), on ``cursor``: a write transaction, in which
    the study calibration is frozen for the task the first time (module docstring); with
    ``freeze=False`` (a read) None while no calibration is frozen."""
    store = MachineStore(db, cursor)
    row = store.machine(task.id)
    if row is None or (row.calibration is None and not freeze):
        return None
    calibration = row.calibration
    if calibration is None:
        frozen = _judge_calibration(db, store, task.collection_id, row.judge, task.id)
        gold = judges.gold_evidence(store.gold(task.collection_id, row.judge))
        if gold:  # the admin's gold pairs, frozen with it (docs/machine-judges.md#the-gold-set)
            frozen = {**frozen, "gold": gold}
        # The bound's evidence per stratum is frozen with it: every replay of the task meets
        # the same machine (docs/machine-judges.md#the-rule).
        strata = alarms.study_strata(db, cursor, task.collection_id, row.judge, task.id)
        frozen = {**frozen, "strata": strata.to_dict()}
        if not store.freeze(task.id, frozen, utcnow()):  # stored meanwhile: use that one
            calibration = store.machine(task.id).calibration
        else:
            calibration = frozen
    judge = judges.StoredJudge(row.judge, store.scores(task.id), store.opinions(task.id))
    query = JudgeQuery(str(task.query_id), "")
    audits = alarms.study_monitor(db, cursor, task.collection_id, row.judge, task.id)
    return JudgeOpinion(
        judge,
        query,
        judges.calibrator_from_json(calibration),
        gold=judges.gold_from_json(calibration),
        prior_audits=audits,
        stratum_evidence=judges.strata_from_json(calibration).with_gold(
            judges.gold_from_json(calibration)
        ),
    )


def machine_judge(session: Any) -> str | None:
    """The judge version of a session's machine (a :class:`JudgeOpinion` over a stored judge),
    the key of its study's audits and alarms; None without one."""
    machine = getattr(session, "machine", None)
    if isinstance(machine, JudgeOpinion):
        return str(machine.judge.version)
    return None


#: Study calibrations computed in this process, by (collection, judge): the log's newest
#: judgment id when computed, how many answers it learned from, and its JSON.
_STUDY: Slot[LRU] = Slot("study calibrations", lambda _db: LRU(256))
#: A computed study calibration is reused for a task starting while the log has grown by fewer
#: than this share of the answers it learned from (at least one judgment): the study's
#: recent answers are read once per tenth of the window instead of at every task's start,
#: inside its write transaction (docs/machine-judges.md#the-service).
CALIBRATION_REFRESH = 0.1


def _judge_calibration(
    db: Database, store: MachineStore, collection_id: int, judge: str, task_id: int
) -> dict[str, Any]:
    """The study calibration to freeze for a task starting now (JSON), computed from people's
    recent answers or reused (:data:`CALIBRATION_REFRESH`); the task stores what it froze, so
    its replays never depend on this cache."""
    cache = _STUDY.of(db)
    latest = store.latest_judgment()
    found = cache.get((collection_id, judge))
    if found is not None:
        at, learned, frozen = found
        if latest - at < max(1, int(learned * CALIBRATION_REFRESH)):
            return dict(frozen)
    answers = store.evidence(collection_id, judge, task_id)
    frozen = judges.calibrator_to_json(judges.judge_calibration(answers))
    cache.put((collection_id, judge), (latest, len(answers), frozen))
    return frozen


def machine_usage(*, db: Database, collection_id: int) -> dict[str, Any]:
    """The LLM judge's spending per study of a collection (``GET
    /api/v1/admin/collections/{id}/machine/usage``, the admin progress page): the model and
    the budget per study from the settings, and each study's counters
    (:meth:`app.machine.llm.LlmUsage.to_dict`: requests, cached, tokens, malformed, failed,
    refused, timeouts, remaining; ``purpose`` ``grades`` for the collection's LLM grades,
    which have their own budget) with each study's last failure (``last_error``,
    ``last_error_at``). 404 for an unknown collection."""
    settings = db.settings
    studies = []
    for study, counts, last in collection_usage(db, collection_id):
        row = LlmUsage(study, counts, budget_of(study, settings)).to_dict()
        row["last_error"] = last.error if last else None
        row["last_error_at"] = last.at if last else None
        studies.append(row)
    return {
        "collection_id": collection_id,
        "model": settings.llm_model or None,
        "budget": settings.llm_token_budget,
        "grade_budget": settings.llm_grade_token_budget,
        "studies": studies,
        "alarms": health.open_alarms(db, collection_id),
    }


def _study_label(plan: str | None, purpose: str) -> str:
    if purpose == "grades":
        return "LLM grades"
    return plan or "(tasks without a plan)"


def machine_health(db: Database) -> dict[str, Any]:
    """The machine page's figures (docs/machine-judges.md#when-the-machine-fails): every open
    machine alarm, and every study with a failed or malformed call, its counters and its last
    error."""
    failures = [
        {
            "collection_id": study.collection_id,
            "study": _study_label(study.plan, study.purpose),
            "requests": counts.requests,
            "failed": counts.failed,
            "timeouts": counts.timeouts,
            "malformed": counts.malformed,
            "last_error": last.error if last else None,
            "last_error_at": last.at if last else None,
        }
        for study, counts, last in failing_studies(db)
    ]
    return {"alarms": health.open_alarms(db), "failures": failures}


def people_agreement(db: Database, collection_id: int, source: str) -> tuple[int, int]:
    """``(agree, pairs)``: on people's most recent pair answers (the study calibration's
    window) in the collection's tasks with a judge of ``source``, how often the judge's raw
    opinion (:func:`app.machine.judges.evidence_probability`, above or below 1/2) named the
    person's winner; pairs without an opinion (or exactly 1/2) are not counted. These are the
    pairs the machine left to people and the audits: harder than random pairs."""
    with db.read() as s:
        rows = source_evidence(s, collection_id, source)
    agree = pairs = 0
    for outcome, *numbers in rows:
        p = judges.evidence_probability(*numbers)
        if math.isnan(p) or p == 0.5:
            continue
        pairs += 1
        agree += (p > 0.5) == (outcome == "left")
    return agree, pairs
