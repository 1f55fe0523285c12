"""Hypothesis properties of the heap protocol (docs/protocols.md#heap).

For any consistent oracle and any n, k: the top is the true top-k in true order; every top
item beats every rest item; the count never exceeds the worst-case bound (the closed form and the
session's own ``max_remaining`` at every step); every prefix replays to the same state; undo
equals replay without the last answer; the cache never changes the result.
"""

from __future__ import annotations

import itertools
import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from labeling.protocol.session import open_session
from labeling.protocol.types import PairAnswer
from labeling.strategies.heap import heap_topk, worst_case_total
from labeling.study.simulation import Assessor, run_session, simulate

SETTINGS = settings(max_examples=100, deadline=None)


@st.composite
def cases(draw, max_n=30):
    n = draw(st.integers(1, max_n))
    k = draw(st.integers(1, 12))
    # Scores with repeats: the oracle breaks equal scores by its seed (still a total order).
    scores = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    seed = draw(st.integers(0, 2**31))
    cache = draw(st.booleans())
    docs = [f"d{i}" for i in range(n)]
    return docs, dict(zip(docs, map(float, scores), strict=True)), k, seed, cache


def run(docs, scores, k, seed, cache, oracle_seed=0):
    assessor = Assessor(scores, seed=oracle_seed)
    s = open_session("topk", docs, k=k, seed=seed, options={"pair_cache": cache})
    trail = []
    while not s.done:
        p = s.progress()
        trail.append((s.pending, p.max_remaining))
        s.submit(assessor.answer(s))
    return s, assessor, trail


@SETTINGS
@given(cases())
def test_top_is_the_true_topk_in_order_and_beats_the_rest(case):
    docs, scores, k, seed, cache = case
    s, oracle, _ = run(docs, scores, k, seed, cache)
    r = s.result()
    assert r.top == oracle.true_topk(k)
    assert sorted(r.top + r.rest) == sorted(docs) and len(r.top) == min(k, len(docs))
    for t, f in itertools.product(r.top, r.rest):
        assert oracle.rank[t] < oracle.rank[f]
    assert r.kappa_labels == {**{d: k - i for i, d in enumerate(r.top)}, **dict.fromkeys(r.rest, 0)}
    assert not any(p.contradicted for p in r.implied_pairs())


@SETTINGS
@given(cases())
def test_count_never_exceeds_the_bounds(case):
    docs, scores, k, seed, cache = case
    s, _, trail = run(docs, scores, k, seed, cache)
    total = s.result().judgments
    assert total <= worst_case_total(len(docs), k)
    for asked, (_, bound) in enumerate(trail):
        assert bound >= total - asked  # the UI never promises fewer than remain


@settings(max_examples=60, deadline=None)
@given(cases(max_n=20), st.data())
def test_every_prefix_replays_and_undo_equals_shorter_replay(case, data):
    docs, scores, k, seed, cache = case
    s, _, trail = run(docs, scores, k, seed, cache)
    log = s.answers
    opts = {"pair_cache": cache}
    cut = data.draw(st.integers(0, len(log)))
    replayed = open_session("topk", docs, k=k, seed=seed, options=opts, answers=log[:cut])
    if cut < len(log):
        assert replayed.pending == trail[cut][0]
        assert replayed.progress().max_remaining == trail[cut][1]
        assert replayed.state.heap == _state_after(docs, k, seed, opts, log[:cut]).heap
    else:
        assert replayed.done and replayed.result() == s.result()
    if cut > 0:
        undone = open_session("topk", docs, k=k, seed=seed, options=opts, answers=log[: cut - 1])
        assert undone.pending == trail[cut - 1][0]
        assert undone.answers == log[: cut - 1]


def _state_after(docs, k, seed, opts, answers):
    s = open_session("topk", docs, k=k, seed=seed, options=opts)
    for a in answers:
        s.submit(a)
    return s.state


