"""Pools from many runs: the depth-k union by hand, Move-to-Front and MaxMean traced step by
step on small campaigns (which document is judged next, and why), and the simulation."""

from __future__ import annotations

import pytest

from labeling.errors import ConfigError, InvalidAnswer
from labeling.study.campaign_pools import (
    AdaptivePooler,
    MaxMean,
    MoveToFront,
    cut_rankings,
    depth_pool,
    depth_pools,
    make_pooler,
    simulate_pooling,
)

# Campaign 1: three runs, relevant documents d1, d2, d4, d7.
RUNS_1 = {"R1": ["d1", "d2", "d3"], "R2": ["d4", "d1", "d5"], "R3": ["d6", "d7"]}
REL_1 = {"d1", "d2", "d4", "d7"}
# Campaign 2: MTF leaves R1 at its first non-relevant document, MaxMean does not.
RUNS_2 = {"R1": ["a", "b", "c", "d"], "R2": ["e", "f"]}
REL_2 = {"a", "b", "d", "f"}


def _step(pooler: AdaptivePooler, expected: str | None, relevant: set[str]) -> None:
    doc = pooler.next_document()
    assert doc == expected
    assert pooler.next_document() == expected  # proposing again changes nothing
    if doc is not None:
        pooler.record(doc, doc in relevant)


def test_cut_rankings_keeps_first_ranks_and_cuts() -> None:
    assert cut_rankings({"r": ["a", "b", "a", "c", "d"]}, 3) == {"r": ("a", "b", "c")}
    with pytest.raises(ConfigError):
        cut_rankings({"r": ["a"]}, 0)


def test_depth_pool_hand_example() -> None:
    runs = {"A": ["d1", "d2", "d3", "d9"], "B": ["d2", "d4", "d2", "d1"], "C": ["d5"]}
    pool = depth_pool(runs, 2)
    # depth 2: A → d1, d2; B → d2, d4; C → d5.  RRF (k = 60):
    # d2 = 1/62 + 1/61 (ranked 2 by A, 1 by B); d1 = 1/61; d5 = 1/61; d4 = 1/62
    assert [d.doc_id for d in pool] == ["d2", "d1", "d5", "d4"]  # d1/d5 tie: doc id
    by_id = {d.doc_id: d for d in pool}
    assert by_id["d2"].hits == (("A", 2), ("B", 1))
    assert by_id["d2"].fused == pytest.approx(1 / 62 + 1 / 61)
    assert by_id["d2"].best_rank == 1
    assert by_id["d1"].hits == (("A", 1),)  # B ranks d1 4th: below the cut
    assert by_id["d4"].hits == (("B", 2),)
    many = depth_pools({"A": {"q1": ["x"], "q2": ["y"]}, "B": {"q2": ["y", "z"]}}, 5)
    assert {q: [d.doc_id for d in p] for q, p in many.items()} == {
        "q1": ["x"],
        "q2": ["y", "z"],
    }
    assert many["q2"][0].hits == (("A", 1), ("B", 1))


def test_move_to_front_trace_campaign_1() -> None:
    mtf = MoveToFront(RUNS_1)
    _step(mtf, "d1", REL_1)  # all priorities 0 → R1 (run order); relevant
    _step(mtf, "d2", REL_1)  # stay on R1 while relevant
    _step(mtf, "d3", REL_1)  # non-relevant: R1 priority −1, leave R1
    assert mtf.priority == {"R1": -1, "R2": 0, "R3": 0}
    _step(mtf, "d4", REL_1)  # R2 and R3 at 0 → R2 (run order); relevant
    _step(mtf, "d5", REL_1)  # R2's d1 is judged: skipped for free; d5 non-relevant → R2 −1
    _step(mtf, "d6", REL_1)  # R3 (0) → d6 non-relevant → R3 −1
    # all at −1; R1 and R2 are exhausted; R3 → d7
    _step(mtf, "d7", REL_1)
    _step(mtf, None, REL_1)
    assert mtf.judged == {d: d in REL_1 for d in ["d1", "d2", "d3", "d4", "d5", "d6", "d7"]}


