"""The noise-robust modifier (labeling.robust): combining votes, cost for a consistent assessor,
recovery under flips, replay purity, undo, the progress bound, and how the session shows repeats."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from labeling.heap import Compare, HeapTopK
from labeling.middleware import with_pair_cache
from labeling.robust import LEAD, MAX_VOTES, combine, robust, settled, votes_needed
from labeling.session import open_session
from labeling.simulation import Assessor, compare_strategies, run_strategy
from labeling.strategies import STRATEGIES, strategy_names
from labeling.types import PairAnswer

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
    assert combine([None, None]) == (None, 2)  # two ties: settled as a tie
    assert combine(["a", None, "b"]) == ("a", 0)
    assert not settled(["a"]) and settled(["a", "a"]) and settled(["a", "b", "a", "a"])
    assert settled(["a", "b", "a", "b", None])  # MAX_VOTES reached
    assert (LEAD, MAX_VOTES) == (2, 5)
    assert votes_needed(["a"]) == 1 and votes_needed(["a", "b"]) == 2
    assert votes_needed(["a", "a"]) == 0 and votes_needed(["a", "b", "a", "b"]) == 1


def test_registered_as_a_modifier_of_every_base():
    names = strategy_names()
    for base in BASES:
        assert f"{base}+robust" in names
    opened = open_session("topk", _docs(6), k=3, seed=1, options={"strategy": "heap+robust"})
    assert type(opened.state).__name__ == "RobustHeapTopK"
    assert robust(HeapTopK) is robust(HeapTopK)  # one class per base


@pytest.mark.parametrize("base", BASES)
def test_consistent_cost_is_base_with_cache_plus_one_confirmation_per_dependency(base):
    """The stated overhead: a consistent assessor pays the base's questions (pair cache on)
    plus exactly one confirmation per dependency, and there are fewer dependencies than
    base questions."""
    cls = robust(STRATEGIES[base])
    for seed in range(15):
        docs = _docs(30)
        order = docs[:]
        random.Random(seed).shuffle(order)
        _, _, base_cost = run_strategy(STRATEGIES[base], order, 6, _consistent(docs, seed))
        strategy = cls(order, 6)
        assessor = _consistent(docs, seed)
        gen = strategy.run()
        asked = 0
        try:
            q = next(gen)
            while True:
                asked += 1
                q = gen.send(q.a if assessor.prefers(q.a, q.b) else q.b)
        except StopIteration as stop:
            top, _ = stop.value
        assert top == assessor.true_topk(6)
        assert strategy.reruns == 0
        assert strategy.dependencies is not None
        assert asked == base_cost + len(strategy.dependencies)
        assert len(strategy.dependencies) < base_cost


def test_flipping_assessor_recovers_the_truth_more_often_than_the_heap():
    """Same documents, orders and noise seeds for both (common random numbers); the gap is a
    paired sign test on κ-NDCG@5, computed here."""
    from app.commands.simulate import _kappa_ndcg

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
def test_replaying_any_prefix_gives_the_same_state_and_undo_is_replay(
    n, k, seed, base, bits, data
):
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
