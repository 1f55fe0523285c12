"""Contract C1: open_session / validate_options, replay, undo, orientation, options, errors."""

from __future__ import annotations

import pytest

from labeling.errors import (
    ConfigError,
    Finished,
    InvalidAnswer,
    LabelingError,
    NotFinished,
    WrongQuestion,
)
from labeling.protocol.groundtruth import TopKResult
from labeling.protocol.seeding import seeded_order, shows_swapped
from labeling.protocol.session import open_session
from labeling.protocol.spec import validate_options
from labeling.protocol.topk import TopKSession
from labeling.protocol.types import GradeAnswer, JudgingSession, PairAnswer, PairQuestion
from labeling.strategies.base import Compare
from labeling.study.simulation import Assessor, run_session
from ranking.io.topk import TopKTruth

DOCS = [f"doc{i:02d}" for i in range(20)]
SCORES = {d: float((7 * i) % 20) for i, d in enumerate(DOCS)}


def oracle_answer(q: PairQuestion) -> PairAnswer:
    return PairAnswer(q.left, q.right, "left" if SCORES[q.left] > SCORES[q.right] else "right")


def finished_log(**options):
    s = open_session("topk", DOCS, k=5, seed=3, options=options)
    while not s.done:
        s.submit(oracle_answer(s.pending))
    return s


# -- validate_options ---------------------------------------------------------------------------
def test_validate_options_fills_defaults_and_is_idempotent():
    opts = validate_options("topk", None)
    assert opts == {
        "allow_ties": False,
        "pair_cache": True,
        "not_relevant": False,
        "initial_order": None,
        "reask_fraction": 0.0,
        "strategy": "heap",
        "prior": None,
        "second_assessor": None,
        "second_opinion_timeout_s": 600,
        "machine": None,
    }
    assert validate_options("topk", opts) == opts
    # A config stored before reask_fraction existed validates (and so replays) the same.
    legacy = {key: value for key, value in opts.items() if key != "reask_fraction"}
    assert validate_options("topk", legacy) == opts
    assert validate_options("topk", {"allow_ties": True})["allow_ties"] is True
    assert validate_options("graded", {}) == {}
    assert validate_options("graded", None) == {}


@pytest.mark.parametrize(
    ("method", "options", "message"),
    [
        ("topk", {"bogus": 1}, "unknown option"),
        ("graded", {"allow_ties": True}, "unknown option"),
        ("pairs", {}, "unknown method"),
        ("topk", {"allow_ties": 1}, "true or false"),
        ("topk", {"pair_cache": "yes"}, "true or false"),
        ("topk", {"initial_order": "doc01"}, "list of document ids"),
        ("topk", {"initial_order": ["a", "a"]}, "listed twice"),
        ("topk", {"initial_order": ["a", 3]}, "initial_order[1]"),
        ("topk", [("allow_ties", True)], "mapping"),
    ],
)
def test_validate_options_rejects(method, options, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        validate_options(method, options)


# -- open_session config errors ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"doc_ids": []}, "at least one document"),
        ({"doc_ids": ["a", "b", "a"]}, r"doc_ids\[2\]: duplicate document id 'a'"),
        ({"doc_ids": ["a", ""]}, "non-empty string"),
        ({"doc_ids": "abc"}, "list of document ids"),
        # Unhashable ids (e.g. a JSON list in a stored config) are a ConfigError, not TypeError.
        ({"doc_ids": ["a", ["b"]]}, r"doc_ids\[1\] must be a non-empty string"),
        ({"options": {"initial_order": ["a", {"b": 1}]}}, r"initial_order\[1\] must be"),
        ({"k": 0}, "k must be an integer >= 1"),
        ({"k": -3}, "k must be an integer >= 1"),
        ({"k": True}, "k must be an integer >= 1"),
        ({"seed": "7"}, "seed must be an integer"),
        ({"options": {"initial_order": ["zzz"]}}, "not one of the documents"),
    ],
)
def test_open_session_config_errors(kwargs, message):
    args = {"doc_ids": DOCS, "k": 5, "seed": 1, "options": None} | kwargs
    with pytest.raises(ConfigError, match=message):
        open_session(
            "topk", args["doc_ids"], k=args["k"], seed=args["seed"], options=args["options"]
        )


def test_errors_are_one_family():
    for cls in (ConfigError, WrongQuestion, InvalidAnswer, Finished, NotFinished):
        assert issubclass(cls, LabelingError) and issubclass(cls, ValueError)


# -- the session -----------------------------------------------------------------------------
def test_session_satisfies_the_protocol_interface():
    s = open_session("topk", DOCS, k=5, seed=1)
    assert isinstance(s, JudgingSession)
    g = open_session("graded", DOCS, seed=1)
    assert isinstance(g, JudgingSession)


