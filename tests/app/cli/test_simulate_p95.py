"""Every simulation row's p95 and mean are of the same simulated runs, and p95 >= mean
(``heapjudge simulate``: one strategy, ``--compare``, ``--machine-accuracy``; the study's
estimates the plan preview reads).

p95 >= mean is not a theorem: a distribution with more than 5% of its mass far enough above
its 95th percentile has a mean above it (0 with probability 0.96 and 1000 with 0.04: mean 40,
p95 0). Judgment counts of one strategy are not spread like that (every run needs at least
about the lower bound and at most the worst case, with a thin upper tail), so a p95 below the
mean meant figures of two different sets: the plan preview once paired the strategy's
start-of-task model with the runs' p95 (``prior+assist`` at n = 30, k = 10: 80.0 against 75).
The oracle here is numpy over the runs themselves."""

from __future__ import annotations

import numpy as np
import pytest

from app.cli.simulate import compare, summarize, summarize_machine
from labeling.strategies.registry import strategy_names
from labeling.study.assisted import compare_assisted
from labeling.study.estimates import assisted_judgments, percentile, simulated_judgments
from labeling.study.simulation import compare_strategies, simulate_tasks


def test_nearest_rank_p95_can_sit_below_the_mean():
    """Why the rows are checked against their runs and not by the inequality alone."""
    values = [0] * 96 + [1000] * 4
    assert percentile(values, 0.95) == 0.0 < float(np.mean(values)) == 40.0


@pytest.mark.parametrize("strategy", ["heap", "prior", "prior+assist", "insertion+robust"])
def test_one_strategy_row(strategy: str) -> None:
    row = summarize(14, 4, 60, strategy=strategy, noise=0.1, seed=3)
    runs = simulate_tasks(14, 4, 60, strategy=strategy, noise=0.1, seed=3)
    counts = np.array([r.judgments for r in runs], dtype=float)
    assert row["judgments"]["mean"] == pytest.approx(counts.mean())
    assert row["judgments"]["p95"] == pytest.approx(np.percentile(counts, 95))
    assert row["judgments"]["p95"] >= row["judgments"]["mean"]
    assert row["judgments"]["min"] <= row["judgments"]["mean"] <= row["judgments"]["max"]


def test_every_compare_row() -> None:
    table = compare(10, 3, 30, seed=1)
    names = set(strategy_names())
    assert {row["strategy"] for row in table["rows"]} == names
    for row in table["rows"]:
        if row["scenario"].startswith("machine"):
            runs = compare_assisted(row["strategy"], row["scenario"], 10, 3, 30, seed=1)
        else:
            runs = compare_strategies(row["strategy"], row["scenario"], 10, 3, 30, seed=1)
        counts = np.array([r.judgments for r in runs], dtype=float)
        j, h = row["judgments"], row["human_judgments"]
        assert (j["mean"], j["p95"]) == pytest.approx((counts.mean(), np.percentile(counts, 95)))
        assert (h["mean"], h["p95"]) == pytest.approx((j["mean"], j["p95"]))
        assert j["p95"] >= j["mean"], row


@pytest.mark.parametrize("strategy", ["prior+assist", "tournament+assist", "heap+assist+robust"])
def test_machine_row(strategy: str) -> None:
    row = summarize_machine(20, 5, 40, strategy=strategy, accuracy=0.8, noise=0.1, seed=2)
    assert row["judgments"]["p95"] >= row["judgments"]["mean"]
    assert row["human_judgments"]["p95"] >= row["human_judgments"]["mean"]


@pytest.mark.parametrize("name", ["heap", "prior", "prior+assist", "insertion+robust"])
@pytest.mark.parametrize("correlation", [None, 0.2])
def test_study_estimates(name: str, correlation: float | None) -> None:
    est = simulated_judgments(name, 30, 10, correlation)
    assert est.p95 >= est.mean
    if "assist" in name:
        a = assisted_judgments(name, 30, 10, 0.8, correlation)
        assert a.human_p95 >= a.human_mean
