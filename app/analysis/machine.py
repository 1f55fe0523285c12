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
left/right labels (:func:`labeling.machine.calibration.cohen_kappa`; null when undefined) and,
for opinions, ``no_opinion``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
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


def machine_agreement(collection_id: int, *, db: Database) -> list[dict[str, Any]]:
    """Per judge version of the collection's tasks: ``judge``, ``tasks``, ``machine_answers``,
    ``opinion_vs_people`` and ``answers_vs_people`` (module docstring); empty without a
    machine."""
    with db.read() as s:
        tasks = repository.machine_tasks(s, collection_id)
        ids = [t for t, _, _ in tasks]
        scores = repository.machine_scores(s, ids)
        opinions = repository.machine_opinions(s, ids)
        query_of = {t.id: q for t, _, q in repository.tasks(s, collection_id)}
        log = repository.judgment_log(s, collection_id)
    # Live pair answers (left or right): people's by task, and by (query, unordered pair).
    people_in: dict[int, list[tuple[str, str, str]]] = {}
    people_on: dict[tuple[str, str, str], list[tuple[int, str]]] = {}
    machine_rows: list[tuple[int, str, str, str]] = []
    for row in log:
        task_id, _seq, left, right, outcome = row[:5]
        if row[9] or outcome not in ("left", "right") or left is None or task_id not in query_of:
            continue
        winner = left if outcome == "left" else right
        if len(row) > 12 and row[12] == "machine":
            machine_rows.append((task_id, left, right, winner))
            continue
        people_in.setdefault(task_id, []).append((left, right, winner))
        people_on.setdefault(_key(query_of[task_id], left, right), []).append((task_id, winner))
    out = []
    for judge in sorted({j for _, j, _ in tasks}):
        mine = {t for t, j, _ in tasks if j == judge}
        said, heard, none = [], [], 0
        for t in sorted(mine):
            stored = StoredJudge(judge, scores.get(t, {}), opinions.get(t, {}))
            for left, right, winner in people_in.get(t, []):
                p = stored.raw(left, right)
                if math.isnan(p) or p == 0.5:
                    none += 1
                    continue
                said.append(left if p > 0.5 else right)
                heard.append(winner)
        answered, others = [], []
        for task_id, left, right, winner in machine_rows:
            if task_id not in mine:
                continue
            for other, person in people_on.get(_key(query_of[task_id], left, right), []):
                if other != task_id:
                    answered.append(winner)
                    others.append(person)
        out.append(
            {
                "judge": judge,
                "tasks": len(mine),
                "machine_answers": sum(1 for r in machine_rows if r[0] in mine),
                "opinion_vs_people": _block(said, heard, none),
                "answers_vs_people": _block(answered, others, None),
            }
        )
    return out