def test_move_to_front_trace_campaign_2() -> None:
    mtf = MoveToFront(RUNS_2)
    for doc in ["a", "b", "c"]:  # R1 until its first non-relevant (c)
        _step(mtf, doc, REL_2)
    _step(mtf, "e", REL_2)  # R2 (priority 0 > −1); e non-relevant → R2 −1
    # R1 and R2 both at −1: the earlier run in run order, R1 → d
    _step(mtf, "d", REL_2)
    _step(mtf, "f", REL_2)  # R1 exhausted → R2
    _step(mtf, None, REL_2)


def test_maxmean_trace_campaign_2() -> None:
    mm = MaxMean(RUNS_2)
    _step(mm, "a", REL_2)  # both runs Beta mean 1/2: tie → R1 (run order); relevant
    assert mm.posterior_mean("R1") == pytest.approx(2 / 3)  # after a: (1 + 1)/(2 + 1)
    _step(mm, "b", REL_2)  # R1 2/3 > R2 1/2
    _step(mm, "c", REL_2)  # R1 3/4 > 1/2; c non-relevant
    # R1: rel 2, nonrel 1 → 3/5 = 0.6 > R2's 0.5: MaxMean stays where MTF left
    _step(mm, "d", REL_2)
    assert mm.posterior_mean("R1") == pytest.approx(4 / 6)
    _step(mm, "e", REL_2)  # R1 exhausted → R2
    _step(mm, "f", REL_2)  # R2 at 1/3 is the only open run
    _step(mm, None, REL_2)


def test_maxmean_counts_the_judged_prefix_whoever_judged_it() -> None:
    mm = MaxMean(RUNS_1)
    _step(mm, "d1", REL_1)  # tie at 1/2 → R1; relevant → R1 2/3
    _step(mm, "d2", REL_1)  # R1 3/4
    _step(mm, "d3", REL_1)  # R1 3/5 (exhausted)
    # R2 [d4, d1, d5] and R3 [d6, d7] at 1/2: tie → R2; d4 relevant. R2's judged prefix is
    # now d4, d1 (d1 judged from R1): rel 2 → 3/4
    _step(mm, "d4", REL_1)
    mm.head("R2")
    assert (mm.relevant["R2"], mm.nonrelevant["R2"]) == (2, 0)
    _step(mm, "d5", REL_1)  # R2 3/4 > R3 1/2; d5 non-relevant
    _step(mm, "d6", REL_1)  # only R3 left
    _step(mm, "d7", REL_1)
    _step(mm, None, REL_1)


def test_record_takes_judgments_made_elsewhere() -> None:
    mtf = MoveToFront(RUNS_1)
    assert mtf.next_document() == "d1"
    mtf.record("d2", True)  # judged in another task: d1 stays proposed, d2 will be skipped
    assert mtf.pending == "d1"
    mtf.record("d1", True)
    assert mtf.next_document() == "d3"
    mtf.record("d3", True)
    mtf.record("d3", True)  # the same judgment again: no-op
    with pytest.raises(InvalidAnswer, match="already judged"):
        mtf.record("d3", False)
    mm = MaxMean(RUNS_2)
    mm.record("e", True)  # R2's prefix is now [e] relevant: 2/3 beats R1's 1/2
    assert mm.next_document() == "f"


def test_make_pooler_refuses_unknown_methods() -> None:
    with pytest.raises(ConfigError, match="unknown pooling method"):
        make_pooler("random", RUNS_1)  # type: ignore[arg-type]


RUNS = {
    "A": {"q1": ["d1", "d2", "d3", "d4"], "q2": ["e1", "e2"], "q9": ["z"]},
    "B": {"q1": ["d5", "d1", "d6"], "q2": ["e3", "e1"]},
}
QRELS = {"q1": {"d1": 2, "d2": 1, "d3": 0, "d6": 1, "d7": 1}, "q2": {"e2": 1, "e3": 0}}


@pytest.mark.parametrize("method", ["depth", "mtf", "maxmean", "hedge"])
def test_simulation_without_budget_judges_the_whole_pool(method: str) -> None:
    sim = simulate_pooling(RUNS, QRELS, method, None, depth=10)  # type: ignore[arg-type]
    assert set(sim.queries) == {"q1", "q2"}  # q9 has no qrels
    q1 = sim.queries["q1"]
    assert {doc for doc, _ in q1.judged} == {"d1", "d2", "d3", "d4", "d5", "d6"}
    assert q1.pool_size == 6 and q1.relevant_in_pool == 3  # d7 is relevant but not retrieved
    assert q1.relevant_found == 3
    assert q1.outside_qrels == 2  # d4 and d5 are not in the qrels: judged non-relevant
    assert sim.queries["q2"].relevant_found == 1
    assert sim.relevant_found == sim.relevant_in_pool == 4
    assert sim.judged_total == sim.pool_size == 9
    assert sim.judged_qrels()["q1"]["d1"] == 1 and sim.judged_qrels()["q1"]["d4"] == 0


