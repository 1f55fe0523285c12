"""Properties every judging strategy has (hypothesis, and exhaustively for small n).

For any consistent oracle and any n, k (n < k, n = k and n = 1 included): the top is the true
top-k in true order; replaying any prefix of the log rebuilds the same state and pending
question; undo equals replay without the last answer; the progress bound never promises fewer
questions than a consistent assessor can still need (checked against the worst over every
consistent truth for n <= 5) and "about N left" never fewer than are certain to come; the pair
cache never changes a consistent result; presentation is seeded as for the heap.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labeling.errors import InvalidAnswer
from labeling.protocol.seeding import shows_swapped
from labeling.protocol.session import open_session
from labeling.protocol.types import PairAnswer
from labeling.strategies.registry import STRATEGIES, lower_bound
from labeling.study.simulation import Assessor, run_session

NAMES = list(STRATEGIES)
SETTINGS = settings(max_examples=40, deadline=None)


@st.composite
def cases(draw, max_n=30):
    name = draw(st.sampled_from(NAMES))
    n = draw(st.integers(1, max_n))
    k = draw(st.integers(1, 12))
    # Scores with repeats: the oracle breaks equal scores by its seed (still a total order).
    scores = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    seed = draw(st.integers(0, 2**31))
    cache = draw(st.booleans())
    docs = [f"d{i}" for i in range(n)]
    return name, docs, dict(zip(docs, map(float, scores), strict=True)), k, seed, cache


def options(name, cache=True, **extra):
    return {"strategy": name, "pair_cache": cache, **extra}


def play(name, docs, scores, k, seed, cache, oracle_seed=0):
    """Run to the end; returns the session, the oracle and, per question, its progress."""
    oracle = Assessor(scores, seed=oracle_seed)
    s = open_session("topk", docs, k=k, seed=seed, options=options(name, cache))
    trail = []
    while not s.done:
        trail.append(s.progress())
        s.submit(oracle.answer(s))
    return s, oracle, trail


@SETTINGS
@given(cases())
def test_exact_top_k_in_true_order_and_top_beats_rest(case):
    name, docs, scores, k, seed, cache = case
    s, oracle, _ = play(name, docs, scores, k, seed, cache)
    r = s.result()
    assert r.top == oracle.true_topk(k)
    assert sorted(r.top + r.rest) == sorted(docs) and len(r.top) == min(k, len(docs))
    for t, f in itertools.product(r.top, r.rest):
        assert oracle.rank[t] < oracle.rank[f]
    assert not any(p.contradicted for p in r.implied_pairs())


@SETTINGS
@given(cases(max_n=20), st.data())
def test_replaying_a_prefix_rebuilds_state_and_pending_and_undo_is_replay(case, data):
    name, docs, scores, k, seed, cache = case
    s, _, _ = play(name, docs, scores, k, seed, cache)
    log = s.answers
    cut = data.draw(st.integers(0, len(log)))
    live = open_session("topk", docs, k=k, seed=seed, options=options(name, cache))
    for answer in log[:cut]:
        live.submit(answer)
    replayed = open_session(
        "topk", docs, k=k, seed=seed, options=options(name, cache), answers=log[:cut]
    )
    assert vars(replayed.state) == vars(live.state)
    assert replayed.pending == live.pending and replayed.progress() == live.progress()
    assert replayed.judged == live.judged
    if cut:
        # Undo: the log without its last answer is the session one answer earlier.
        undone = open_session(
            "topk", docs, k=k, seed=seed, options=options(name, cache), answers=log[: cut - 1]
        )
        before = open_session("topk", docs, k=k, seed=seed, options=options(name, cache))
        for answer in log[: cut - 1]:
            before.submit(answer)
        assert undone.pending == before.pending and vars(undone.state) == vars(before.state)
        assert undone.pending is not None and undone.pending.seq == cut - 1


@SETTINGS
@given(cases())
def test_progress_bounds_the_run_and_the_estimate_stays_inside(case):
    name, docs, scores, k, seed, cache = case
    s, _, trail = play(name, docs, scores, k, seed, cache)
    total = len(s.answers)
    for asked, p in enumerate(trail):
        assert p.judgments == asked and not p.done
        assert total - asked <= p.max_remaining  # never under-promises on this run
        assert 1.0 <= p.expected_remaining <= p.max_remaining
    assert s.progress().done and s.progress().max_remaining == 0


@SETTINGS
@given(cases())
def test_pair_cache_never_changes_a_consistent_result(case):
    name, docs, scores, k, seed, _ = case
    on, _, _ = play(name, docs, scores, k, seed, True)
    off, _, _ = play(name, docs, scores, k, seed, False)
    assert (on.result().top, on.result().rest) == (off.result().top, off.result().rest)
    assert on.result().judgments <= off.result().judgments


@pytest.mark.parametrize("name", ["tournament", "insertion", "prior"])
@SETTINGS
@given(case=cases())
def test_tournament_and_insertion_never_repeat_a_pair(name, case):
    """Documented in their modules: the cache never answers their questions."""
    _, docs, scores, k, seed, _ = case
    s, _, _ = play(name, docs, scores, k, seed, False)
    pairs = [frozenset((j.a, j.b)) for j in s.result().judged]
    assert len(pairs) == len(set(pairs))


@pytest.mark.parametrize("name", NAMES)
def test_bound_at_the_start_is_the_documented_worst_case(name):
    """The tournament's bound at the start is its worst case ``n − 1 + (m − 1)(⌈log2 n⌉ − 1)``,
    which is the lower_bound formula itself at the reference sizes."""
    for n, k in [(1, 3), (2, 3), (3, 3), (8, 3), (50, 10), (100, 10), (200, 20)]:
        docs = [f"d{i:03d}" for i in range(n)]
        bound = open_session("topk", docs, k=k, seed=1, options=options(name)).progress()
        if name == "tournament" and n > 1:
            assert bound.max_remaining == n - 1 + (min(k, n) - 1) * ((n - 1).bit_length() - 1)
            if (n, k) in [(50, 10), (100, 10), (200, 20)]:
                assert bound.max_remaining == lower_bound(n, k)
        if n == 1:
            assert bound.done and bound.max_remaining == 0


def _all_runs(name, n, k, cache):
    """For every truth (a permutation of n documents), the run's answers and progress."""
    docs = [f"d{i}" for i in range(n)]
    opts = options(name, cache)
    runs = []
    for perm in itertools.permutations(range(n)):
        scores = {d: float(v) for d, v in zip(docs, perm, strict=True)}
        s, _, trail = play(name, docs, scores, k, seed=11, cache=cache)
        assert s.result().top == sorted(docs, key=lambda d: -scores[d])[:k]
        runs.append((tuple(s.answers), trail))
    return docs, opts, runs


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("cache", [True, False])
def test_bound_covers_the_worst_consistent_assessor_and_estimate_the_certain(name, cache):
    """Exhaustive for n <= 5: at every reachable state (a log prefix), max_remaining is at
    least the most questions any consistent truth agreeing with that prefix still needs, and
    ⌈expected_remaining⌉ at least the fewest (the questions certain to come)."""
    for n in range(1, 6):
        for k in range(1, n + 2):
            _, _, runs = _all_runs(name, n, k, cache)
            worst: dict[tuple, int] = {}
            fewest: dict[tuple, int] = {}
            shown: dict[tuple, tuple[float, int]] = {}
            for answers, trail in runs:
                for asked, p in enumerate(trail):
                    prefix = answers[:asked]
                    left = len(answers) - asked
                    worst[prefix] = max(worst.get(prefix, 0), left)
                    fewest[prefix] = min(fewest.get(prefix, left), left)
                    assert shown.setdefault(prefix, (p.expected_remaining, p.max_remaining)) == (
                        p.expected_remaining,
                        p.max_remaining,
                    )
            for prefix, (expected, bound) in shown.items():
                assert bound >= worst[prefix], (n, k, prefix)
                assert math.ceil(expected - 1e-9) >= fewest[prefix], (n, k, prefix)


