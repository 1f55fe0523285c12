"""Aggregation: Borda over top-k lists and the Bradley–Terry MM fit (scipy as oracle)."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from scipy.optimize import minimize

from labeling.analysis.aggregate import Preference, borda, bradley_terry
from labeling.errors import ConfigError


def test_borda_hand_example() -> None:
    # k = 3: points 3, 2, 1.
    agg = borda([["a", "b", "c"], ["b", "a", "d"], ["b", "c", "a"]], universe=["e"])
    assert agg.scores == {"b": 8.0, "a": 6.0, "c": 3.0, "d": 1.0, "e": 0.0}
    assert agg.order == ("b", "a", "c", "d", "e")
    assert agg.top(2) == (["b", "a"], ["c", "d", "e"])


def test_borda_tie_breaks() -> None:
    # x and y both 3 points: y is in two lists, x in one -> y first.
    agg = borda([["x", "q"], ["q", "y"], ["z", "y"]], k=2)
    assert agg.scores["x"] == 2 and agg.scores["y"] == 2
    assert agg.order.index("y") < agg.order.index("x")
    with pytest.raises(ConfigError):
        borda([["a", "a"]])


def _neg_loglik(theta: np.ndarray, games: list[tuple[int, int, float]], prior: float) -> float:
    # theta = log strengths; augmented with `prior` wins and losses against a reference (0).
    total = 0.0
    for i, j, w in games:
        d = theta[i] - theta[j]
        total += w * np.logaddexp(0, -d) + (1 - w) * np.logaddexp(0, d)
    for t in theta:
        total += prior * (np.logaddexp(0, -t) + np.logaddexp(0, t))
    return float(total)


def _oracle(prefs: list[Preference], items: list[str], prior: float) -> dict[str, float]:
    index = {x: i for i, x in enumerate(items)}
    games = [(index[p.a], index[p.b], {"a": 1.0, "b": 0.0, "tie": 0.5}[p.winner]) for p in prefs]
    res = minimize(_neg_loglik, np.zeros(len(items)), args=(games, prior), method="BFGS", tol=1e-12)
    theta = res.x
    if prior == 0:
        theta = theta - theta.mean()
    return {x: float(theta[index[x]]) for x in items}


@pytest.mark.parametrize("seed", range(5))
def test_bradley_terry_matches_scipy(seed: int) -> None:
    rng = random.Random(seed)
    items = [f"d{i}" for i in range(6)]
    truth = {x: rng.gauss(0, 1) for x in items}
    prefs = []
    for a, b in itertools.combinations(items, 2):
        for _ in range(rng.randint(0, 3)):
            p = 1 / (1 + np.exp(truth[b] - truth[a]))
            u = rng.random()
            prefs.append(
                Preference(a, b, "tie" if u < 0.1 else ("a" if u < 0.1 + 0.9 * p else "b"))
            )
    agg = bradley_terry(prefs, universe=items, prior=0.5)
    oracle = _oracle(prefs, items, 0.5)
    for x in items:
        assert agg.scores[x] == pytest.approx(oracle[x], abs=1e-5)


def test_bradley_terry_plain_mle_on_connected_graph() -> None:
    # A cycle of wins plus extra results: strongly connected, so the MLE exists.
    prefs = [
        Preference("a", "b", "a"),
        Preference("b", "c", "a"),
        Preference("c", "a", "a"),
        Preference("a", "b", "a"),
        Preference("a", "c", "a"),
        Preference("b", "c", "tie"),
    ]
    agg = bradley_terry(prefs, prior=0.0)
    oracle = _oracle(prefs, ["a", "b", "c"], 0.0)
    for x in "abc":
        assert agg.scores[x] == pytest.approx(oracle[x], abs=1e-5)
    assert agg.order[0] == "a"
    with pytest.raises(ConfigError, match="never"):
        bradley_terry([Preference("a", "b", "a")], prior=0.0)


def test_bradley_terry_recovers_consistent_order() -> None:
    order = [f"d{i}" for i in range(8)]
    prefs = [Preference(order[i], order[j], "a") for i, j in itertools.combinations(range(8), 2)]
    agg = bradley_terry(prefs, universe=["unseen"])
    assert [x for x in agg.order if x != "unseen"] == order
    assert agg.scores["unseen"] == pytest.approx(0.0, abs=1e-8)
    top, _rest = agg.top(3)
    assert top == order[:3]


def test_bradley_terry_rejects_bad_input() -> None:
    with pytest.raises(ConfigError):
        bradley_terry([Preference("a", "a", "a")])
    with pytest.raises(ConfigError):
        bradley_terry([Preference("a", "b", "left")])  # type: ignore[arg-type]
    assert bradley_terry([]).order == ()