def test_simulation_with_a_budget_and_depth() -> None:
    sim = simulate_pooling(RUNS, QRELS, "mtf", 2, depth=2)
    q1 = sim.queries["q1"]
    # depth 2: A → d1, d2; B → d5, d1. MTF: A first: d1 relevant, d2 relevant; budget spent
    assert q1.judged == (("d1", True), ("d2", True))
    assert q1.pool_size == 3
    assert q1.pool[0].hits == (("A", 1), ("B", 2))
    sim = simulate_pooling(RUNS, QRELS, "maxmean", 3, depth=10, relevant_from=2)
    # grade ≥ 2 only: A gives d1 (relevant: A 2/3 > B 1/2) and d2 (not: A at 2/4 = 1/2);
    # A ties B's 1/2 (B's prefix is empty: d5 unjudged) → A, run order → d3
    assert [doc for doc, _ in sim.queries["q1"].judged] == ["d1", "d2", "d3"]
    assert sim.queries["q1"].relevant_found == 1


def test_simulation_with_a_fraction_of_each_pool() -> None:
    sim = simulate_pooling(RUNS, QRELS, "depth", fraction=0.5, depth=10)
    # q1's pool has 6 documents → 3 judgments; q2's has 3 → 1.5 rounds half up to 2
    assert [len(q.judged) for q in sim.queries.values()] == [3, 2]
    assert sim.fraction == 0.5 and sim.budget is None
    with pytest.raises(ConfigError, match="either a budget or a fraction"):
        simulate_pooling(RUNS, QRELS, "mtf", 3, fraction=0.5)


def test_select_pool_without_feedback_takes_the_runs_in_turns() -> None:
    from labeling.study.campaign_pools import select_pool

    # Nothing judged: every pick counts as not relevant. MTF: R1 d1 (R1 −1), R2 d4 (R2 −1),
    # R3 d6 (R3 −1); all at −1 → R1 d2 (−2), R2: d1 judged (skipped), d5 (−2), R3 d7.
    mtf = select_pool(RUNS_1, "mtf", None)
    assert mtf.picks == ("d1", "d4", "d6", "d2", "d5", "d7", "d3")
    assert mtf.known == 0 and {d.doc_id for d in mtf.pool} == set(mtf.picks)
    # MaxMean: all at 1/2 → R1 d1 (1/3); R2 and R3 at 1/2 → R2 d4 (R2's prefix d4, d1: 1/4);
    # R3 (1/2) d6 → 1/3; R1 and R3 tie at 1/3 → R1 d2 (1/4); R3 (1/3) d7 → 1/4 exhausted;
    # R1 and R2 at 1/4 → R1 d3; R2 d5.
    assert select_pool(RUNS_1, "maxmean", None).picks == ("d1", "d4", "d6", "d2", "d7", "d3", "d5")
    assert select_pool(RUNS_1, "maxmean", None, budget=3).picks == ("d1", "d4", "d6")


def test_select_pool_follows_the_feedback_and_counts_every_pick() -> None:
    from labeling.study.campaign_pools import select_pool

    known = {d: d in REL_1 for d in ("d1", "d2", "d3")}  # R1 judged: d1, d2 relevant, d3 not
    chosen = select_pool(RUNS_1, "mtf", None, budget=5, feedback=known)
    # MTF replays R1: d1, d2 relevant (stay), d3 not (R1 −1); then R2: d4 (no judgment:
    # counted not relevant, R2 −1); R3: d6 (−1). Five picks, three of them judged already.
    assert chosen.picks == ("d1", "d2", "d3", "d4", "d6")
    assert chosen.known == 3
    depth = select_pool(RUNS_1, "depth", 1, budget=2)
    # depth 1: d1, d4, d6, all at 1/61 → doc id order; the budget keeps the first two.
    assert depth.picks == ("d1", "d4") and [d.doc_id for d in depth.pool] == ["d1", "d4", "d6"]
    with pytest.raises(ConfigError, match="budget"):
        select_pool(RUNS_1, "mtf", None, budget=0)
