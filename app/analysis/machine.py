"""People against the machine (docs/machine-judges.md#the-service): beside the agreement of
people with people, how often a task's machine judge agrees with the people's answers.

Two comparisons per judge version, on pair answers (left or right; ties and broken documents
left out):

* **opinion vs people**: on every live pair a person answered in a task with a machine, the
  machine's opinion of that pair (its raw P(left better) from the task's stored scores or
  prepared pair opinions: left when above 1/2, right when below; exactly 1/2 or none: no
  opinion, counted apart). These are the pairs people saw: the audits and the pairs the
  machine was not sure enough to answer, so the figure is the machine's accuracy where it did
  not decide, a lower bound of its accuracy where it did.
* **machine answers vs people**: each live machine answer against every live person's
  answer to the same pair of the same query in another task (other assessors, other tasks).

For each: ``pairs``, ``agree``, ``agreement`` (agree / pairs), Cohen's κ of the two raters'
``left``/``right`` labels (:func:`labeling.machine.calibration.cohen_kappa`; null when
undefined) and, for opinions, ``no_opinion``. The labels are sides of one shown order: the
order the person saw (opinions), the order the machine's answer was shown in (answers; the
other person's winner is mapped onto it). κ = (p_o − p_e) / (1 − p_e) with p_e from the two
raters' shares of ``left`` (Cohen 1960, "A coefficient of agreement for nominal scales").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.analysis import repository
from app.kernel.db import Database
from app.machine.judges import StoredJudge
from labeling.machine.calibration import cohen_kappa


def _block(machine: Sequence[str], people: Sequence[str], no_opinion: int | None) -> dict[str, Any]:
    agree = sum(m == p for m, p in zip(machine, people, strict=True))
    kappa = cohen_kappa(list(machine), list(people)) if machine else math.nan
    out: dict[str, Any] = {
        "pairs": len(machine),
        "agree": agree,
        "agreement": agree / len(machine) if machine else None,
        "kappa": None if math.isnan(kappa) else kappa,
    }
    if no_opinion is not None:
        out["no_opinion"] = no_opinion
    return out


def _key(query: str, a: str, b: str) -> tuple[str, str, str]:
    return (query, a, b) if a < b else (query, b, a)


@dataclass(frozen=True, slots=True)
class MachineTask:
    """A task of the collection with a machine judge: its judge version (``task_machine.judge``,
    without the calibration suffix the machine's answers carry), source, query, the task row
    (for replay), its stored judge and its frozen study calibration (None: not started, or
    not read: :func:`machine_evidence`) with when it was frozen."""

    task: Any
    judge: str
    source: str
    query_id: str
    stored: StoredJudge
    calibration: dict[str, Any] | None
    calibrated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class PersonAnswer:
    """A live person's pair answer with a winner in a task with a machine, and the machine's
    raw P(left better) of that pair (NaN: no opinion)."""

    task_id: int
    seq: int
    left: str
    right: str
    outcome: str
    raw: float


@dataclass(frozen=True, slots=True)
class MachineEvidence:
    """What the machine analyses read (:func:`machine_evidence`): the machine tasks, people's
    pair answers in them with the machine's raw opinion, the live machine answers
    ``(task, left, right, winner)``, people's answers of the whole collection by ``(query,
    unordered pair)`` and every machine task's live log rows (judgment_log tuples, seq order)."""

    tasks: list[MachineTask]
    person_answers: dict[int, list[PersonAnswer]]
    machine_rows: list[tuple[int, str, str, str]]
    people_on: dict[tuple[str, str, str], list[tuple[int, str]]]
    live_logs: dict[int, list[tuple[Any, ...]]]
    calibrations: bool = True


def machine_evidence(
    collection_id: int, *, db: Database, calibrations: bool = True
) -> MachineEvidence:
    """Gather the machine tasks of a collection and the answers around them in one read: the
    one place the people-against-machine analyses (:func:`machine_agreement`, the calibration
    report of :mod:`app.analysis.calibration`) get their records from. Without
    ``calibrations``, the tasks' frozen calibrations are not read (only when they were
    frozen; ``MachineEvidence.calibrations`` says which)."""
    with db.read() as s:
        rows = repository.machine_tasks(s, collection_id)
        ids = [t for t, _, _ in rows]
        scores = repository.machine_scores(s, ids)
        opinions = repository.machine_opinions(s, ids)
        details = repository.machine_calibrations(s, ids, content=calibrations)
        task_rows = {t.id: (t, q) for t, _, q in repository.tasks(s, collection_id)}
        log = repository.judgment_log(s, collection_id)
    tasks = [
        MachineTask(
            task_rows[t][0],
            judge,
            details[t][0],
            query,
            StoredJudge(judge, scores.get(t, {}), opinions.get(t, {})),
            details[t][1],
            details[t][2],
        )
        for t, judge, query in rows
        if t in task_rows
    ]
    stored = {m.task.id: m.stored for m in tasks}
    evidence = MachineEvidence(tasks, {}, [], {}, {t: [] for t in stored}, calibrations)
    for row in log:
        task_id, seq, left, right, outcome = row[:5]
        if row[9] or task_id not in task_rows:
            continue
        if task_id in stored:
            evidence.live_logs[task_id].append(row)
        if outcome not in ("left", "right") or left is None:
            continue
        winner = left if outcome == "left" else right
        if len(row) > 12 and row[12] == "machine":
            evidence.machine_rows.append((task_id, left, right, winner))
            continue
        key = _key(task_rows[task_id][1], left, right)
        evidence.people_on.setdefault(key, []).append((task_id, winner))
        if task_id in stored:
            raw = stored[task_id].raw(left, right)
            answer = PersonAnswer(task_id, seq, left, right, outcome, raw)
            evidence.person_answers.setdefault(task_id, []).append(answer)
    return evidence


def machine_agreement(collection_id: int, *, db: Database) -> list[dict[str, Any]]:
    """Per judge version of the collection's tasks: ``judge``, ``tasks``, ``machine_answers``,
    ``opinion_vs_people`` and ``answers_vs_people`` (module docstring); empty without a
    machine."""
    evidence = machine_evidence(collection_id, db=db, calibrations=False)
    query_of = {m.task.id: m.query_id for m in evidence.tasks}
    out = []
    for judge in sorted({m.judge for m in evidence.tasks}):
        mine = {m.task.id for m in evidence.tasks if m.judge == judge}
        said, heard, none = [], [], 0
        for t in sorted(mine):
            for a in evidence.person_answers.get(t, []):
                if math.isnan(a.raw) or a.raw == 0.5:
                    none += 1
                    continue
                # Labels are sides of the pair as the person saw it, not the winning
                # documents: κ's chance agreement is over the two labels left and right
                # (with document ids as labels it counts as many categories as documents,
                # expects almost no chance agreement and reports κ near the raw agreement).
                said.append("left" if a.raw > 0.5 else "right")
                heard.append(a.outcome)
        answered, others = [], []
        for task_id, left, right, winner in evidence.machine_rows:
            if task_id not in mine:
                continue
            for other, person in evidence.people_on.get(_key(query_of[task_id], left, right), []):
                if other != task_id:
                    # Both as the machine's pair was shown: did its left document win?
                    answered.append("left" if winner == left else "right")
                    others.append("left" if person == left else "right")
        out.append(
            {
                "judge": judge,
                "tasks": len(mine),
                "machine_answers": sum(1 for r in evidence.machine_rows if r[0] in mine),
                "opinion_vs_people": _block(said, heard, none),
                "answers_vs_people": _block(answered, others, None),
            }
        )
    return out
