"""Broken documents (docs/protocols.md#broken-documents), for every strategy.

A log with broken answers replays to the same state; undoing a broken answer (replaying the
log without it) restores the state before it; for a consistent oracle the result is the true
top-k of the remaining documents; no pair is posed twice; graded tasks skip the document.
The oracle for "exact" is independent of the session: the remaining documents sorted by the
oracle's total order.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labeling.errors import InvalidAnswer, WrongQuestion
from labeling.protocol.session import open_session
from labeling.protocol.types import BrokenAnswer, GradeAnswer, PairAnswer, PairQuestion
from labeling.strategies.registry import strategy_names
from labeling.study.simulation import Assessor

NAMES = strategy_names()  # every base strategy, and each with +robust
SETTINGS = settings(max_examples=40, deadline=None)


@st.composite
def cases(draw, max_n=24):
    name = draw(st.sampled_from(NAMES))
    n = draw(st.integers(2, max_n))
    k = draw(st.integers(1, 10))
    scores = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    seed = draw(st.integers(0, 2**31))
    cache = draw(st.booleans())
    reask = draw(st.sampled_from([0.0, 0.0, 0.25]))
    # Break at these question numbers (when still open), each time the left or right side.
    breaks = draw(st.dictionaries(st.integers(0, 2 * n), st.booleans(), min_size=1, max_size=4))
    docs = [f"d{i}" for i in range(n)]
    opts = {"strategy": name, "pair_cache": cache, "reask_fraction": reask}
    return docs, dict(zip(docs, map(float, scores), strict=True)), k, seed, opts, breaks


def play(docs, scores, k, seed, opts, breaks):
    oracle = Assessor(scores, seed=0)
    s = open_session("topk", docs, k=k, seed=seed, options=opts)
    states = [snapshot(s)]
    while not s.done:
        q = s.pending
        assert isinstance(q, PairQuestion)
        if q.seq in breaks:
            doc = q.left if breaks[q.seq] else q.right
            s.submit(BrokenAnswer(doc, f"unreadable {doc}", q.left, q.right))
        else:
            s.submit(oracle.answer(s))
        states.append(snapshot(s))
    return s, oracle, states


def snapshot(s):
    """Everything a replay must reproduce: the pending question, progress, broken set."""
    return (s.pending, s.progress(), dict(s.broken), s.done, len(s.answers))


@SETTINGS
@given(cases())
def test_result_is_the_true_top_k_of_the_remaining_documents(case):
    docs, scores, k, seed, opts, breaks = case
    s, oracle, _ = play(docs, scores, k, seed, opts, breaks)
    r = s.result()
    remaining = [d for d in docs if d not in s.broken]
    assert r.top == oracle.true_topk(k, remaining)
    assert sorted(r.top + r.rest) == sorted(remaining)
    assert r.broken == s.broken and set(r.broken).isdisjoint(r.kappa_labels)
    assert r.judgments == len(s.answers) and r.n == len(remaining)
    assert not any(p.contradicted for p in r.implied_pairs())


@SETTINGS
@given(cases())
def test_no_pair_is_posed_twice_unless_the_strategy_asks_for_a_repeat(case):
    docs, scores, k, seed, opts, breaks = case
    if not opts["pair_cache"] or opts["reask_fraction"]:
        return  # without the cache the paper's protocol repeats pairs; re-asks repeat by design
    s, _, _ = play(docs, scores, k, seed, opts, breaks)
    repeats = set(s.repeats)  # deliberate repeats of pairs of the remaining documents
    seen: set[frozenset[str]] = set()
    for seq, a in enumerate(s.answers):
        pair = frozenset((a.left, a.right))
        if isinstance(a, BrokenAnswer) or pair & set(s.broken):
            continue  # answers about a broken document left the protocol with it
        if seq not in repeats:
            assert pair not in seen, (seq, a)
        seen.add(pair)


@SETTINGS
@given(cases(), st.data())
def test_replay_of_any_prefix_gives_the_same_state_and_undo_restores_the_previous(case, data):
    docs, scores, k, seed, opts, breaks = case
    s, _, states = play(docs, scores, k, seed, opts, breaks)
    cut = data.draw(st.integers(0, len(s.answers)))
    replayed = open_session("topk", docs, k=k, seed=seed, options=opts, answers=s.answers[:cut])
    assert snapshot(replayed) == states[cut]
    # Undo of every broken answer: the log without it (and what followed) is the state before.
    for seq, answer in enumerate(s.answers):
        if isinstance(answer, BrokenAnswer):
            before = open_session(
                "topk", docs, k=k, seed=seed, options=opts, answers=s.answers[:seq]
            )
            assert snapshot(before) == states[seq]
            assert answer.doc_id not in before.broken


def test_a_worked_example_reruns_from_the_log_and_asks_only_new_pairs():
    """n = 4, k = 2, heap, oracle d0 > d1 > d2 > d3. After two answers, d0 breaks: the rerun
    over d1, d2, d3 reuses the answers about pairs of those, and asks only what is new."""
    docs = ["d0", "d1", "d2", "d3"]
    scores = {"d0": 4.0, "d1": 3.0, "d2": 2.0, "d3": 1.0}
    oracle = Assessor(scores, seed=0)
    s = open_session("topk", docs, k=2, seed=3, options={})
    asked = []
    while len(asked) < 2:
        q = s.pending
        asked.append(frozenset((q.left, q.right)))
        s.submit(oracle.answer(s))
    q = s.pending
    target = "d0" if "d0" in (q.left, q.right) else q.left
    s.submit(BrokenAnswer(target, "blank page", q.left, q.right))
    while not s.done:
        q = s.pending
        pair = frozenset((q.left, q.right))
        assert pair not in asked and target not in pair
        asked.append(pair)
        s.submit(oracle.answer(s))
    r = s.result()
    remaining = [d for d in docs if d != target]
    assert r.top == sorted(remaining, key=lambda d: -scores[d])[:2]
    assert r.broken == {target: "blank page"} and r.n == 3


def test_a_broken_answer_must_name_a_shown_document_with_a_reason():
    s = open_session("topk", ["a", "b", "c"], k=1, seed=1, options={})
    q = s.pending
    other = ({"a", "b", "c"} - {q.left, q.right}).pop()
    with pytest.raises(InvalidAnswer, match="one of the two shown"):
        s.submit(BrokenAnswer(other, "x", q.left, q.right))
    with pytest.raises(InvalidAnswer, match="needs a reason"):
        s.submit(BrokenAnswer(q.left, "  ", q.left, q.right))
    with pytest.raises(WrongQuestion, match="swapped"):
        s.submit(BrokenAnswer(q.left, "x", q.right, q.left))
    assert s.answers == [] and s.broken == {} and s.pending == q  # nothing changed


def test_breaking_all_but_one_document_finishes_with_that_one():
    s = open_session("topk", ["a", "b"], k=2, seed=5, options={})
    q = s.pending
    s.submit(BrokenAnswer(q.right, "spam", q.left, q.right))
    assert s.done
    r = s.result()
    assert r.top == [q.left] and r.rest == [] and r.broken == {q.right: "spam"}
    assert r.judgments == 1 and s.progress().done


def test_graded_skips_a_broken_document():
    docs = ["a", "b", "c"]
    s = open_session("graded", docs, seed=2)
    first = s.pending.doc_id
    s.submit(BrokenAnswer(first, "404"))
    assert s.progress().judgments == 1 and s.progress().max_remaining == 2
    while not s.done:
        s.submit(GradeAnswer(s.pending.doc_id, 3))
    r = s.result()
    assert first not in r.grades and r.broken == {first: "404"}
    assert sorted(r.grades) == sorted(set(docs) - {first}) and r.judgments == 3
    again = open_session("graded", docs, seed=2, answers=s.answers)
    assert again.result() == r


def test_graded_broken_answer_names_no_pair():
    s = open_session("graded", ["a", "b"], seed=2)
    d = s.pending.doc_id
    with pytest.raises(InvalidAnswer, match="names no pair"):
        s.submit(BrokenAnswer(d, "x", d, "b"))
    with pytest.raises(WrongQuestion):
        s.submit(PairAnswer(d, "b", "left"))
    assert s.answers == []