@SETTINGS
@given(cases())
def test_cache_never_changes_the_result_for_a_consistent_oracle(case):
    docs, scores, k, seed, _ = case
    with_cache, _, _ = run(docs, scores, k, seed, True)
    without, _, _ = run(docs, scores, k, seed, False)
    a, b = with_cache.result(), without.result()
    assert (a.top, a.rest) == (b.top, b.rest)
    assert a.judgments <= b.judgments and a.calls == b.calls == b.judgments


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 7), st.integers(1, 8), st.integers(0, 10**6))
def test_bare_protocol_against_brute_force_over_permutations(n, k, seed):
    """Small n: every input order gives the true top-k (brute force over all orders)."""
    rng = random.Random(seed)
    values = {f"x{i}": v for i, v in enumerate(rng.sample(range(100), n))}
    truth = sorted(values, key=values.__getitem__, reverse=True)[:k]
    orders = list(itertools.permutations(values))
    for order in rng.sample(orders, min(len(orders), 24)):
        protocol = heap_topk(list(order), k)
        try:
            q = next(protocol)
            while True:
                q = protocol.send(q.a if values[q.a] > values[q.b] else q.b)
        except StopIteration as stop:
            top, rest = stop.value
        assert top == truth and sorted(rest) == sorted(set(values) - set(truth))


@settings(max_examples=80, deadline=None)
@given(cases(), st.booleans())
def test_session_asks_exactly_the_literal_procedure(case, ties):
    """Against an independent transcription of Algorithm 1's pseudocode: the same calls
    prefer(a, b) in the same order (cache off: all of them; cache on: the first call of each
    unordered pair), the same top and rest. With ``ties`` equal scores are answered "tie"
    (not preferred either way, docs/protocols.md#ties), otherwise the oracle's total order."""
    from tests.labeling.strategies.test_heap_trace import reference_calls

    docs, scores, k, seed, cache = case
    options = {"pair_cache": cache, "allow_ties": ties}
    s = open_session("topk", docs, k=k, seed=seed, options=options)
    oracle = Assessor(scores, seed=0)
    values = scores if ties else {d: -oracle.rank[d] for d in docs}
    while not s.done:
        q = s.pending
        a, b = values[q.left], values[q.right]
        s.submit(PairAnswer(q.left, q.right, "left" if a > b else "right" if b > a else "tie"))
    posed, top, rest = reference_calls(s.order, values, k, "unordered" if cache else None)
    r = s.result()
    assert [(j.a, j.b) for j in r.judged if not j.cached] == posed
    assert r.judgments == len(posed) and (r.top, r.rest) == (top, rest)


def _certain_remaining(state, cache):
    """Questions certain to come for ANY answers, by structure alone: every stream item still to
    place costs its root comparison (stream items are new, so never cached); without the cache
    every pending sift with two children costs at least 2 questions and with one child 1."""

    def least(i, size):
        left = 2 * i + 1
        return 0 if left >= size else 2 if left + 1 < size else 1

    if state.phase == "done":
        return 0
    total = 0
    if state.cursor is not None:
        i, size, c = state.cursor
        total += 1 if cache or c is not None else least(i, size)
    if state.phase == "build":
        total += 0 if cache else sum(least(j, state.m) for j in range(state.build_i))
        total += len(state.stream)
    elif state.phase == "stream":
        total += len(state.stream) - state.pos - (0 if state.cursor is None else 1)
    if not cache:
        end = state.sort_end if state.phase == "sort" else state.m
        total += sum(least(0, e) for e in range(1, end))
    return total


@settings(max_examples=60, deadline=None)
@given(cases())
def test_about_n_left_never_promises_fewer_than_certainly_remain(case):
    """The UI's "about N left" (⌈expected_remaining⌉, app/judging/loop.py) never drops below
    the questions that are certain to come, and never exceeds the worst-case bound."""
    docs, scores, k, seed, cache = case
    s = open_session("topk", docs, k=k, seed=seed, options={"pair_cache": cache})
    oracle = Assessor(scores, seed=0)
    total, steps = 0, []
    while not s.done:
        p = s.progress()
        steps.append((math.ceil(p.expected_remaining - 1e-9), _certain_remaining(s.state, cache)))
        assert p.expected_remaining <= p.max_remaining
        s.submit(oracle.answer(s))
        total += 1
    for asked, (about, certain) in enumerate(steps):
        assert certain <= total - asked  # the oracle above is itself a true lower bound
        assert about >= certain