def test_seq_is_the_index_of_the_next_answer_and_results():
    s = finished_log()
    assert isinstance(s.result(), TopKResult)
    assert s.result().top == sorted(DOCS, key=lambda d: -SCORES[d])[:5]
    r = open_session("topk", DOCS, k=5, seed=3, answers=s.answers[:7])
    assert r.pending.seq == 7
    assert r.progress().judgments == 7


def test_result_is_the_topk_truth_of_its_query():
    """A finished session's result turns into the one top-k truth type (ranking's I/O), with
    the same κ-labels (one κ-label function for the project)."""
    result = finished_log().result()
    truth = result.truth("q7", assessor="ann")
    assert isinstance(truth, TopKTruth)
    assert (truth.query_id, truth.k) == ("q7", 5)
    assert truth.top == tuple(result.top) and truth.rest == tuple(result.rest)
    assert truth.kappa_labels() == result.kappa_labels
    assert truth.to_json()["assessor"] == "ann"


def test_wrong_pair_and_swapped_orientation_change_nothing():
    s = open_session("topk", DOCS, k=5, seed=3)
    q = s.pending
    before = (s.pending, s.progress(), len(s.answers))
    with pytest.raises(WrongQuestion, match="swapped orientation"):
        s.submit(PairAnswer(q.right, q.left, "left"))
    other = next(d for d in DOCS if d not in (q.left, q.right))
    with pytest.raises(WrongQuestion, match="not"):
        s.submit(PairAnswer(q.left, other, "left"))
    with pytest.raises(WrongQuestion):
        s.submit(GradeAnswer(q.left, 3))
    with pytest.raises(InvalidAnswer, match="unknown outcome"):
        s.submit(PairAnswer(q.left, q.right, "maybe"))  # type: ignore[arg-type]
    with pytest.raises(InvalidAnswer, match="ties are not enabled"):
        s.submit(PairAnswer(q.left, q.right, "tie"))
    with pytest.raises(InvalidAnswer, match="not-relevant answer is not enabled"):
        s.submit(PairAnswer(q.left, q.right, "not_relevant"))
    assert (s.pending, s.progress(), len(s.answers)) == before
    s.submit(oracle_answer(q))
    assert s.pending.seq == 1


def test_finished_and_not_finished():
    s = open_session("topk", DOCS, k=5, seed=3)
    with pytest.raises(NotFinished):
        s.result()
    s = finished_log()
    with pytest.raises(Finished):
        s.submit(PairAnswer("doc00", "doc01", "left"))
    assert s.progress().done and s.progress().max_remaining == 0


def test_replay_error_names_the_answer_index_and_type():
    log = finished_log().answers
    bad = [*log[:4], PairAnswer(log[4].right, log[4].left, log[4].outcome), *log[5:]]
    with pytest.raises(WrongQuestion, match="answer 4 does not replay"):
        open_session("topk", DOCS, k=5, seed=3, answers=bad)
    with pytest.raises(Finished, match=f"answer {len(log)} does not replay"):
        open_session("topk", DOCS, k=5, seed=3, answers=[*log, log[-1]])
    with pytest.raises(WrongQuestion):  # another seed gives other questions
        open_session("topk", DOCS, k=5, seed=4, answers=log)


def test_undo_is_replay_without_the_last_answer():
    log = finished_log().answers
    for cut in (1, 5, len(log) - 1, len(log)):
        undone = open_session("topk", DOCS, k=5, seed=3, answers=log[: cut - 1])
        again = open_session("topk", DOCS, k=5, seed=3, answers=log[:cut])
        assert undone.pending.seq == cut - 1
        assert undone.pending == PairQuestion(cut - 1, log[cut - 1].left, log[cut - 1].right)
        assert not again.done or cut == len(log)


def test_orientation_is_a_function_of_seed_and_seq():
    flips = [shows_swapped(5, i) for i in range(400)]
    assert flips == [shows_swapped(5, i) for i in range(400)]
    assert 150 < sum(flips) < 250  # balanced
    assert flips != [shows_swapped(6, i) for i in range(400)]
    # The session shows question seq as (b, a) exactly when shows_swapped(seed, seq).
    s = open_session("topk", DOCS, k=5, seed=5, options={"pair_cache": False})
    while not s.done:
        q = s.pending
        c = s._compare
        assert (q.left, q.right) == ((c.b, c.a) if shows_swapped(5, q.seq) else (c.a, c.b))
        s.submit(oracle_answer(q))


def test_seeded_and_explicit_initial_order():
    assert seeded_order(DOCS, 9) == seeded_order(DOCS, 9) != seeded_order(DOCS, 10)
    assert sorted(seeded_order(DOCS, 9)) == DOCS
    s = open_session("topk", DOCS, k=5, seed=9)
    assert s.order == seeded_order(DOCS, 9)
    system = sorted(DOCS, key=lambda d: -SCORES[d])
    t = open_session("topk", DOCS, k=5, seed=9, options={"initial_order": system[:8]})
    assert t.order[:8] == system[:8] and sorted(t.order) == DOCS
    # Best-first input: no stream item beats the root, so Step 2 is one question per item.
    run = run_session(t, Assessor(SCORES, seed=1))
    assert run.result.top == system[:5]
    assert run.judgments < finished_log().result().judgments


