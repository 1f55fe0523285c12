"""The noise-robust modifier (labeling.strategies.robust): combining votes, the risk model (against
kappa_ndcg and a brute-force rank distribution), cost for a consistent assessor, recovery under
flips, replay purity, undo, the progress bound, and how the session shows repeats."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from labeling.protocol.pair_cache import with_pair_cache
from labeling.protocol.session import open_session
from labeling.protocol.types import PairAnswer
from labeling.strategies import robust as robust_module
from labeling.strategies.base import Compare
from labeling.strategies.heap import HeapTopK
from labeling.strategies.registry import STRATEGIES, strategy_names
from labeling.strategies.robust import (
    ASSUMED_FLIP,
    combine,
    damage_table,
    robust,
    stake,
    wrong_probability,
)
from labeling.study.simulation import Assessor, compare_strategies, run_strategy
from ranking.metrics import kappa_ndcg

SETTINGS = settings(max_examples=60, deadline=None)
BASES = list(STRATEGIES)


def _docs(n: int) -> list[str]:
    return [f"x{i:02d}" for i in range(n)]


def _consistent(docs: list[str], seed: int) -> Assessor:
    scores = {d: float(i) for i, d in enumerate(docs)}
    rng = random.Random(seed)
    values = list(scores.values())
    rng.shuffle(values)
    return Assessor(dict(zip(docs, values, strict=True)), seed=seed)


def test_combine_plurality_earliest_leader_and_lead():
    assert combine(["a"]) == ("a", 1)
    assert combine(["a", "b"]) == ("a", 0)  # one dissent does not overturn the first answer
    assert combine(["a", "b", "b"]) == ("b", 1)
    assert combine(["b", "a", "a", "a"]) == ("a", 2)
    assert combine([None, None]) == (None, 2)  # two ties: a tie leading by 2
    assert combine(["a", None, "b"]) == ("a", 0)


def test_wrong_probability_is_the_posterior_under_uniform_flips():
    """Bayes with a uniform prior: after c votes for the answer and d against, the answer is
    wrong with probability p^c (1-p)^d / (p^c (1-p)^d + (1-p)^c p^d), which depends on c - d."""
    p = ASSUMED_FLIP
    for c, d in [(1, 0), (2, 0), (3, 1), (3, 0), (4, 2), (1, 1)]:
        wrong, right = p**c * (1 - p) ** d, (1 - p) ** c * p**d
        assert wrong_probability(c - d) == pytest.approx(wrong / (wrong + right), rel=1e-12)
    assert wrong_probability(1) == pytest.approx(0.1)
    assert wrong_probability(2) == pytest.approx(0.01 / 0.82)


@pytest.mark.parametrize("k", [1, 3, 10])
def test_damage_table_is_the_kappa_ndcg_loss_of_one_misplaced_document(k):
    table = damage_table(k)
    truth = np.array([k - i for i in range(k)] + [0, 0], dtype=float)  # two rest documents
    for j in range(1, k + 1):
        for p in range(1, k + 2):
            order = list(range(k + 2))
            order.insert(p - 1, order.pop(j - 1))  # the rank-j document moved to position p
            scores = np.empty(k + 2)
            scores[order] = np.arange(k + 2, 0, -1)  # position 1 gets the highest score
            expected = 1.0 - kappa_ndcg(truth[None, :], scores[None, :], at=k)[0]
            assert table[j][p] == pytest.approx(expected, abs=1e-12)
    assert table[1][1] == 0.0


def test_stake_matches_a_brute_force_rank_distribution():
    """The best of m random documents of n: enumerate every m-subset of ranks 1..n."""
    n, k = 9, 4
    table = damage_table(k)
    for m in range(1, n + 1):
        for above in (0, 2):
            for loser_pos in range(1, k + 2):
                pool = n - above
                if m > pool:
                    continue
                subsets = list(itertools.combinations(range(1, pool + 1), m))
                expected = 0.0
                for subset in subsets:
                    rank = above + min(subset)
                    if rank <= k and rank < loser_pos:
                        expected += table[rank][loser_pos] / len(subsets)
                assert stake(n, k, m, above, loser_pos) == pytest.approx(expected, abs=1e-12)
    # A loss to the document shown first: the loser belongs at position 1.
    assert stake(n, k, n, 0, k + 1) == pytest.approx(table[1][k + 1])


def test_registered_as_a_modifier_of_every_base():
    names = strategy_names()
    for base in BASES:
        assert f"{base}+robust" in names
    opened = open_session("topk", _docs(6), k=3, seed=1, options={"strategy": "heap+robust"})
    assert type(opened.state).__name__ == "RobustHeapTopK"
    assert robust(HeapTopK) is robust(HeapTopK)  # one class per base


def test_every_base_exposes_what_the_modifier_reads():
    """robust knows a base only through PairStrategy: its ``confirmation_share`` and
    ``fixed_positions()`` (the tournament's taken-out documents while it selects, else 0)."""
    docs = _docs(9)
    rank = {d: i for i, d in enumerate(docs)}
    for name, cls in STRATEGIES.items():
        assert 0.0 < cls.confirmation_share <= 1.0, name
        state = cls(docs, 4)
        gen = state.run()
        q = next(gen)
        seen = []
        try:
            while True:
                fixed = state.fixed_positions()
                if name == "tournament" and state.phase == "select":
                    assert fixed == len(state.top)
                else:
                    assert fixed == 0, (name, state.phase)
                seen.append(fixed)
                q = gen.send(q.a if rank[q.a] < rank[q.b] else q.b)
        except StopIteration:
            pass
        assert (max(seen) > 0) == (name == "tournament"), name
    assert robust(HeapTopK)(docs, 4).fixed_positions() == 0


def _drive(strategy, assessor):
    """Answer ``strategy`` with ``assessor``; (top, questions asked, re-asks)."""
    gen = strategy.run()
    asked = repeats = 0
    try:
        q = next(gen)
        while True:
            asked += 1
            repeats += q.repeat
            q = gen.send(q.a if assessor.prefers(q.a, q.b) else q.b)
    except StopIteration as stop:
        top, _ = stop.value
    return top, asked, repeats


@pytest.mark.parametrize("base", BASES)
def test_consistent_cost_is_base_with_cache_plus_the_stated_confirmations(base):
    """The stated overhead for a consistent assessor: the base's questions (pair cache on)
    plus re-asks only; no re-run; the re-asks per base question average the base's
    ``confirmation_share`` (measured at (50, 10), the progress model) within 0.1, and no pair gets
    more than MAX_VOTES votes."""
    cls = robust(STRATEGIES[base])
    shares = []
    for seed in range(12):
        docs = [f"d{i:04d}" for i in range(50)]
        order = docs[:]
        random.Random(seed).shuffle(order)
        _, _, base_cost = run_strategy(STRATEGIES[base], order, 10, _consistent(docs, seed))
        strategy = cls(order, 10)
        top, asked, repeats = _drive(strategy, _consistent(docs, seed))
        assert top == _consistent(docs, seed).true_topk(10)
        assert strategy.reruns == 0
        assert strategy.dependencies is not None
        assert asked == base_cost + repeats
        assert repeats == sum(len(v) - 1 for v in strategy.votes.values())
        assert max(len(v) for v in strategy.votes.values()) <= robust_module.MAX_VOTES
        shares.append(repeats / base_cost)
    assert np.mean(shares) == pytest.approx(STRATEGIES[base].confirmation_share, abs=0.1)


def test_flipping_assessor_recovers_the_truth_more_often_than_the_heap():
    """Same documents, orders and noise seeds for both (common random numbers); the gap is a
    paired sign test on κ-NDCG@5, computed here."""
    from app.cli.simulate import kappa_ndcg_of_runs as _kappa_ndcg

    n, k, trials = 20, 5, 80
    heap = compare_strategies("heap", "flip0.1", n, k, trials, seed=3)
    rob = compare_strategies("heap+robust", "flip0.1", n, k, trials, seed=3)
    kh, kr = _kappa_ndcg(heap, n, k), _kappa_ndcg(rob, n, k)
    better = int((kr > kh + 1e-12).sum())
    worse = int((kr < kh - 1e-12).sum())
    assert better > worse
    assert stats.binomtest(better, better + worse, 0.5, alternative="greater").pvalue < 0.01
    assert sum(t.exact for t in rob) > sum(t.exact for t in heap)
    assert kr.mean() > kh.mean()


def test_tournament_robust_meets_the_minimum_goal_at_10_percent_flips():
    """The issue's minimum at (50, 10), 10% flips, on a fixed seed set: κ-NDCG@10 ≥ 0.90 with
    at most 1.5× the judgments of the noiseless heap (measured here on the same documents),
    and a paired gain over the heap under the same flips (sign test, computed here)."""
    from app.cli.simulate import kappa_ndcg_of_runs as _kappa_ndcg

    n, k, trials = 50, 10, 150
    noiseless = compare_strategies("heap", "random", n, k, trials, seed=11)
    heap = compare_strategies("heap", "flip0.1", n, k, trials, seed=11)
    rob = compare_strategies("tournament+robust", "flip0.1", n, k, trials, seed=11)
    budget = 1.5 * np.mean([t.judgments for t in noiseless])
    assert np.mean([t.judgments for t in rob]) <= budget
    kh, kr = _kappa_ndcg(heap, n, k), _kappa_ndcg(rob, n, k)
    assert kr.mean() >= 0.90
    better, worse = int((kr > kh + 1e-12).sum()), int((kr < kh - 1e-12).sum())
    assert stats.binomtest(better, better + worse, 0.5, alternative="greater").pvalue < 1e-6


@st.composite
def sizes(draw):
    k = draw(st.integers(1, 8))
    n = draw(st.one_of(st.just(1), st.just(k), st.integers(1, 16)))
    return n, k


@SETTINGS
@given(sizes(), st.sampled_from(BASES), st.integers(0, 10_000))
def test_exact_for_any_consistent_oracle(size, base, seed):
    n, k = size
    docs = _docs(n)
    assessor = _consistent(docs, seed)
    s = open_session("topk", docs, k=k, seed=seed, options={"strategy": f"{base}+robust"})
    while not s.done:
        s.submit(assessor.answer(s))
    assert s.result().top == assessor.true_topk(k)
    assert sorted(s.result().rest) == sorted(set(docs) - set(assessor.true_topk(k)))


def _noisy_log(n, k, seed, base, bits):
    """A session of ``base+robust`` answered from ``bits`` (True = the left document), so
    that answers contradict each other and repeats overturn earlier answers."""
    docs = _docs(n)
    options = {"strategy": f"{base}+robust"}
    s = open_session("topk", docs, k=k, seed=seed, options=options)
    log: list[PairAnswer] = []
    i = 0
    while not s.done and len(log) < 400:
        q = s.pending
        left = bits[i % len(bits)]
        i += 1
        answer = PairAnswer(q.left, q.right, "left" if left else "right")
        s.submit(answer)
        log.append(answer)
    return docs, options, s, log


@SETTINGS
@given(
    st.integers(2, 12),
    st.integers(1, 5),
    st.integers(0, 1000),
    st.sampled_from(BASES),
    st.lists(st.booleans(), min_size=1, max_size=40),
    st.data(),
)
def test_replaying_any_prefix_gives_the_same_state_and_undo_is_replay(n, k, seed, base, bits, data):
    docs, options, full, log = _noisy_log(n, k, seed, base, bits)
    cut = data.draw(st.integers(0, len(log)))
    # Rebuild the prefix twice from scratch, and compare with the live session at that point.
    live = open_session("topk", docs, k=k, seed=seed, options=options)
    for answer in log[:cut]:
        live.submit(answer)
    replayed = open_session("topk", docs, k=k, seed=seed, options=options, answers=log[:cut])
    assert replayed.pending == live.pending
    assert replayed.state.votes == live.state.votes
    assert replayed.state.phase == live.state.phase
    assert replayed.progress() == live.progress()
    if cut == len(log):
        assert replayed.done == full.done and replayed.pending == full.pending
    if cut > 0:  # undo = replay without the last answer
        undone = open_session("topk", docs, k=k, seed=seed, options=options, answers=log[: cut - 1])
        before = open_session("topk", docs, k=k, seed=seed, options=options)
        for answer in log[: cut - 1]:
            before.submit(answer)
        assert undone.pending == before.pending
        assert undone.state.votes == before.state.votes


@SETTINGS
@given(sizes(), st.sampled_from(BASES), st.integers(0, 10_000))
def test_progress_bound_never_under_promises_for_a_consistent_assessor(size, base, seed):
    n, k = size
    docs = _docs(n)
    assessor = _consistent(docs, seed)
    s = open_session("topk", docs, k=k, seed=seed, options={"strategy": f"{base}+robust"})
    seen = []
    while not s.done:
        seen.append(s.progress())
        s.submit(assessor.answer(s))
    total = len(s.answers)
    for done, p in enumerate(seen):
        assert p.max_remaining >= total - done
        assert 1.0 <= p.expected_remaining <= p.max_remaining
    assert s.progress().done and s.progress().max_remaining == 0


def test_repeats_are_shown_swapped_and_pass_the_pair_cache():
    docs = _docs(20)
    assessor = Assessor({d: float(i) for i, d in enumerate(docs)}, seed=2, flip=0.2)
    s = open_session("topk", docs, k=5, seed=4, options={"strategy": "heap+robust"})
    shown: dict[frozenset[str], str] = {}
    repeats = 0
    while not s.done:
        q = s.pending
        pair = frozenset((q.left, q.right))
        if pair in shown:
            repeats += 1
            assert q.left != shown[pair]  # the other way round from the previous showing
        shown[pair] = q.left
        s.submit(assessor.answer(s))
    assert repeats > 0
    assert s.result().judgments == len(s.answers)  # every repeat was posed, none cached

    def protocol():
        first = yield Compare("a", "b")
        again = yield Compare("a", "b", repeat=True)
        cached = yield Compare("b", "a")
        return [first, again, cached], []

    gen = with_pair_cache(protocol())
    assert next(gen) == Compare("a", "b")
    assert gen.send("a") == Compare("a", "b", repeat=True)
    with pytest.raises(StopIteration) as stop:
        gen.send("b")  # the repeat's answer does not replace the cached first answer
    assert stop.value.value == (["a", "b", "a"], [])


@pytest.mark.parametrize("base", BASES)
def test_no_pair_gets_more_than_max_votes_from_a_flipping_assessor(base):
    """Close calls stop at MAX_VOTES even when the assessor keeps contradicting itself, and
    the result is still a partition of the documents with k in the top."""
    cls = robust(STRATEGIES[base])
    docs = _docs(30)
    for seed in range(8):
        order = docs[:]
        random.Random(seed).shuffle(order)
        assessor = Assessor({d: float(i) for i, d in enumerate(docs)}, seed=seed, flip=0.3)
        strategy = cls(order, 6)
        gen = strategy.run()
        try:
            q = next(gen)
            while True:
                q = gen.send(q.a if assessor.prefers(q.a, q.b) else q.b)
        except StopIteration as stop:
            top, rest = stop.value
        assert max(len(v) for v in strategy.votes.values()) <= robust_module.MAX_VOTES
        assert any(len(v) == robust_module.MAX_VOTES for v in strategy.votes.values())
        assert len(top) == 6 and sorted(top + rest) == sorted(docs)