def test_mean_count_matches_the_reference_over_2000_trials():
    """n=50, k=10, random order, no cache: mean ≈ 150.8 as the paper reports (±2 over 2,000
    trials)."""
    rng = random.Random(2012)
    docs = [f"d{i}" for i in range(50)]
    total = 0
    trials = 2000
    for _ in range(trials):
        values = dict(zip(docs, rng.sample(range(1000), 50), strict=True))
        order = docs[:]
        rng.shuffle(order)
        protocol = heap_topk(order, 10)
        calls = 0
        try:
            q = next(protocol)
            while True:
                calls += 1
                q = protocol.send(q.a if values[q.a] > values[q.b] else q.b)
        except StopIteration:
            pass
        total += calls
    assert abs(total / trials - 150.8) <= 2.0


def test_run_session_with_simulated_oracle_on_graded_qrels():
    grades = {f"g{i}": g for i, g in enumerate([4, 3, 3, 2, 2, 2, 1, 1, 0, 0, 0, 0])}
    oracle = Assessor.from_grades(grades, seed=4)
    s = open_session("topk", list(grades), k=4, seed=1)
    r = run_session(s, oracle).result
    assert r.top == oracle.true_topk(4)
    assert r.top[0] == "g0" and set(r.top[1:3]) == {"g1", "g2"}
    assert [grades[d] for d in r.top] == [4, 3, 3, 2]


@settings(max_examples=60, deadline=None)
@given(cases(), st.data())
def test_any_assessor_terminates_within_the_bound_with_a_partition(case, data):
    """Arbitrary (inconsistent) answers, ties and not-relevant: the structural bound still
    holds at every step, and the output is a partition of the documents."""
    docs, _, k, seed, cache = case
    opts = {"pair_cache": cache, "allow_ties": True, "not_relevant": True}
    s = open_session("topk", docs, k=k, seed=seed, options=opts)
    bounds = []
    while not s.done:
        bounds.append(s.progress().max_remaining)
        q = s.pending
        outcome = data.draw(st.sampled_from(s.allowed_outcomes))
        s.submit(PairAnswer(q.left, q.right, outcome))
    total = len(s.answers)
    assert all(b >= total - i for i, b in enumerate(bounds))
    r = s.result()
    assert sorted(r.top + r.rest) == sorted(docs) and len(r.top) == min(k, len(docs))


def test_noisy_assessor_gives_contradicted_implied_pairs():
    docs = [f"d{i}" for i in range(40)]
    scores = {d: float(i) for i, d in enumerate(docs)}
    contradicted = 0
    for seed in range(5):
        run = simulate("topk", docs, Assessor(scores, seed=seed, flip=0.3), k=8, seed=seed)
        contradicted += sum(p.contradicted for p in run.result.implied_pairs())
    assert contradicted > 0


def test_initial_expected_remaining_is_close_to_the_simulated_mean():
    docs = [f"d{i}" for i in range(50)]
    rng = random.Random(3)
    for cache in (False, True):
        counts = []
        for _ in range(400):
            values = rng.sample(range(1000), 50)
            scores = dict(zip(docs, map(float, values), strict=True))
            s = open_session(
                "topk", docs, k=10, seed=rng.getrandbits(32), options={"pair_cache": cache}
            )
            counts.append(run_session(s, Assessor(scores), timed=False).judgments)
        estimate = open_session("topk", docs, k=10, seed=0, options={"pair_cache": cache})
        mean = sum(counts) / len(counts)
        assert abs(estimate.progress().expected_remaining / mean - 1) < 0.04


def _worst_sift_by_recursion(i: int, size: int) -> int:
    """The definition: 2 per step from a node with two children, 1 with one, max over paths."""
    left = 2 * i + 1
    if left >= size:
        return 0
    if left + 1 < size:
        return 2 + max(
            _worst_sift_by_recursion(left, size), _worst_sift_by_recursion(left + 1, size)
        )
    return 1 + _worst_sift_by_recursion(left, size)


def test_worst_sift_closed_form_equals_the_recursion() -> None:
    from labeling.strategies.heap import worst_sift

    for size in range(0, 300):
        for i in range(0, size + 2):
            assert worst_sift(i, size) == _worst_sift_by_recursion(i, size), (i, size)
