"""benchmarks/prior_limits.py: the exact optimum on hand-checked cases, no strategy below it,
the claims docs/protocols.md#how-close-to-the-optimum makes from it, and the two searches
returning the true top k."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks import prior_limits as pl
from labeling.strategies.registry import STRATEGIES
from labeling.study.simulation import SCENARIO_PRIOR_CORR


@pytest.mark.parametrize(
    ("n", "k", "expected"),
    [
        (1, 1, 0.0),
        (2, 1, 1.0),
        (3, 1, 2.0),  # the best of three: always two questions
        (4, 1, 3.0),
        # top two of three in order: a vs b, then c vs the loser (c below: done, 1/3),
        # else c vs the winner: 2·1/3 + 3·2/3
        (3, 2, 8 / 3),
    ],
)
def test_optimum_hand_checked_on_random_orders(n: int, k: int, expected: float) -> None:
    best, _, _ = pl.optimum(pl.rankings(n, None, 0), k)
    assert best == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("n", "k"), [(4, 2), (5, 2), (5, 3)])
@pytest.mark.parametrize("corr", [None, SCENARIO_PRIOR_CORR])
def test_no_strategy_beats_the_optimum(n: int, k: int, corr: float | None) -> None:
    table = pl.rankings(n, corr, 200_000)
    best, _, _ = pl.optimum(table, k)
    means = {name: pl.strategy_expectation(cls, table, k) for name, cls in STRATEGIES.items()}
    assert all(mean >= best - 1e-9 for mean in means.values()), (best, means)
    # ... and the optimum is not trivially reached by all of them (the search does something).
    assert max(means.values()) > best + 1e-3


def test_kislitsyn_form_is_not_a_bound_on_a_mean() -> None:
    """(n − k) + log2(n!/(n−k+1)!) is a worst-case bound; the optimal mean on random orders is
    below it at (6, 3) (exact: every ranking equally likely)."""
    best, _, _ = pl.optimum(pl.rankings(6, None, 0), 3)
    form = 3 + math.log2(6 * 5)
    assert best < form - 0.01


def test_optimum_with_a_prior_is_below_the_random_one() -> None:
    prior, _, _ = pl.optimum(pl.rankings(5, SCENARIO_PRIOR_CORR, 200_000), 3)
    random, _, _ = pl.optimum(pl.rankings(5, None, 0), 3)
    assert prior < random - 0.5


def test_information_of_a_random_order_is_log_falling_factorial() -> None:
    bits = pl.information(20, 5, None, samples=5)
    assert bits == pytest.approx(math.log2(20 * 19 * 18 * 17), abs=1e-3)


def test_information_of_a_prior_is_lower() -> None:
    bits = pl.information(20, 5, SCENARIO_PRIOR_CORR, samples=200)
    assert bits < math.log2(20 * 19 * 18 * 17) - 2


def test_poset_closes_transitively_and_proves_the_top() -> None:
    poset = pl.Poset(4)
    poset.add(0, 1)
    poset.add(1, 2)
    assert poset.known(0, 2) == 0 and poset.known(2, 0) == 0 and poset.known(0, 3) is None
    assert poset.top(2) is None
    poset.add(2, 3)
    assert poset.top(2) == [0, 1] and poset.top(4) == [0, 1, 2, 3]
    assert poset.matrix()[0].tolist() == [False, True, True, True]


@pytest.mark.parametrize("corr", [None, SCENARIO_PRIOR_CORR])
def test_greedy_and_rollout_return_the_true_top(corr: float | None) -> None:
    rng = np.random.default_rng(5)
    for trial in range(3):
        u = pl.latent_by_position(rng, 14, corr)
        truth = list(np.argsort(-u)[:4])
        top, asked = pl.greedy_run(u, 4, corr, 0.5, 100, trial)
        assert top == truth and asked >= 14 - 1
        top, asked = pl.rollout_run(u, 4, corr, 8, 60, trial)
        assert top == truth and asked >= 14 - 1


def test_search_costs() -> None:
    from labeling.strategies.insertion import mean_search

    for slots in range(1, 12):
        uniform = np.full(slots, 1.0 / slots)
        assert pl.binary_search_cost(uniform) == pytest.approx(mean_search(slots))
        assert pl.optimal_search_cost(uniform) <= pl.binary_search_cost(uniform) + 1e-12
    # slot 0 alone first (1 question for all), then the other three: 0.3 + 0.2 more
    assert pl.optimal_search_cost(np.array([0.7, 0.1, 0.1, 0.1])) == pytest.approx(1.5)
    assert pl.binary_search_cost(np.array([0.7, 0.1, 0.1, 0.1])) == pytest.approx(2.0)


def test_insertion_with_trees_matches_the_strategy() -> None:
    """With the fill in order and binary search, the exact expectation equals the mean of
    the registered insertion strategy over the same scenarios."""
    from labeling.strategies.insertion import InsertionTopK

    rng = np.random.default_rng(9)
    u = np.stack([pl.latent_by_position(rng, 16, SCENARIO_PRIOR_CORR) for _ in range(400)])
    binary, optimal = pl.insertion_with_trees(u, 4, list(range(4)))
    measured = np.mean([pl.driven_count(InsertionTopK, row.tolist(), 4) for row in u])
    assert binary == pytest.approx(measured, abs=1e-9)
    assert optimal <= binary


def test_optimal_policy_lines() -> None:
    """The best of three on a random order: any first pair (the first listed, (0, 1)), then
    the winner against the third."""
    best, _, lines = pl.optimum(pl.rankings(3, None, 0), 1, show=2)
    assert best == pytest.approx(2.0)
    assert lines[0].strip() == "start: ask (0, 1), P(0>1) = 0.50, 2.000 expected"
    assert [line.strip() for line in lines[1:]] == [
        "0>1: ask (0, 2), P(0>2) = 0.67, 1.000 expected",
        "1>0: ask (1, 2), P(1>2) = 0.67, 1.000 expected",
    ]