@pytest.mark.parametrize("name", NAMES)
def test_presentation_is_seeded_as_for_the_heap(name):
    docs = [f"d{i}" for i in range(14)]
    scores = {d: float((5 * i) % 14) for i, d in enumerate(docs)}
    s, _, _ = play(name, docs, scores, 4, seed=99, cache=True)
    posed = [j for j in s.result().judged if not j.cached]
    assert len(posed) == len(s.answers)
    for seq, (j, answer) in enumerate(zip(posed, s.answers, strict=True)):
        shown = (j.b, j.a) if shows_swapped(99, seq) else (j.a, j.b)
        assert (answer.left, answer.right) == shown


@pytest.mark.parametrize("name", NAMES)
def test_initial_order_feeds_every_strategy(name):
    """With the true order as prior, each strategy sees it: the same task with a reversed
    prior runs a different (and for insertion, costlier) set of questions."""
    docs = [f"d{i:02d}" for i in range(20)]
    scores = {d: float(20 - i) for i, d in enumerate(docs)}  # d00 best
    oracle = Assessor(scores)
    best_first = run_session(
        open_session("topk", docs, k=5, seed=3, options=options(name, initial_order=docs)),
        oracle,
    )
    worst_first = run_session(
        open_session("topk", docs, k=5, seed=3, options=options(name, initial_order=docs[::-1])),
        oracle,
    )
    assert best_first.result.top == worst_first.result.top == docs[:5]
    assert best_first.answers != worst_first.answers
    if name == "insertion":
        # The fill sorts the true top 5 by binary search: d01 1 question (vs d00), d02 1 (vs
        # d01, then no slot is left), d03 2 (vs d01, d02), d04 2 (vs d02, d03); then each of
        # the 15 others loses its one gate question.
        assert best_first.judgments == 6 + 15


