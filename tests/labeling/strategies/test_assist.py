"""The ``+assist`` modifier (docs/machine-judges.md#the-rule): a machine that is always right
changes no result; a wrong one without evidence answers only questions of small stake (a
coin's claim, within max_loss), and one the study's evidence
trusted raises the audit alarm within the stated number of audits and answers no more; replay
of any prefix of a live log gives the live state, and the machine answers derived after it are
the logged ones; the progress bound never under-promises; machine answers are marked in the
log; what the assessor reads of the progress is the same with the machine on or off."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labeling.errors import InvalidAnswer, WrongQuestion
from labeling.machine.trust import (
    STAKE_CLASSES,
    AuditMonitor,
    StratumEvidence,
    audits_to_alarm,
    confidence_bin,
)
from labeling.protocol.session import open_session
from labeling.protocol.spec import validate_options
from labeling.protocol.topk import TopKSession
from labeling.protocol.types import MachineAnswer, PairAnswer
from labeling.strategies.assist import AssistStrategy, wrong_stake
from labeling.strategies.registry import strategy_names
from labeling.study.simulation import Assessor, run_session
from ranking.metrics import kappa_ndcg

ASSISTED = [name for name in strategy_names() if "assist" in name.split("+")[1:]]


class Oracle:
    """A machine that knows the truth (``wrong`` inverts it) and is certain, or says
    ``confidence`` for the side it picks."""

    version = "oracle/test"

    def __init__(self, rank: dict[str, int], *, wrong: bool = False, confidence: float = 1.0):
        self.rank, self.wrong, self.confidence = rank, wrong, confidence

    def probability(self, first: str, second: str) -> float | None:
        first_better = (self.rank[first] < self.rank[second]) != self.wrong
        return self.confidence if first_better else 1.0 - self.confidence


class Noisy(Oracle):
    """Right on pairs whose seeded hash is even, wrong otherwise, with a confidence that
    varies by pair: a machine whose answers disagree with people now and then."""

    def probability(self, first: str, second: str) -> float | None:
        h = hash((first, second)) % 7
        if h == 0:
            return None
        first_better = self.rank[first] < self.rank[second]
        if h == 1:
            first_better = not first_better
        c = 0.6 + 0.4 * h / 7
        return c if first_better else 1.0 - c


def _docs(n: int) -> list[str]:
    return [f"d{i:02d}" for i in range(n)]


def _session(name: str, n: int, k: int, seed: int, machine, answers=()) -> TopKSession:
    opts = validate_options("topk", {"strategy": name})
    return open_session(
        "topk", _docs(n), k=k, seed=seed, options=opts, answers=answers, machine=machine
    )


def _truth(n: int, perm_seed: int) -> tuple[dict[str, float], dict[str, int]]:
    import random

    docs = _docs(n)
    rng = random.Random(perm_seed)
    values = list(range(n))
    rng.shuffle(values)
    scores = {d: float(v) for d, v in zip(docs, values, strict=True)}
    rank = {d: r for r, d in enumerate(sorted(docs, key=lambda d: -scores[d]))}
    return scores, rank


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(ASSISTED),
    n=st.integers(1, 12),
    k=st.integers(1, 6),
    seed=st.integers(0, 2**16),
    perm=st.integers(0, 2**16),
)
def test_an_always_right_certain_machine_gives_the_person_only_result(name, n, k, seed, perm):
    scores, rank = _truth(n, perm)
    base = name.replace("+assist", "")
    alone = run_session(_session(base, n, k, seed, None), Assessor(scores, seed=1))
    helped_session = _session(name, n, k, seed, Oracle(rank))
    helped = run_session(helped_session, Assessor(scores, seed=1))
    assert helped.result.top == alone.result.top
    assert helped.result.top == sorted(rank, key=rank.__getitem__)[: min(k, n)]
    assert helped.judgments <= alone.judgments  # people answer no more than alone
    assert helped.judgments == helped_session.human_judgments


class Trusted(Oracle):
    """A machine the study's evidence trusted (``prior`` right answers in every stratum of its
    confidence bin), now wrong on every pair when ``wrong``."""

    def __init__(self, rank, *, wrong: bool, prior: int = 200, audits=None):
        super().__init__(rank, wrong=wrong, confidence=0.9999)
        b = confidence_bin(0.9999)
        assert b is not None
        records = [(b * STAKE_CLASSES + c, False) for c in range(STAKE_CLASSES)] * prior
        self.stratum_evidence = StratumEvidence.of(records)
        self.prior_audits = audits


def _kappa_ndcg(rank: dict[str, int], produced: list[str], k: int) -> float:
    truth = sorted(rank, key=rank.__getitem__)
    label = {d: k - i for i, d in enumerate(truth[:k])}
    position = {d: i for i, d in enumerate(produced)}
    labels = np.array([[label.get(d, 0) for d in truth]], dtype=float)
    scores = np.array([[len(truth) - position[d] for d in truth]], dtype=float)
    return float(kappa_ndcg(labels, scores, at=k)[0])


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(ASSISTED), seed=st.integers(0, 2**16), perm=st.integers(0, 2**16))
def test_a_wrong_machine_without_evidence_answers_only_small_stakes(name, seed, perm):
    """Cold start: every human answer contradicts the machine, so its bound stays 1 and it
    answers only questions whose stake is within the per-question tolerance, each logged as
    a coin's claim (P(right) 1/2), never audited as a better claim; their risks, charged at
    the bound 1, stay within max_loss, and the result loses at most twice max_loss (the stake
    model is an expectation for one wrong answer; these are all wrong)."""
    n, k = 30, 5
    scores, rank = _truth(n, perm)
    s = _session(name, n, k, seed, Oracle(rank, wrong=True))
    run = run_session(s, Assessor(scores, seed=2))
    state = s.state
    assert isinstance(state, AssistStrategy)
    machine = [a for a in s.answers if isinstance(a, MachineAnswer)]
    assert len(machine) == len(s.machine_seqs)
    assert all(a.probability == 0.5 for a in machine)
    assert state.audit_records == [] and not state.alarmed
    assert state.spent <= state.max_loss + 1e-12
    if not machine:
        assert run.result.top == sorted(rank, key=rank.__getitem__)[:k]
    loss = 1.0 - _kappa_ndcg(rank, [*run.result.top, *run.result.rest], k)
    assert loss <= 2 * state.max_loss


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(ASSISTED), seed=st.integers(0, 2**16), perm=st.integers(0, 2**16))
def test_a_trusted_machine_gone_wrong_raises_the_alarm_within_the_stated_audits(name, seed, perm):
    """Its claims are small (the study trusted it), so each wrong audit multiplies the
    likelihood ratio by at least 1/(2·max claim): the alarm comes within
    ``audits_to_alarm(max claim)`` audits, and the machine answers nothing after it."""
    n, k = 40, 5
    scores, rank = _truth(n, perm)
    s = _session(name, n, k, seed, Trusted(rank, wrong=True))
    person = Assessor(scores, seed=2)
    state = s.state
    assert isinstance(state, AssistStrategy)
    after_alarm = 0
    while not s.done:
        given_now = s.let_machine_answer()
        if state.alarmed:
            after_alarm += len(given_now) if state.audit_records else 0
        if s.done:
            break
        s.submit(person.answer(s))
    records = state.audit_records
    assert all(wrong for _, wrong in records)
    if records:
        limit = audits_to_alarm(max(c for c, _ in records))
        assert len(records) <= limit  # no audit after the alarm: the machine stopped
        assert state.alarmed == (len(records) == limit)
        assert state.alarmed == _alarmed(records)
    assert after_alarm == 0


def _alarmed(records) -> bool:
    m = AuditMonitor()
    for claimed, wrong in records:
        m.record(claimed, wrong)
    return m.alarmed


def test_a_trusted_machine_gone_wrong_alarms_and_hands_over_to_people():
    """Over a study of queries (the audits carried from one to the next), the alarm comes and
    the machine then answers nothing, while people finish every query exactly."""
    audits = AuditMonitor()
    alarmed_at = None
    for q in range(30):
        scores, rank = _truth(40, 100 + q)
        machine = Trusted(rank, wrong=True, audits=audits)
        s = _session("insertion+assist", 40, 5, q, machine)
        run = run_session(s, Assessor(scores, seed=q))
        state = s.state
        assert isinstance(state, AssistStrategy)
        if alarmed_at is not None:
            assert s.machine_seqs == []
            assert run.result.top == sorted(rank, key=rank.__getitem__)[:5]
        audits = state.monitor
        if audits.alarmed and alarmed_at is None:
            alarmed_at = q
            assert audits.audits <= 30
    assert alarmed_at is not None


def _live(name: str, n: int, k: int, seed: int, machine, person: Assessor):
    """A live run: the log, and per log length the state a replay must show."""
    s = _session(name, n, k, seed, machine)
    snapshots = {}

    def snap(session: TopKSession):
        st_ = session.state
        assert isinstance(st_, AssistStrategy)
        return (
            session.pending,
            session.progress(),
            tuple(session.machine_seqs),
            tuple(st_.trust.answers),
            round(st_.spent, 12),
            st_.machine_answers,
        )

    snapshots[0] = snap(s)
    remaining_checks = []
    while True:
        for _ in s.let_machine_answer():
            pass
        snapshots[len(s.answers)] = snap(s)
        if s.done:
            break
        remaining_checks.append((len(s.answers), s.progress().max_remaining))
        s.submit(person.answer(s))
        snapshots[len(s.answers)] = snap(s)
    return s, snapshots, remaining_checks


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(ASSISTED),
    n=st.integers(2, 14),
    k=st.integers(1, 5),
    seed=st.integers(0, 2**16),
    perm=st.integers(0, 2**16),
)
def test_replay_of_any_prefix_gives_the_live_state(name, n, k, seed, perm):
    scores, rank = _truth(n, perm)
    machine = Noisy(rank)
    live, snapshots, _ = _live(name, n, k, seed, machine, Assessor(scores, seed=3))
    log = list(live.answers)
    for i in range(len(log) + 1):
        replayed = _session(name, n, k, seed, machine, log[:i])
        st_ = replayed.state
        assert isinstance(st_, AssistStrategy)
        if i in snapshots:
            assert (
                replayed.pending,
                replayed.progress(),
                tuple(replayed.machine_seqs),
                tuple(st_.trust.answers),
                round(st_.spent, 12),
                st_.machine_answers,
            ) == snapshots[i]
        # Machine answers are derived: from any prefix, the machine gives exactly the logged
        # machine answers up to the next person's answer (what undo relies on).
        derived = replayed.let_machine_answer()
        expected = []
        for entry in log[i:]:
            if not isinstance(entry, MachineAnswer):
                break
            expected.append(entry)
        assert derived == expected
    assert live.result().top == _session(name, n, k, seed, machine, log).result().top


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(ASSISTED),
    n=st.integers(2, 14),
    k=st.integers(1, 5),
    seed=st.integers(0, 2**16),
    perm=st.integers(0, 2**16),
)
def test_the_progress_bound_never_under_promises(name, n, k, seed, perm):
    scores, rank = _truth(n, perm)
    live, _, checks = _live(name, n, k, seed, Noisy(rank), Assessor(scores, seed=4))
    total = len(live.answers)
    for at, bound in checks:
        assert bound >= total - at  # people and machine answers still to come


def test_machine_answers_are_marked_and_checked_in_the_log():
    scores, rank = _truth(20, 7)
    s = _session("insertion+assist", 20, 5, 3, Trusted(rank, wrong=False))
    run_session(s, Assessor(scores, seed=1))
    machine = [a for a in s.answers if isinstance(a, MachineAnswer)]
    assert machine and [s.answers.index(a) for a in machine] == s.machine_seqs
    assert all(a.version == "oracle/test" and 0.5 <= a.probability <= 1 for a in machine)
    judged = s.result().judged
    assert sum(j.machine for j in judged) == len(machine)
    assert sum(not j.machine and not j.cached for j in judged) == s.human_judgments
    first = s.machine_seqs[0]
    replayed = _session("insertion+assist", 20, 5, 3, None, s.answers[:first])
    m = s.answers[first]
    assert isinstance(m, MachineAnswer)
    with pytest.raises(InvalidAnswer):
        replayed.submit(MachineAnswer(m.left, m.right, m.outcome, 0.3))
    with pytest.raises(WrongQuestion):
        replayed.submit(MachineAnswer(m.right, m.left, m.outcome, 0.9))
    # A strategy without +assist accepts no machine answer.
    plain = _session("insertion", 20, 5, 3, None)
    q = plain.pending
    assert q is not None
    with pytest.raises(WrongQuestion):
        plain.submit(MachineAnswer(q.left, q.right, "left", 0.9))
    plain.submit(PairAnswer(q.left, q.right, "left"))


def test_the_stake_falls_with_the_known_documents_above():
    assert wrong_stake(10, 0, 0) > wrong_stake(10, 4, 0) > wrong_stake(10, 9, 9) > 0
    assert wrong_stake(10, 10, 10) == 0.0  # l cannot be in the top 10 either way


def test_a_broken_document_keeps_the_machine_answers_the_machines():
    """After a broken document the strategy runs again over the others from the log: the
    machine's earlier answers stay the machine's (counted and spent as such, not learned from
    as people's)."""
    from labeling.protocol.types import BrokenAnswer

    scores, rank = _truth(24, 11)
    s = _session("insertion+assist", 24, 5, 9, Trusted(rank, wrong=False))
    person = Assessor(scores, seed=1)
    while not s.done and len(s.machine_seqs) < 3:
        s.let_machine_answer()
        if not s.done and len(s.machine_seqs) < 3:
            s.submit(person.answer(s))
    assert len(s.machine_seqs) >= 3 and not s.done
    q = s.pending
    assert q is not None
    s.submit(BrokenAnswer(q.left, "unreadable", q.left, q.right))
    state = s.state
    assert isinstance(state, AssistStrategy)
    kept = [
        a for a in s.answers if isinstance(a, MachineAnswer) and q.left not in (a.left, a.right)
    ]
    assert state.machine_answers == len(kept)
    assert sum(j.machine for j in s.judged) == len(kept)
    assert state.person_answers == sum(
        1 for a in s.answers if isinstance(a, PairAnswer) and q.left not in (a.left, a.right)
    )
    replayed = _session("insertion+assist", 24, 5, 9, Trusted(rank, wrong=False), s.answers)
    assert replayed.pending == s.pending and replayed.state.machine_answers == len(kept)
