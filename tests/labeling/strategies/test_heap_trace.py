"""The worked HeapSort labeling trace of docs/protocols.md#heap and its edge cases.

The protocol is driven directly (labeling.strategies.heap) and through the C1 session
(labeling.protocol.session) with ``initial_order`` fixing the processing order d1..d8, and checked
against a literal transcription of Algorithm 1's pseudocode (:func:`reference_topk_label`).

The pair cache (docs/protocols.md#pair-cache) is keyed on the *unordered* pair: the trace
repeats prefer(d1, d3) and also {d3, d5} (prefer(d5, d3) placing d7, prefer(d3, d5) in Step 3),
so it poses **12** of the 14 calls. 13 is what a cache keyed on the ordered call would give;
the mean counts with the cache (135.8 at n = 50, k = 10) are those of the unordered cache (an
ordered one gives ≈139).
"""

from __future__ import annotations

import pytest

from labeling.protocol.pair_cache import with_pair_cache
from labeling.protocol.session import open_session
from labeling.protocol.types import PairAnswer
from labeling.strategies.base import Compare
from labeling.strategies.heap import heap_topk, worst_case_total

VALUES = {"d1": 5, "d2": 1, "d3": 7, "d4": 3, "d5": 8, "d6": 2, "d7": 6, "d8": 4}
DOCS = list(VALUES)

#: Every oracle call prefer(a, b) of §7.A, in order, with its step.
TRACE = [
    ("build", "d2", "d3"),
    ("build", "d1", "d2"),
    ("d4", "d4", "d2"),
    ("d4", "d1", "d3"),
    ("d4", "d4", "d1"),
    ("d5", "d5", "d4"),
    ("d5", "d1", "d3"),
    ("d5", "d5", "d1"),
    ("d6", "d6", "d1"),
    ("d7", "d7", "d1"),
    ("d7", "d5", "d3"),
    ("d7", "d7", "d3"),
    ("d8", "d8", "d7"),
    ("sort", "d3", "d5"),
]


#: κ-labels of the trace's output (k = 3): d5 = 3, d3 = 2, d7 = 1, all others 0.
TRACE_KAPPA = {"d5": 3, "d3": 2, "d7": 1, **dict.fromkeys(["d2", "d4", "d6", "d1", "d8"], 0)}