@pytest.mark.parametrize("name", NAMES)
def test_ties_and_reasks_run_through_every_strategy(name):
    docs = [f"d{i}" for i in range(15)]
    scores = {d: float(i % 5) for i, d in enumerate(docs)}
    opts = options(name, allow_ties=True, reask_fraction=0.25)
    s = open_session("topk", docs, k=4, seed=8, options=opts)
    run = run_session(s, Assessor(scores, seed=1, tie=0.3))
    r = run.result
    assert sorted(r.top + r.rest) == sorted(docs) and len(r.top) == 4
    assert any(a.outcome == "tie" for a in run.answers) and r.reasks > 0
    again = open_session("topk", docs, k=4, seed=8, options=opts, answers=run.answers)
    assert again.result().top == r.top


def test_not_relevant_only_at_the_insertion_gate():
    docs = [f"d{i}" for i in range(8)]
    opts = options("insertion", not_relevant=True)
    s = open_session("topk", docs, k=3, seed=2, options=opts)
    while s.state.phase == "fill":  # fill: both documents enter the list
        q = s.pending
        assert "not_relevant" not in s.allowed_outcomes and s.pending_challenger is None
        with pytest.raises(InvalidAnswer, match="not_relevant applies only"):
            s.submit(PairAnswer(q.left, q.right, "not_relevant"))
        s.submit(PairAnswer(q.left, q.right, "left"))
    q = s.pending
    challenger = s.pending_challenger
    assert s.state.bracket is None and challenger == s.state.order[s.state.pos]
    assert "not_relevant" in s.allowed_outcomes
    s.submit(PairAnswer(q.left, q.right, "not_relevant"))
    assert s.state.rest[-1] == challenger and s.judged[-1].not_relevant


@pytest.mark.parametrize("name", ["tournament", "prior"])
def test_tournaments_never_offer_not_relevant(name):
    docs = [f"d{i}" for i in range(9)]
    s = open_session("topk", docs, k=3, seed=2, options=options(name, not_relevant=True))
    while not s.done:
        assert "not_relevant" not in s.allowed_outcomes and s.pending_challenger is None
        q = s.pending
        s.submit(PairAnswer(q.left, q.right, "right"))
