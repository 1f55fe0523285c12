"""What a plan is expected to cost: judgments and minutes per task, per query and in total
(``docs/strategies-in-practice.md#planning``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from labeling.errors import ConfigError
from labeling.protocol.session import open_session
from labeling.study.simulation import GRADE_SECONDS, PAIR_SECONDS

#: What the preview's expected judgments and minutes mean (shown with them).
COST_MODEL = {
    "topk_judgments": "the strategy's own expected count at the start of a task (session "
    "progress: a consistent assessor, documents in random order; a good prior makes "
    "insertion cheaper than this)",
    "graded_judgments": "one grade per document of the pool",
    "seconds_per_pair": PAIR_SECONDS,
    "seconds_per_grade": GRADE_SECONDS,
    "minutes": "judgments times the time model's mean seconds per judgment "
    "(labeling.study.simulation.TimeModel: 13.87 s per grade, 13.87/2.5 = 5.55 s per pair)",
}

#: A query's resolved prior: (initial_order, recorded prior spec).
Resolved = tuple[list[str] | None, str]


def expected_cost(
    method: str, doc_ids: list[str], *, k: int, options: dict[str, Any]
) -> tuple[float, float]:
    """``(judgments, minutes)`` expected for one task of ``method`` on ``doc_ids``.

    Top-k: the expected count of the task's strategy at the start,
    ``open_session(...).progress().expected_remaining`` (its model for a consistent assessor
    on a random order; re-asks included when ``reask_fraction`` > 0); graded: one grade per
    document. Minutes = judgments × the time model's mean seconds per judgment / 60
    (:class:`labeling.study.simulation.TimeModel`: ``PAIR_SECONDS`` = 13.87/2.5 = 5.55 s per pair,
    ``GRADE_SECONDS`` = 13.87 s per grade, after Niu et al., SIGIR 2012, Table 1)."""
    if not doc_ids:
        return 0.0, 0.0
    if method == "graded":
        judgments = float(len(doc_ids))
        return judgments, judgments * GRADE_SECONDS / 60.0
    progress = open_session("topk", doc_ids, k=k, seed=0, options=options).progress()
    judgments = 0.0 if progress.done else progress.expected_remaining
    return judgments, judgments * PAIR_SECONDS / 60.0


def plan_cost(
    k: int,
    options: dict[str, dict[str, Any]],
    pools: dict[str, list[str]],
    resolved: dict[str, Resolved],
    methods: dict[str, set[str]],
) -> dict[str, dict[str, float]]:
    """Per query, the expected judgments and minutes of one task of each method it has
    (``methods[query_id]``)."""
    cost: dict[str, dict[str, float]] = {}
    for q, used in methods.items():
        ids = pools.get(q, [])
        row: dict[str, float] = {}
        for method in sorted(used):
            opts = dict(options[method])
            if method == "topk":
                if q not in resolved:
                    continue  # its prior failed: reported as a violation
                opts["initial_order"], opts["prior"] = resolved[q]
            try:
                judgments, minutes = expected_cost(method, ids, k=k, options=opts)
            except ConfigError:
                continue  # create_plan reports the config error with the task's name
            row[f"{method}_judgments"] = round(judgments, 1)
            row[f"{method}_minutes"] = round(minutes, 1)
        cost[q] = row
    return cost


def cost_totals(
    tasks: Iterable[tuple[str, str]], cost: dict[str, dict[str, float]]
) -> dict[str, float]:
    """Sums over the plan's ``(query_id, method)`` tasks of each query's one-task cost:
    ``<method>_judgments``, ``<method>_minutes``, ``judgments``, ``minutes`` (rounded)."""
    totals: dict[str, float] = {}
    for query_id, method in tasks:
        one = cost.get(query_id, {})
        for what in ("judgments", "minutes"):
            value = one.get(f"{method}_{what}", 0.0)
            totals[f"{method}_{what}"] = totals.get(f"{method}_{what}", 0.0) + value
            totals[what] = totals.get(what, 0.0) + value
    return {key: round(value, 1) for key, value in totals.items()}