def reference_topk_label(order, k, prefer):
    """Algorithm 1's ``topk_label`` (docs/protocols.md#heap) transcribed literally
    (recursion-free, blocking oracle):
    an independent reference for the generator in labeling.strategies.heap. ``prefer(a, b)`` is one
    call.
    """
    heap = list(order[:k])
    m = len(heap)

    def less(a, b):
        return prefer(b, a)

    def sift_down(i, size):
        while True:
            left, right = 2 * i + 1, 2 * i + 2
            if left >= size:
                return
            c = left
            if right < size and less(heap[right], heap[left]):
                c = right
            if less(heap[c], heap[i]):
                heap[c], heap[i] = heap[i], heap[c]
                i = c
            else:
                return

    for i in range(m // 2 - 1, -1, -1):
        sift_down(i, m)
    rest = []
    for r in order[k:]:
        if prefer(r, heap[0]):
            rest.append(heap[0])
            heap[0] = r
            sift_down(0, m)
        else:
            rest.append(r)
    for end in range(m - 1, 0, -1):
        heap[0], heap[end] = heap[end], heap[0]
        sift_down(0, end)
    return heap, rest


def reference_calls(order, values, k, cache=None):
    """Posed calls of the reference with no cache, an ``ordered`` (a, b) cache or an
    ``unordered`` {a, b} cache; equal values are a tie (not preferred either way)."""
    posed, memo = [], {}

    def prefer(a, b):
        key = {None: None, "ordered": (a, b), "unordered": frozenset((a, b))}[cache]
        if key is not None and key in memo:
            winner = memo[key]
        else:
            posed.append((a, b))
            winner = a if values[a] > values[b] else b if values[b] > values[a] else None
            if key is not None:
                memo[key] = winner
        return winner == a

    top, rest = reference_topk_label(list(order), k, prefer)
    return posed, top, rest


def drive(protocol, values):
    """Run a bare protocol against a consistent oracle; return (calls, (top, rest))."""
    calls = []
    try:
        question = next(protocol)
        while True:
            calls.append(question)
            a, b = question.a, question.b
            winner = a if values[a] > values[b] else b if values[b] > values[a] else None
            question = protocol.send(winner)
    except StopIteration as stop:
        return calls, stop.value


def run_session(docs, values, k, **options):
    s = open_session("topk", docs, k=k, seed=11, options={"initial_order": docs, **options})
    asked = []
    while not s.done:
        q = s.pending
        assert q.seq == len(asked)
        asked.append(frozenset((q.left, q.right)))
        s.submit(
            PairAnswer(q.left, q.right, "left" if values[q.left] > values[q.right] else "right")
        )
    return s, asked


def test_trace_every_call_in_order_without_cache():
    calls, (top, rest) = drive(heap_topk(DOCS, 3), VALUES)
    assert [(c.a, c.b) for c in calls] == [(a, b) for _, a, b in TRACE]
    # Only the Step-2 root comparisons (d4..d8 against the root) are challenger questions.
    assert [i for i, c in enumerate(calls) if c.challenger] == [2, 5, 8, 9, 12]
    assert len(calls) == 14
    assert top == ["d5", "d3", "d7"]
    assert rest == ["d2", "d4", "d6", "d1", "d8"]  # eviction/discard order


def test_trace_judgment_split_per_step():
    calls, _ = drive(heap_topk(DOCS, 3), VALUES)
    steps = [step for step, _, _ in TRACE]
    build = steps.count("build")
    sort = steps.count("sort")
    assert (build, len(calls) - build - sort, sort) == (2, 11, 1)


def test_trace_through_session_without_cache():
    s, asked = run_session(DOCS, VALUES, 3, pair_cache=False)
    assert asked == [frozenset((a, b)) for _, a, b in TRACE]
    r = s.result()
    assert r.judgments == 14 and r.calls == 14
    assert r.top == ["d5", "d3", "d7"]
    assert set(r.rest) == {"d2", "d4", "d6", "d1", "d8"}
    assert r.kappa_labels == TRACE_KAPPA


def test_trace_with_pair_cache():
    """The unordered-pair cache answers two repeats, so 12 questions are posed.

    prefer(d1, d3) is asked twice, and the trace also repeats {d3, d5}: prefer(d5, d3) while
    placing d7 and prefer(d3, d5) in Step 3. A cache keyed on the unordered pair answers both;
    13 would count only the same-orientation repeat (checked below). The mean counts with the
    cache (135.8 at n=50, k=10) match the unordered cache, not an ordered one (≈139).
    """
    s, asked = run_session(DOCS, VALUES, 3)
    expected = []
    for _, a, b in TRACE:
        if frozenset((a, b)) not in expected:
            expected.append(frozenset((a, b)))
    assert asked == expected
    r = s.result()
    assert r.judgments == 12 and r.calls == 14
    cached = [(j.a, j.b) for j in r.judged if j.cached]
    assert cached == [("d1", "d3"), ("d3", "d5")]
    assert r.top == ["d5", "d3", "d7"]
    assert r.kappa_labels == TRACE_KAPPA


def test_thirteen_is_the_same_orientation_repeat_count():
    calls, _ = drive(heap_topk(DOCS, 3), VALUES)
    ordered = [(c.a, c.b) for c in calls]
    assert len(set(ordered)) == 13  # only (d1, d3) recurs in the same orientation
    assert len({frozenset(p) for p in ordered}) == 12


def test_trace_counts_by_brute_force_on_the_literal_procedure():
    """Independent check of 14 / 13 / 12 with the literal pseudocode (not labeling.strategies.heap):
    no cache 14; a cache keyed on the ordered call (a, b) 13; a cache keyed on the unordered
    pair, which is what docs/protocols.md#pair-cache specifies, 12, because prefer(d3, d5) in
    Step 3 repeats prefer(d5, d3) from placing d7."""
    posed, top, rest = reference_calls(DOCS, VALUES, 3)
    assert posed == [(a, b) for _, a, b in TRACE] and top == ["d5", "d3", "d7"]
    assert rest == ["d2", "d4", "d6", "d1", "d8"]
    assert len(reference_calls(DOCS, VALUES, 3, "ordered")[0]) == 13
    unordered, top, _ = reference_calls(DOCS, VALUES, 3, "unordered")
    assert len(unordered) == 12 and top == ["d5", "d3", "d7"]
    assert ("d3", "d5") not in unordered and ("d5", "d3") in unordered
    # The session with its default (unordered) cache poses exactly the reference's questions.
    _, asked = run_session(DOCS, VALUES, 3)
    assert asked == [frozenset(p) for p in unordered]


def test_bare_cache_middleware_matches_session():
    calls, (top, _) = drive(with_pair_cache(heap_topk(DOCS, 3)), VALUES)
    assert len(calls) == 12 and top == ["d5", "d3", "d7"]


def test_implied_pairs_and_direct_flags():
    s, _ = run_session(DOCS, VALUES, 3, pair_cache=False)
    pairs = list(s.result().implied_pairs())
    assert len(pairs) == 3 * 2 // 2 + 3 * 5
    assert [(p.better, p.worse) for p in pairs[:3]] == [("d5", "d3"), ("d5", "d7"), ("d3", "d7")]
    direct = {(p.better, p.worse) for p in pairs if p.direct}
    # Judged directly with this preference: d5>d3 (d7 step), d3>d7 (d7 step), d7>d1, d5>d1,
    # d5>d4, d7>d8; d3>d1 (d1 vs d3 twice); d3>d2 (build). d5>d7 follows by transitivity.
    assert direct == {
        ("d3", "d2"),
        ("d5", "d3"),
        ("d3", "d7"),
        ("d7", "d1"),
        ("d5", "d1"),
        ("d3", "d1"),
        ("d5", "d4"),
        ("d7", "d8"),
    }
    assert not any(p.contradicted for p in pairs)
    assert all(p.transitive == (not p.direct) for p in pairs)


def test_edge_n2_less_than_k3():
    values = {"e": 2, "g": 5}
    calls, (top, rest) = drive(heap_topk(["e", "g"], 3), values)
    assert [(c.a, c.b) for c in calls] == [("e", "g")]
    assert top == ["g", "e"] and rest == []
    s, _ = run_session(["e", "g"], values, 3)
    r = s.result()
    assert r.judgments == 1 and r.top == ["g", "e"] and r.rest == []
    assert r.kappa_labels == {"g": 3, "e": 2}


def test_edge_n1_needs_no_judgment():
    s = open_session("topk", ["only"], k=3, seed=0)
    assert s.done and s.pending is None
    r = s.result()
    assert r.judgments == 0 and r.top == ["only"] and r.kappa_labels == {"only": 3}
    p = s.progress()
    assert (p.judgments, p.max_remaining, p.done) == (0, 0, True)


def test_edge_n_equals_k_asks_a_pair_in_both_orientations():
    values = {"a": 1, "b": 2, "c": 3}
    calls, (top, rest) = drive(heap_topk(["a", "b", "c"], 3), values)
    assert calls == [Compare("b", "c"), Compare("a", "b"), Compare("c", "b")]
    assert top == ["c", "b", "a"] and rest == []
    s, _ = run_session(["a", "b", "c"], values, 3, pair_cache=False)
    assert s.result().judgments == 3
    s, _ = run_session(["a", "b", "c"], values, 3)
    assert s.result().judgments == 2  # (c, b) is the cached reverse of (b, c)
    assert s.result().kappa_labels == {"c": 3, "b": 2, "a": 1}


def test_worst_case_formula():
    # 2k + (n-k)(1 + 2⌊log2 k⌋) + Σ_{e<k} 2⌊log2 e⌋ = 20 + 40·7 + 32
    assert worst_case_total(50, 10) == 332
    assert worst_case_total(8, 3) == 6 + 5 * 3 + 2
    assert worst_case_total(1, 5) == 2


@pytest.mark.parametrize("cache", [False, True])
def test_progress_bound_holds_along_the_trace(cache):
    s = open_session(
        "topk", DOCS, k=3, seed=1, options={"initial_order": DOCS, "pair_cache": cache}
    )
    bounds = []
    while not s.done:
        p = s.progress()
        bounds.append(p.max_remaining)
        assert 1 <= p.expected_remaining <= p.max_remaining
        q = s.pending
        s.submit(
            PairAnswer(q.left, q.right, "left" if VALUES[q.left] > VALUES[q.right] else "right")
        )
    total = len(bounds)
    assert all(b >= total - i for i, b in enumerate(bounds))
    assert bounds[0] == 18  # exact structural bound, tighter than the closed-form 23
