"""The κ-NDCG@k loss estimate of a task's machine answers (labeling.study.uncertainty):
a hand-checked case, the degenerate (0, 0) interval, the replay against a real session, and
the Monte Carlo mean against the exact enumeration over seeds and logs."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labeling.errors import ConfigError
from labeling.protocol.session import open_session
from labeling.protocol.topk import TopKSession
from labeling.protocol.types import MachineAnswer, PairAnswer
from labeling.study.uncertainty import (
    estimate_loss,
    exact_loss,
    machine_log,
    none_estimate,
    pattern_losses,
    reference_ranking,
    total,
)
from ranking.metrics import kappa_ndcg


def assisted_session(
    n: int, k: int, base: str, seed: int, share: float, accuracy: float, p: float
) -> tuple[TopKSession, dict[str, int]]:
    """A finished ``base+assist`` session over n documents (truth: d0 best): each question is
    the machine's with probability ``share`` (right with probability ``accuracy``, stated
    probability ``p``), else a consistent person's."""
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(n)]
    rank = {d: i for i, d in enumerate(docs)}
    s = open_session("topk", docs, k=k, seed=seed, options={"strategy": f"{base}+assist"})
    while not s.done:
        q = s.pending
        assert q is not None
        truth = "left" if rank[q.left] < rank[q.right] else "right"
        if rng.random() < share:
            right = rng.random() < accuracy
            outcome = truth if right else ("right" if truth == "left" else "left")
            s.submit(MachineAnswer(q.left, q.right, outcome, p))  # type: ignore[arg-type]
        else:
            s.submit(PairAnswer(q.left, q.right, truth))  # type: ignore[arg-type]
    return s, rank


def test_one_machine_answer_deciding_the_top_one_by_hand() -> None:
    # Two documents, k = 1: the machine's answer alone decides the top; wrong (p = 0.2) the
    # top is the other document and κ-NDCG@1 is 0. So E[loss] = 0.2, the 90% interval [0, 1].
    s = open_session("topk", ["a", "b"], k=1, seed=3, options={"strategy": "tournament+assist"})
    q = s.pending
    assert q is not None
    s.submit(MachineAnswer(q.left, q.right, "left", 0.8))
    log = machine_log(s)
    assert exact_loss(log) == pytest.approx(0.2, abs=1e-12)
    assert list(pattern_losses(log, np.array([[False], [True]]))) == [0.0, 1.0]
    est = estimate_loss(log, replays=4000, seed=1)
    flips = np.random.default_rng(1).random((4000, 1)) < 0.2
    assert est.mean == pytest.approx(flips.mean(), abs=1e-12)  # the same draws, counted
    assert (est.low, est.high) == (0.0, 1.0)
    # A confident machine (wrong 1%): the interval is (0, 0), the mean still counts the risk.
    s2 = open_session("topk", ["a", "b"], k=1, seed=3, options={"strategy": "tournament+assist"})
    s2.submit(MachineAnswer(q.left, q.right, "left", 0.99))
    est2 = estimate_loss(machine_log(s2), replays=4000, seed=1)
    assert (est2.low, est2.high) == (0.0, 0.0)
    assert 0.0 < est2.mean < 0.03


def test_no_machine_answers_give_the_degenerate_interval() -> None:
    s, _ = assisted_session(20, 5, "heap", seed=2, share=0.0, accuracy=1.0, p=0.9)
    est = estimate_loss(machine_log(s))
    assert est == none_estimate()
    assert (est.machine_answers, est.mean, est.low, est.high) == (0, 0.0, 0.0, 0.0)
    assert est.to_json()["interval"] == [0.0, 0.0]
    assert exact_loss(machine_log(s)) == 0.0


def test_certain_machine_answers_cost_nothing() -> None:
    s, _ = assisted_session(30, 5, "insertion", seed=4, share=0.5, accuracy=1.0, p=1.0)
    est = estimate_loss(machine_log(s), replays=200)
    assert est.machine_answers > 0
    assert (est.mean, est.low, est.high) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize("base", ["heap", "tournament", "insertion", "prior"])
