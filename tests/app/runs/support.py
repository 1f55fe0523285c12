"""The runs tests' campaign: six queries of twenty graded documents and four systems of known
skill ranking them (the runs, pools and campaign pages' tests share it)."""

from __future__ import annotations

import random

QUERIES = [f"q{i}" for i in range(1, 7)]
DOCS = [f"d{j:02d}" for j in range(20)]
SKILLS = {"strong": 1.6, "fair": 0.8, "weak": 0.3, "noise": 0.0}


def campaign_grades() -> dict[str, dict[str, int]]:
    rng = random.Random(11)
    return {q: {d: rng.choice([0, 0, 0, 1, 1, 2, 3]) for d in DOCS} for q in QUERIES}


def campaign_runs(grades: dict[str, dict[str, int]]) -> dict[str, dict[str, dict[str, float]]]:
    """Four runs of depth 15 with more or less skill; ``weak`` lacks q6 and retrieves a
    document the collection does not have."""
    rng = random.Random(5)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, skill in SKILLS.items():
        run: dict[str, dict[str, float]] = {}
        for q in QUERIES:
            if name == "weak" and q == "q6":
                continue
            weight = {d: rng.random() + skill * grades[q][d] for d in DOCS}
            top = sorted(weight, key=lambda d: -weight[d])[:15]
            run[q] = {d: round(weight[d], 5) for d in top}
        if name == "weak":
            run["q1"]["x-outside"] = -1.0
        out[name] = run
    return out
