"""Hedge pooling (Aslam, Pavlu, Savell, CIKM 2003) traced by hand: the rank values, the weights
after a judgment, which document is judged next, and Hedge over a whole campaign."""

from __future__ import annotations

import math

import numpy as np
import pytest

from labeling.errors import ConfigError
from labeling.study.campaign_order import campaign_order
from labeling.study.campaign_pools import (
    Hedge,
    free_value,
    rank_value,
    select_pool,
    simulate_pooling,
)

# Two runs over a pool of N = 4 documents: A ranks a, b, c; B ranks c, d, a.
RUNS = {"A": ["a", "b", "c"], "B": ["c", "d", "a"]}
L3 = math.log(4 / 3) / math.log(4)  # ℓ(3) = ln(4/3)/ln 4 ≈ 0.2075; ℓ(1) = 1, ℓ(2) = 1/2


def _order(relevant: set[str]) -> list[str]:
    hedge, out = Hedge(RUNS), []
    while (doc := hedge.next_document()) is not None:
        hedge.record(doc, doc in relevant)
        out.append(doc)
    return out


def test_rank_values_by_hand() -> None:
    assert [rank_value(4, r) for r in (1, 2, 4)] == [1.0, 0.5, 0.0]
    assert rank_value(4, 3) == pytest.approx(L3) and rank_value(1, 1) == 1.0
    # A run of length 3 in a pool of 4 leaves rank 4 free (ℓ = 0); of length 1, ranks 2, 3, 4.
    assert free_value(4, 3) == pytest.approx(0.0, abs=1e-15) and free_value(4, 4) == 0.0
    assert free_value(4, 1) == pytest.approx((0.5 + L3 + 0.0) / 3)
    assert free_value(1, 0) == 1.0
    # The pool in fused order a, c, b, d; equal weights: the mean of the runs' values.
    # a: A rank 1, B rank 3; c: A 3, B 1; b: A 2, B lacks it (free rank 4); d: the mirror.
    hedge = Hedge(RUNS)
    expected = [(1 + L3) / 2, (L3 + 1) / 2, 0.25, 0.25]
    np.testing.assert_allclose(hedge.scores(), expected, atol=1e-12)


def test_first_judgment_reweights_the_runs() -> None:
    hedge = Hedge(RUNS)
    # Equal weights: a and c both score (1 + ℓ(3))/2; the fused order (a, c: 1/61 + 1/63;
    # equal best rank; doc id) puts a first.
    assert hedge.next_document() == "a"
    hedge.record("a", True)
    # loss 1 − ℓ: A 0, B 1 − ℓ(3); w ∝ (1, 0.1^(1 − ℓ(3)))
    b = 0.1 ** (1 - L3)
    np.testing.assert_allclose(hedge.weights, [1 / (1 + b), b / (1 + b)], rtol=1e-12)
    assert hedge.best_value() == pytest.approx(2 / 3)  # the query's rate: (1 + 1)/(2 + 1)


def test_judging_order_follows_the_runs_that_find_relevant_documents() -> None:
    # a relevant: A ≈ 0.861 → b (0.431) before c (0.318) and d (0.069); b not relevant
    # (loss A ½) leaves A ≈ 0.662 → c (0.475) before d (0.169).
    assert _order({"a"}) == ["a", "b", "c", "d"]
    # a not relevant: B ≈ 0.861 → c (0.890); c relevant: B ≈ 0.975 → d (0.487) before b.
    assert _order({"c"}) == ["a", "c", "d", "b"]


def test_hedge_is_deterministic_and_learns_from_judgments_made_elsewhere() -> None:
    assert _order({"c"}) == _order({"c"})
    hedge = Hedge(RUNS)
    hedge.record("c", True)  # judged elsewhere (say a finished task): B gains
    # B ≈ 0.861: d (B's rank 2: 0.431) before a (A's rank 1, B's rank 3: 0.318)
    assert hedge.next_document() == "d"
    hedge.record("zzz", True)  # outside the pool: remembered, no effect on the weights
    assert hedge.next_document() == "d"
    with pytest.raises(ConfigError):
        Hedge(RUNS, beta=1.0)


def test_hedge_in_the_simulation_and_the_service_selection() -> None:
    sim = simulate_pooling({n: {"q": r} for n, r in RUNS.items()}, {"q": {"c": 1}}, "hedge", 2)
    assert sim.queries["q"].judged == (("a", False), ("c", True))
    # Without feedback every pick counts as not relevant: a (A loses), then c (B's rank 1)
    picks = select_pool(RUNS, "hedge", None, budget=2)
    assert picks.picks == ("a", "c")


def test_hedge_over_the_campaign_moves_to_the_query_that_gives() -> None:
    runs = {"R1": {"q1": ["a", "b"], "q2": ["x", "y"]}, "R2": {"q1": ["b", "a"], "q2": ["y", "x"]}}
    qrels = {"q1": {}, "q2": {"x": 1, "y": 1}}
    order = campaign_order(runs, qrels, "hedge")
    # Both queries at 1/2: q1 (earlier) gives a, not relevant (q1 at 1/3); q2 (1/2) gives x,
    # relevant (2/3), then y; q1's b last.
    expected = [("q1", "a"), ("q2", "x"), ("q2", "y"), ("q1", "b")]
    assert [(q, d) for q, d, _ in order.order] == expected
    # Discounted counts: after two relevant judgments q2's rate is (1 + 1.9)/(2 + 1.9):
    # the first counts 0.9 after the second.
    hedge = Hedge({"R": ["x", "y", "z"]})
    hedge.record("x", True)
    hedge.record("y", True)
    assert hedge.best_value() == pytest.approx((1 + 1.9) / (2 + 1.9))