def test_the_replay_follows_a_real_session(base: str) -> None:
    s, _ = assisted_session(25, 5, base, seed=7, share=0.4, accuracy=0.8, p=0.8)
    log = machine_log(s)
    m = len(log.machine)
    assert m > 0
    # No flip: the logged result, loss 0.
    assert pattern_losses(log, np.zeros((1, m), dtype=bool)).tolist() == [0.0]
    # One flip: the same as a fresh session (no machine) answered by the flipped log, the
    # person's answers as logged and any new pair by the reference ranking.
    logged = {d: i for i, d in enumerate([*log.top, *log.rest])}
    answers = {(a, b): w for (a, b), w in log.human.items()}
    for a, b, w, _p in log.machine:
        answers[(a, b)] = w
    # The machine answer whose flip costs most (a flip that changes the top).
    singles = pattern_losses(log, np.eye(m, dtype=bool))
    i = int(np.argmax(singles))
    assert singles[i] > 0.0
    a0, b0, w0, _ = log.machine[i]
    answers[(a0, b0)] = b0 if w0 == a0 else a0
    flip = np.zeros(m, dtype=bool)
    flip[i] = True
    reference = reference_ranking(log, flip)
    options = {"strategy": base, "initial_order": list(log.order)}
    fresh = open_session("topk", list(log.order), k=5, seed=7, options=options)
    while not fresh.done:
        q = fresh.pending
        assert q is not None
        key = (q.left, q.right) if q.left < q.right else (q.right, q.left)
        w = answers[key] if key in answers else min(q.left, q.right, key=reference.__getitem__)
        fresh.submit(PairAnswer(q.left, q.right, "left" if w == q.left else "right"))
    top = fresh.result().top
    docs = list(log.order)
    labels = np.array([[5 - top.index(d) if d in top else 0 for d in docs]], dtype=float)
    scores = np.array([[len(docs) - logged[d] for d in docs]], dtype=float)
    expected = 1.0 - float(kappa_ndcg(labels, scores, at=5)[0])
    assert pattern_losses(log, flip[None, :])[0] == pytest.approx(expected, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    base=st.sampled_from(["heap", "tournament", "insertion"]),
    seed=st.integers(0, 10_000),
    p=st.floats(0.55, 0.99),
    accuracy=st.floats(0.5, 1.0),
)
def test_the_monte_carlo_mean_is_the_exact_expectation(
    base: str, seed: int, p: float, accuracy: float
) -> None:
    s, _ = assisted_session(12, 3, base, seed=seed, share=0.3, accuracy=accuracy, p=p)
    log = machine_log(s)
    if len(log.machine) > 10:
        log = machine_log(assisted_session(8, 3, base, seed, 0.2, accuracy, p)[0])
    exact = exact_loss(log)
    est = estimate_loss(log, replays=3000, seed=seed)
    losses = pattern_losses(
        log,
        np.random.default_rng(seed).random((3000, len(log.machine)))
        < 1.0 - np.array([q for *_r, q in log.machine]),
    )
    assert est.mean == pytest.approx(float(losses.mean()), abs=1e-12)
    # Within five standard errors of the exact expectation (losses lie in [0, 1]).
    assert abs(est.mean - exact) <= 5.0 * max(float(losses.std()), 1e-3) / np.sqrt(3000) + 1e-9
    # (a rare large loss may put the mean above the 95% quantile)
    assert 0.0 <= est.low <= min(est.mean, est.high) and max(est.mean, est.high) <= 1.0
    assert est.machine_answers == len(log.machine)


def test_totals_add_the_tasks_with_machine_answers() -> None:
    s, _ = assisted_session(20, 5, "heap", seed=5, share=0.5, accuracy=0.7, p=0.7)
    one = estimate_loss(machine_log(s), replays=100)
    both = total([one, one, none_estimate()])
    assert both.tasks == 2 and both.machine_answers == 2 * one.machine_answers
    assert both.estimated_loss == pytest.approx(2 * one.mean)
    assert (both.low, both.high) == pytest.approx((2 * one.low, 2 * one.high))


def test_bad_settings_are_refused() -> None:
    s, _ = assisted_session(10, 3, "heap", seed=1, share=0.5, accuracy=0.7, p=0.7)
    log = machine_log(s)
    for kwargs in ({"replays": 0}, {"replays": True}, {"level": 1.0}, {"level": 0.0}):
        with pytest.raises(ConfigError):
            estimate_loss(log, **kwargs)  # type: ignore[arg-type]


def two_documents(p: float) -> TopKSession:
    s = open_session("topk", ["a", "b"], k=1, seed=3, options={"strategy": "tournament+assist"})
    q = s.pending
    assert q is not None
    s.submit(MachineAnswer(q.left, q.right, "left", p))
    return s


def test_audits_set_the_error_rates() -> None:
    # The two-document case (loss 1 when the answer is wrong): the mean is the audited error
    # rate, the Beta posterior mean (W + 2·0.2) / (n + 2) of its bin.
    log = machine_log(two_documents(0.8))
    wrong = estimate_loss(log, replays=20_000, seed=2, audits=[(0.8, False)] * 100)
    assert wrong.mean == pytest.approx((100 + 0.4) / 102, abs=0.01)
    right = estimate_loss(log, replays=20_000, seed=2, audits=[(0.8, True)] * 100)
    assert right.mean == pytest.approx(0.4 / 102, abs=0.003)
    # The interval spans the stated replays too: [0, 1] either way here.
    assert (wrong.low, wrong.high) == (right.low, right.high) == (0.0, 1.0)
    # Audits of another bin leave this one to its prior (mean 1 − p = 0.2).
    other = estimate_loss(log, replays=20_000, seed=2, audits=[(0.999, True)] * 100)
    assert other.mean == pytest.approx(0.2, abs=0.01)


def test_a_confident_machine_the_audits_contradict_widens_the_interval() -> None:
    log = machine_log(two_documents(0.995))
    stated = estimate_loss(log, replays=2000, seed=1)
    assert (stated.low, stated.high) == (0.0, 0.0)
    audited = estimate_loss(log, replays=2000, seed=1, audits=[(0.995, False)] * 10)
    assert (audited.low, audited.high) == (0.0, 1.0)
    assert audited.mean > 0.5


def test_the_reference_moves_a_flipped_loser_above_its_winner() -> None:
    from labeling.strategies.heap import HeapTopK
    from labeling.study.uncertainty import MachineLog

    docs = ("a", "b", "c", "d", "e")

    def log(human: dict[tuple[str, str], str | None]) -> MachineLog:
        # The machine said b beat e; the logged ranking is a b c d e.
        return MachineLog(HeapTopK, docs, 2, human, (("b", "e", "b", 0.7),), docs[:2], docs[2:])

    flip = np.array([True])
    # Nothing known above e: e lands at place 0 or 1 (uniform up to just above b).
    ranking = reference_ranking(log({}), flip)
    assert sorted(ranking, key=ranking.get) in (list("eabcd"), list("aebcd"))
    # A person put a above e: e goes just above b, below a.
    ranking = reference_ranking(log({("a", "e"): "a"}), flip)
    assert sorted(ranking, key=ranking.get) == ["a", "e", "b", "c", "d"]
    # Not flipped: the logged ranking.
    ranking = reference_ranking(log({}), np.array([False]))
    assert sorted(ranking, key=ranking.get) == list(docs)
