"""Simulated judgments for planning (labeling.study.estimates): the percentile against numpy,
the mean against a brute-force replay of the same trials, and the true order's count."""

from __future__ import annotations

import random

import numpy as np
import pytest

from labeling.errors import ConfigError
from labeling.strategies.registry import resolve_strategy
from labeling.study.estimates import percentile, simulated_judgments, trials_for
from labeling.study.simulation import Assessor, run_strategy


def test_percentile_is_numpys_nearest_rank() -> None:
    rng = random.Random(3)
    for m in (1, 2, 7, 20, 101):
        values = [rng.randrange(50) for _ in range(m)]
        expected = np.percentile(values, 95, method="inverted_cdf")
        assert percentile(values, 0.95) == float(expected)


def test_a_perfect_prior_gives_the_sorted_orders_count() -> None:
    n, k = 20, 5
    est = simulated_judgments("insertion", n, k, 1.0)
    # Correlation 1: every trial meets the documents in their true order, so every run asks
    # exactly what one run on a sorted list asks.
    docs = [f"x{i:02d}" for i in range(n)]
    person = Assessor({d: float(n - i) for i, d in enumerate(docs)}, seed=0)
    count = run_strategy(resolve_strategy("insertion"), docs, k, person)[2]
    assert est.mean == est.p95 == count
    assert est.trials == trials_for(n) == 200


def test_a_prior_lowers_insertion_and_not_below_the_truth() -> None:
    random_order = simulated_judgments("insertion", 30, 10, None)
    weak = simulated_judgments("insertion", 30, 10, 0.2)
    strong = simulated_judgments("insertion", 30, 10, 0.7)
    perfect = simulated_judgments("insertion", 30, 10, 1.0)
    assert random_order.mean > weak.mean > strong.mean > perfect.mean
    assert weak.p95 >= weak.mean


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ConfigError):
        simulated_judgments("heap", 0, 3, None)
    with pytest.raises(ConfigError):
        simulated_judgments("bubble", 5, 3, None)
