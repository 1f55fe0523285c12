"""Hand-checked traces of the tournament and insertion strategies (docs/protocols.md).

The example is the heap's worked trace: relevance d1 = 5, d2 = 1, d3 = 7, d4 = 3, d5 = 8,
d6 = 2, d7 = 6, d8 = 4, order d1 … d8, k = 3 (the heap asks 14 questions, 12 with the cache).
Every question below was worked out by hand from the module docstrings.
"""

from __future__ import annotations

import pytest

from labeling.protocol.pair_cache import with_pair_cache
from labeling.protocol.session import open_session
from labeling.strategies.insertion import InsertionTopK, mean_search, search_depths, worst_search
from labeling.strategies.prior_tournament import (
    PriorTournamentTopK,
    huffman_shape,
    leaf_depths,
    leaf_weights,
)
from labeling.strategies.registry import lower_bound
from labeling.strategies.tournament import TournamentTopK, mean_replay_cost
from labeling.study.simulation import Assessor, run_session

VALUES = {"d1": 5, "d2": 1, "d3": 7, "d4": 3, "d5": 8, "d6": 2, "d7": 6, "d8": 4}
ORDER = list(VALUES)


def calls(cls, order, values, k, cache=False):
    """(questions as (a, b) pairs, top, rest) of the bare strategy against a value oracle."""
    protocol = cls(order, k).run()
    if cache:
        protocol = with_pair_cache(protocol)
    asked = []
    try:
        q = next(protocol)
        while True:
            asked.append((q.a, q.b))
            q = protocol.send(q.a if values[q.a] > values[q.b] else q.b)
    except StopIteration as stop:
        top, rest = stop.value
    return asked, top, rest


def test_tournament_trace():
    asked, top, rest = calls(TournamentTopK, ORDER, VALUES, 3)
    assert asked == [
        # Build, nodes 6 … 0 (leaves 7 … 14 hold d1 … d8).
        ("d7", "d8"),  # node 6 -> d7
        ("d5", "d6"),  # node 5 -> d5
        ("d3", "d4"),  # node 4 -> d3
        ("d1", "d2"),  # node 3 -> d1
        ("d5", "d7"),  # node 2 -> d5
        ("d1", "d3"),  # node 1 -> d3
        ("d3", "d5"),  # node 0 -> d5: the best
        # d5 out: node 5 takes d6 without a question; node 2, then the root.
        ("d6", "d7"),  # -> d7
        ("d3", "d7"),  # -> d3: the second
        # d3 out: node 4 takes d4 without a question; node 1, then the root.
        ("d1", "d4"),  # -> d1
        ("d1", "d7"),  # -> d7: the third; m = 3 are out, so no replay follows
    ]
    assert top == ["d5", "d3", "d7"]
    assert rest == ["d1", "d2", "d4", "d6", "d8"]  # input order
    # The worst case n − 1 + (m − 1)(⌈log2 n⌉ − 1) = 7 + 2·2 = 11 = lower_bound(8, 3).
    assert len(asked) == 11 == lower_bound(8, 3)
    assert calls(TournamentTopK, ORDER, VALUES, 3, cache=True)[0] == asked


def test_insertion_trace():
    asked, top, rest = calls(InsertionTopK, ORDER, VALUES, 3)
    assert asked == [
        ("d2", "d1"),  # fill: [d1, d2]
        ("d3", "d2"),  # slots 0..2, mid 1: above d2
        ("d3", "d1"),  # mid 0: above d1 -> [d3, d1, d2]
        ("d4", "d2"),  # gate: d4 beats d2, which leaves
        ("d4", "d1"),  # slots 0..2 of [d3, d1], mid 1: below d1 -> [d3, d1, d4]
        ("d5", "d4"),  # gate: d4 leaves
        ("d5", "d1"),  # mid 1: above d1
        ("d5", "d3"),  # mid 0: above d3 -> [d5, d3, d1]
        ("d6", "d1"),  # gate lost: d6 to the rest
        ("d7", "d1"),  # gate: d1 leaves
        ("d7", "d3"),  # mid 1: below d3 -> [d5, d3, d7]
        ("d8", "d7"),  # gate lost
    ]
    assert top == ["d5", "d3", "d7"]
    assert rest == ["d2", "d4", "d6", "d1", "d8"]  # eviction and dismissal order
    assert calls(InsertionTopK, ORDER, VALUES, 3, cache=True)[0] == asked


@pytest.mark.parametrize(
    ("cls", "expected"),
    [
        # n = 2 < k = 3, e = 2 then g = 5: one question; the top is all of them, in order.
        (TournamentTopK, ([("e", "g")], ["g", "e"], [])),
        (InsertionTopK, ([("g", "e")], ["g", "e"], [])),
    ],
)
def test_fewer_documents_than_k(cls, expected):
    assert calls(cls, ["e", "g"], {"e": 2, "g": 5}, 3) == expected


@pytest.mark.parametrize("cls", [TournamentTopK, InsertionTopK])
def test_one_document_needs_no_question(cls):
    assert calls(cls, ["a"], {"a": 1}, 3) == ([], ["a"], [])