def test_ties_count_as_not_preferred_and_are_recorded():
    s = open_session("topk", DOCS, k=5, seed=3, options={"allow_ties": True})
    assert s.allowed_outcomes[:3] == ("left", "right", "tie")
    while not s.done:
        q = s.pending
        s.submit(PairAnswer(q.left, q.right, "tie"))
    r = s.result()
    # All ties: no replacement, no swap; the heap keeps the first k of the order as is.
    assert set(r.top) == set(s.order[:5]) and r.rest == s.order[5:]
    assert all(j.winner is None for j in r.judged)
    assert not any(p.direct for p in r.implied_pairs())


def test_not_relevant_only_for_a_challenger():
    s = open_session("topk", DOCS, k=5, seed=3, options={"not_relevant": True})
    seen_build = seen_challenger = False
    while not s.done:
        q = s.pending
        if s.pending_challenger is None:
            seen_build = True
            assert "not_relevant" not in s.allowed_outcomes
            with pytest.raises(InvalidAnswer, match="only to a challenger"):
                s.submit(PairAnswer(q.left, q.right, "not_relevant"))
            s.submit(oracle_answer(q))
        else:
            seen_challenger = True
            assert s.phase == "stream" and s.pending_challenger in (q.left, q.right)
            assert "not_relevant" in s.allowed_outcomes
            s.submit(PairAnswer(q.left, q.right, "not_relevant"))
    assert seen_build and seen_challenger
    r = s.result()
    # Every challenger was sent to the rest: the top is the first k of the order, sorted.
    assert set(r.top) == set(s.order[:5])
    assert r.top == sorted(s.order[:5], key=lambda d: -SCORES[d])
    assert r.rest == s.order[5:]
    assert sum(j.not_relevant for j in r.judged) == len(DOCS) - 5
    # "Not relevant" is a judgment of the challenger alone, not a comparison of the pair (as in
    # labeling.analysis.agreement): top ≻ challenger follows from it, it was not judged directly.
    assert not any(p.direct or p.contradicted for p in r.implied_pairs() if p.worse in r.rest)


def test_invalid_answers_name_the_question():
    s = open_session("topk", DOCS, k=5, seed=3, options={"not_relevant": True})
    while s.pending_challenger is None:
        s.submit(oracle_answer(s.pending))
    q = s.pending
    for outcome, message in (
        ("tie", "ties are not enabled"),
        ("maybe", "unknown outcome 'maybe'"),
    ):
        with pytest.raises(InvalidAnswer, match=f"question {q.seq} .*{message}"):
            s.submit(PairAnswer(q.left, q.right, outcome))  # type: ignore[arg-type]
    s = open_session("topk", DOCS, k=5, seed=3)
    with pytest.raises(InvalidAnswer, match=r"question 0 .*not-relevant answer is not enabled"):
        s.submit(PairAnswer(s.pending.left, s.pending.right, "not_relevant"))
    g = open_session("graded", DOCS, seed=3)
    doc = g.pending.doc_id
    with pytest.raises(InvalidAnswer, match=rf"question 0 \({doc}\): grade must be"):
        g.submit(GradeAnswer(doc, 7))


def test_result_has_both_counts_and_all_implied_pairs():
    r = finished_log().result()
    assert r.n == 20 and r.k == 5 and r.calls >= r.judgments
    assert len(list(r.implied_pairs())) == 5 * 4 // 2 + 5 * 15
    assert r.ranking()[:5] == r.top
    pairs = r.preference_pairs()
    assert len(set(pairs)) == len(pairs)


def test_judging_session_runtime_type():
    assert isinstance(open_session("topk", DOCS, k=3, seed=0), TopKSession)


class InsertionTopK:
    """A toy second strategy (linear insertion into a sorted top list) for the extension point."""

    def __init__(self, order, k):
        self.order, self.k, self.phase = list(order), k, "stream"
        self.asked = 0

    def run(self):
        top, rest = [], []
        for item in self.order:
            pos = len(top)
            while pos > 0 and (yield Compare(item, top[pos - 1])) == item:
                pos -= 1
            top.insert(pos, item)
            if len(top) > self.k:
                rest.append(top.pop())
        self.phase = "done"
        return top, rest

    def max_remaining(self):
        return 0 if self.phase == "done" else len(self.order) * self.k


def test_another_strategy_plugs_into_the_session():
    opts = validate_options("topk", None)
    s = TopKSession(DOCS, k=5, seed=3, options=opts, strategy=InsertionTopK)
    run = run_session(s, Assessor(SCORES, seed=0))
    assert run.result.top == sorted(DOCS, key=lambda d: -SCORES[d])[:5]
    assert s.progress().done
