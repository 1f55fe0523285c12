"""One budget for a whole campaign, traced by hand: which (query, document) is judged next."""

from __future__ import annotations

import pytest

from labeling.study.campaign_order import campaign_order
from labeling.study.campaign_pools import simulate_pooling

# Query q1's runs find two relevant documents (a, b); q2's runs find none.
RUNS = {"R1": {"q1": ["a", "b"], "q2": ["x", "y"]}, "R2": {"q1": ["c"], "q2": ["z"]}}
QRELS = {"q1": {"a": 1, "b": 2, "c": 0}, "q2": {"x": 0}}


def test_maxmean_over_the_campaign() -> None:
    order = campaign_order(RUNS, QRELS, "maxmean")
    # Every arm at 1/2: q1 (earlier query), R1 (earlier run): a, relevant (R1 at 2/3); q1 again
    # (2/3 > q2's 1/2): b, relevant; R1 is exhausted, R2 at 1/2 ties q2's 1/2: q1 (earlier)
    # gives c, not relevant; q1 is done. q2: R1 x (not: 1/3), R2 (1/2) z (not: 1/3); tie: R1 y.
    assert [(q, d) for q, d, _ in order.order] == [
        ("q1", "a"), ("q1", "b"), ("q1", "c"), ("q2", "x"), ("q2", "z"), ("q2", "y"),
    ]  # fmt: skip
    assert [rel for _, _, rel in order.order] == [True, True, False, False, False, False]
    assert order.pool_size == {"q1": 3, "q2": 3}
    assert order.relevant_in_pool == {"q1": 2, "q2": 0}
    assert order.prefix(2) == {"q1": [("a", True), ("b", True)], "q2": []}


def test_move_to_front_over_the_campaign_stays_while_relevant() -> None:
    order = campaign_order(RUNS, QRELS, "mtf")
    # q1/R1 gives a (relevant: stay), b (relevant, R1 exhausted); q1/R2 at priority 0 ties q2's
    # 0: q1 (earlier) gives c (not: −1); q2/R1 x (not: −1), q2/R2 z (−1), q2/R1 y.
    assert [d for _, d, _ in order.order] == ["a", "b", "c", "x", "z", "y"]


def test_depth_over_the_campaign_takes_the_queries_in_turns() -> None:
    order = campaign_order(RUNS, QRELS, "depth")
    # Fused orders: q1 a (1/61), c (1/61, doc id), b (1/62); q2 x, z, y. Each query's next
    # document when its judged share is the lowest (ties: the earlier query).
    assert [d for _, d, _ in order.order] == ["a", "x", "c", "z", "b", "y"]
    per_query = simulate_pooling(RUNS, QRELS, "depth", None)
    for q, sim in per_query.queries.items():
        assert [d for d, _ in sim.judged] == [d for qq, d, _ in order.order if qq == q]


def test_queries_without_qrels_are_left_out() -> None:
    order = campaign_order({"R": {"q1": ["a"], "q9": ["b"]}}, {"q1": {"a": 1}}, "maxmean")
    assert order.order == (("q1", "a", True),)
    with pytest.raises(KeyError):
        order.prefix(1)["q9"]