def test_n_equals_k_sorts_everything():
    values = {"a": 1, "b": 2, "c": 3}
    # Tournament: leaves 2, 3, 4 = a, b, c; node 1 plays b-c, the root (node 1's winner on
    # the left) c-a; c out: node 1 takes b without a question, the root plays b-a; b out: a
    # is left alone.
    assert calls(TournamentTopK, ["a", "b", "c"], values, 3) == (
        [("b", "c"), ("c", "a"), ("b", "a")],
        ["c", "b", "a"],
        [],
    )
    # Insertion: b vs a gives [b, a]; then c vs a (mid 1) and c vs b (mid 0).
    assert calls(InsertionTopK, ["a", "b", "c"], values, 3) == (
        [("b", "a"), ("c", "a"), ("c", "b")],
        ["c", "b", "a"],
        [],
    )


@pytest.mark.parametrize("name", ["tournament", "insertion", "prior"])
def test_session_counts_on_the_trace(name):
    """Through the session (seeded order replaced by initial_order): the same counts."""
    s = open_session(
        "topk",
        ORDER,
        k=3,
        seed=0,
        options={"strategy": name, "initial_order": ORDER},
    )
    run = run_session(s, Assessor({d: float(v) for d, v in VALUES.items()}))
    assert run.result.top == ["d5", "d3", "d7"]
    assert run.judgments == {"tournament": 11, "insertion": 12, "prior": 11}[name]


def test_search_costs_by_hand():
    # Slots 0..2 (two documents): mid 1 first; the upper half (slots 0, 1) needs one more.
    assert search_depths(3) == 2 + 2 + 1 and mean_search(3) == pytest.approx(5 / 3)
    assert [worst_search(s) for s in (1, 2, 3, 4, 5, 8, 9)] == [0, 1, 2, 2, 3, 3, 4]
    # 10 slots: 6 reached in 3 questions, 4 in 4.
    assert search_depths(10) == 6 * 3 + 4 * 4


def test_replay_cost_model_by_hand():
    # 3 leaves: one at depth 1 (no question), two at depth 2 (one each): mean 2/3.
    assert mean_replay_cost(3) == pytest.approx(2 / 3)
    assert mean_replay_cost(1) == 0 and mean_replay_cost(2) == 0
    # 8 leaves, all at depth 3: two questions each.
    assert mean_replay_cost(8) == 2
    # 50 leaves: 36 at depth 6 (5 questions), 14 at depth 5 (4 questions).
    assert mean_replay_cost(50) == pytest.approx((36 * 5 + 14 * 4) / 50)


def test_prior_shape_by_hand():
    """Weights for n = 8, k = 3: ⌊2^20·27 / (27 + i³)⌋. Huffman merges, lightest first:
    leaves 6+7 -> node 8, 5+8 -> 9, 4+9 -> 10, 3+10 -> 11, 1+2 -> 12, 0+11 -> 13, then
    13+12 -> the root 14 (the subtree with the earlier first position on the left)."""
    assert leaf_weights(8, 3)[:4] == [1048576, 1011126, 808901, 524288]
    children, parent = huffman_shape(8, 3)
    assert children == ((6, 7), (5, 8), (4, 9), (3, 10), (1, 2), (0, 11), (13, 12))
    assert parent[14] == -1 and parent[0] == 13 and parent[7] == 8
    assert leaf_depths(8, 3) == (2, 2, 2, 3, 4, 5, 6, 6)


def test_prior_trace():
    asked, top, rest = calls(PriorTournamentTopK, ORDER, VALUES, 3)
    assert asked == [
        # Build, nodes 8 … 14 (leaf i holds the (i+1)-th document of the order).
        ("d7", "d8"),  # node 8 -> d7
        ("d6", "d7"),  # node 9 -> d7
        ("d5", "d7"),  # node 10 -> d5
        ("d4", "d5"),  # node 11 -> d5
        ("d2", "d3"),  # node 12 -> d3
        ("d1", "d5"),  # node 13 -> d5
        ("d5", "d3"),  # root -> d5: the best
        # d5 out: node 10 takes d7 without a question; nodes 11, 13 and the root replay.
        ("d4", "d7"),
        ("d1", "d7"),
        ("d7", "d3"),  # -> d3: the second
        # d3 out: node 12 takes d2 without a question; the root replays.
        ("d7", "d2"),  # -> d7: the third
    ]
    assert top == ["d5", "d3", "d7"]
    assert rest == ["d1", "d2", "d4", "d6", "d8"]  # input order
    assert calls(PriorTournamentTopK, ORDER, VALUES, 3, cache=True)[0] == asked


def test_prior_progress_by_hand():
    """At the first question: 7 build matches, then 2 replays; the bound adds the two largest
    leaf depths (6 + 6), the estimate twice the mean depth (30 / 8)."""
    state = PriorTournamentTopK(ORDER, 3)
    assert state.max_remaining() == 7 + 12
    assert state.expected_remaining(cache=True) == pytest.approx(7 + 2 * 30 / 8)
    protocol = state.run()
    q = next(protocol)
    for _ in range(7):  # the build
        q = protocol.send(q.a if VALUES[q.a] > VALUES[q.b] else q.b)
    # Pending: node 11 (d4 vs d7) of the first replay; node 13 and the root follow (2 more);
    # one replay is left, at most the largest cost of a leaf still in the tree: leaf 7 (d8)
    # has non-empty siblings at nodes 8, 9, 11, 13 and 14, but node 10's other child (leaf 4,
    # d5) is empty now: 5.
    assert (q.a, q.b) == ("d4", "d7") and state.phase == "select"
    assert state.max_remaining() == 3 + 5
