"""The five-grade protocol (tool T2): order, resumability, undo, bad grades rejected."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labeling.errors import ConfigError, Finished, InvalidAnswer, NotFinished, WrongQuestion
from labeling.protocol.graded import five_grade
from labeling.protocol.groundtruth import GradedResult
from labeling.protocol.seeding import seeded_order
from labeling.protocol.session import open_session
from labeling.protocol.types import GRADE_NAMES, GradeAnswer, GradeQuestion, PairAnswer

DOCS = [f"p{i}" for i in range(12)]
GRADES = {d: i % 5 for i, d in enumerate(DOCS)}


def test_scale_is_bad_to_perfect():
    assert GRADE_NAMES == ("Bad", "Fair", "Good", "Excellent", "Perfect")


def test_documents_come_in_seeded_order_and_result_has_every_grade():
    s = open_session("graded", DOCS, seed=42)
    shown = []
    while not s.done:
        q = s.pending
        assert isinstance(q, GradeQuestion) and q.seq == len(shown)
        p = s.progress()
        assert p.judgments == len(shown)
        assert p.expected_remaining == p.max_remaining == len(DOCS) - len(shown)
        shown.append(q.doc_id)
        s.submit(GradeAnswer(q.doc_id, GRADES[q.doc_id]))
    assert shown == seeded_order(DOCS, 42) and sorted(shown) == sorted(DOCS)
    r = s.result()
    assert isinstance(r, GradedResult)
    assert r.grades == GRADES and r.judgments == len(DOCS) and list(r.order) == shown
    assert s.progress().done and s.progress().max_remaining == 0


def test_k_is_ignored_and_options_are_rejected():
    assert open_session("graded", DOCS, k=0, seed=1).pending.seq == 0
    with pytest.raises(ConfigError, match="unknown option"):
        open_session("graded", DOCS, seed=1, options={"pair_cache": False})


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**40), st.data())
def test_any_prefix_resumes_and_undo_is_shorter_replay(seed, data):
    full = open_session("graded", DOCS, seed=seed)
    log = []
    while not full.done:
        a = GradeAnswer(full.pending.doc_id, data.draw(st.integers(0, 4)))
        full.submit(a)
        log.append(a)
    cut = data.draw(st.integers(0, len(log)))
    resumed = open_session("graded", DOCS, seed=seed, answers=log[:cut])
    if cut < len(log):
        assert resumed.pending == GradeQuestion(cut, log[cut].doc_id)
        for a in log[cut:]:
            resumed.submit(a)
    assert resumed.result() == full.result()
    if cut:
        undone = open_session("graded", DOCS, seed=seed, answers=log[: cut - 1])
        assert undone.pending == GradeQuestion(cut - 1, log[cut - 1].doc_id)


@pytest.mark.parametrize("grade", [-1, 5, 2.0, "3", True, None])
def test_bad_grades_are_rejected_and_change_nothing(grade):
    s = open_session("graded", DOCS, seed=1)
    q = s.pending
    with pytest.raises(InvalidAnswer, match=r"0\.\.4"):
        s.submit(GradeAnswer(q.doc_id, grade))  # type: ignore[arg-type]
    assert s.pending == q and s.answers == []


def test_wrong_document_wrong_type_finished_not_finished():
    s = open_session("graded", DOCS, seed=1)
    q = s.pending
    other = next(d for d in DOCS if d != q.doc_id)
    with pytest.raises(WrongQuestion, match=other):
        s.submit(GradeAnswer(other, 2))
    with pytest.raises(WrongQuestion):
        s.submit(PairAnswer(q.doc_id, other, "left"))
    with pytest.raises(NotFinished):
        s.result()
    for doc in seeded_order(DOCS, 1):
        s.submit(GradeAnswer(doc, 0))
    with pytest.raises(Finished):
        s.submit(GradeAnswer(DOCS[0], 0))


def test_replay_error_names_the_index():
    order = seeded_order(DOCS, 3)
    log = [GradeAnswer(d, 1) for d in order]
    log[5] = GradeAnswer(order[5], 9)
    with pytest.raises(InvalidAnswer, match="answer 5 does not replay"):
        open_session("graded", DOCS, seed=3, answers=log)


def test_bare_generator():
    g = five_grade(["a", "b"])
    assert next(g) == "a" and g.send(4) == "b"
    with pytest.raises(StopIteration) as stop:
        g.send(0)
    assert stop.value.value == {"a": 4, "b": 0}
