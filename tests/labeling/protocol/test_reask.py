"""Task option ``reask_fraction``: swapped re-asks of a seeded fraction of the pairs.

The re-ask of the protocol question answered at ``seq = s`` is posed at ``s + REASK_GAP + 1``
(or as soon as the protocol has no question left) with the sides swapped; it is logged like any
other answer but never drives the heap. Replay, undo and the progress bound keep their
properties; self-consistency counts the re-asks.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labeling.analysis.consistency import repeated_judgments, self_consistency
from labeling.analysis.records import JudgmentRecord
from labeling.errors import ConfigError, InvalidAnswer, WrongQuestion
from labeling.protocol.seeding import REASK_GAP, reask_triggered
from labeling.protocol.session import open_session
from labeling.protocol.spec import validate_options
from labeling.protocol.topk import TopKSession
from labeling.protocol.types import PairAnswer
from labeling.study.simulation import Assessor, run_session

DOCS = [f"doc{i:02d}" for i in range(24)]
SCORES = {d: float((7 * i) % 24) for i, d in enumerate(DOCS)}


def oracle(s: TopKSession) -> PairAnswer:
    q = s.pending
    assert q is not None
    return PairAnswer(q.left, q.right, "left" if SCORES[q.left] > SCORES[q.right] else "right")


def contrary(s: TopKSession) -> PairAnswer:
    """Consistent on protocol questions, the opposite on every re-ask."""
    a = oracle(s)
    if s.pending_is_reask:
        return PairAnswer(a.left, a.right, "right" if a.outcome == "left" else "left")
    return a


def run(seed: int = 3, k: int = 5, answer=oracle, **options) -> TopKSession:
    s = open_session("topk", DOCS, k=k, seed=seed, options=options)
    assert isinstance(s, TopKSession)
    while not s.done:
        s.submit(answer(s))
    return s


def protocol_seqs(s: TopKSession) -> list[int]:
    return [i for i in range(len(s.answers)) if i not in s.reasks]


# -- the option --------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [0.0, 0, 0.01, 0.25, 0.5, 1 / 3])
def test_valid_fractions_are_recorded_and_idempotent(value: float) -> None:
    opts = validate_options("topk", {"reask_fraction": value})
    # Filled in like every option, always as a float; absent means 0.
    assert opts["reask_fraction"] == value and isinstance(opts["reask_fraction"], float)
    if value == 0:
        assert opts == validate_options("topk", None)
    assert validate_options("topk", opts) == opts


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-0.1, "in [0, 0.5]"),
        (0.51, "in [0, 0.5]"),
        (1, "in [0, 0.5]"),
        (math.nan, "in [0, 0.5]"),
        (math.inf, "in [0, 0.5]"),
        ("0.1", "must be a number"),
        (None, "must be a number"),
        (True, "must be a number"),
    ],
)
def test_invalid_fractions_are_rejected(value: object, message: str) -> None:
    with pytest.raises(ConfigError, match="reask_fraction") as err:
        validate_options("topk", {"reask_fraction": value})
    assert message in str(err.value)
    with pytest.raises(ConfigError, match="reask_fraction"):
        open_session("topk", DOCS, k=5, seed=1, options={"reask_fraction": value})
    with pytest.raises(ConfigError, match="unknown option"):  # graded has no options
        validate_options("graded", {"reask_fraction": 0.1})


def test_zero_fraction_is_the_protocol_without_reasks() -> None:
    plain, zero = run(), run(reask_fraction=0.0)
    assert plain.answers == zero.answers and zero.reasks == {}
    assert plain.result() == zero.result() and zero.result().reasks == 0
    # Progress at every step is identical too (same code path).
    a = open_session("topk", DOCS, k=5, seed=3)
    b = open_session("topk", DOCS, k=5, seed=3, options={"reask_fraction": 0})
    for answer in plain.answers:
        assert a.progress() == b.progress() and a.pending == b.pending
        a.submit(answer)
        b.submit(answer)


# -- where re-asks appear ----------------------------------------------------------------------
def test_trigger_is_a_seeded_hash_with_the_requested_rate() -> None:
    hits = [reask_triggered(11, 0.2, i) for i in range(20_000)]
    assert hits == [reask_triggered(11, 0.2, i) for i in range(20_000)]
    assert hits != [reask_triggered(12, 0.2, i) for i in range(20_000)]
    # Binomial(20000, 0.2): sd ≈ 57, so ±300 is > 5 sd.
    assert abs(sum(hits) - 4000) < 300
    assert not any(reask_triggered(11, 0.0, i) for i in range(1000))
    # Monotone in the fraction: a larger fraction re-asks a superset.
    assert all(reask_triggered(11, 0.3, i) for i in range(20_000) if hits[i])


@pytest.mark.parametrize("cache", [True, False])
@pytest.mark.parametrize("seed", [0, 3, 17])
def test_positions_are_deterministic_swapped_and_never_reasked(cache: bool, seed: int) -> None:
    f = 0.4
    s = run(seed=seed, reask_fraction=f, pair_cache=cache)
    protocol = protocol_seqs(s)
    triggered = [p for p in protocol if reask_triggered(seed, f, p)]
    # Every triggered protocol question is re-asked exactly once, and nothing else is: the
    # pair cache does not swallow re-asks, and re-asks are never re-asked.
    assert sorted(s.reasks.values()) == triggered
    assert not set(s.reasks.values()) & set(s.reasks)
    assert s.result().reasks == len(triggered) > 0
    last_protocol = protocol[-1]
    for at, original in s.reasks.items():
        due = original + REASK_GAP + 1
        if due <= last_protocol:
            assert at == due  # posed exactly after the fixed gap while the protocol runs
        else:
            assert last_protocol < at <= due  # the protocol ended first: posed at once
        first, again = s.answers[original], s.answers[at]
        assert (again.left, again.right) == (first.right, first.left)  # the same pair, swapped
    # Once the protocol is done, the queued re-asks fill the seqs right after it, in order.
    tail = [at for at in s.reasks if at > last_protocol]
    assert tail == list(range(last_protocol + 1, len(s.answers)))


def test_positions_do_not_depend_on_the_answers() -> None:
    """Two different assessors see re-asks at the same seqs while both protocols run."""
    f, seed = 0.3, 5
    consistent = run(seed=seed, reask_fraction=f)
    noisy_assessor = Assessor(SCORES, seed=1, flip=0.3)
    noisy = run(seed=seed, reask_fraction=f, answer=noisy_assessor.answer)
    horizon = min(protocol_seqs(consistent)[-1], protocol_seqs(noisy)[-1])
    assert {a: o for a, o in consistent.reasks.items() if a <= horizon} == {
        a: o for a, o in noisy.reasks.items() if a <= horizon
    }


def test_reask_questions_are_ordinary_and_validated() -> None:
    s = open_session("topk", DOCS, k=5, seed=3, options={"reask_fraction": 0.5, "allow_ties": True})
    assert isinstance(s, TopKSession)
    while not s.pending_is_reask:
        s.submit(oracle(s))
    q = s.pending
    assert q is not None and q.seq == len(s.answers)
    before = (list(s.answers), s.pending, s.progress())
    with pytest.raises(WrongQuestion, match="swapped orientation"):
        s.submit(PairAnswer(q.right, q.left, "left"))
    with pytest.raises(InvalidAnswer):
        s.submit(PairAnswer(q.left, q.right, "not_relevant"))  # option off
    assert (list(s.answers), s.pending, s.progress()) == before  # errors change nothing
    s.submit(PairAnswer(q.left, q.right, "tie"))
    assert s.reasks[q.seq] in range(q.seq)
    assert s.reasked[-1].winner is None


def test_not_relevant_on_a_challenger_reask() -> None:
    options = {"reask_fraction": 0.5, "not_relevant": True}
    s = open_session("topk", DOCS, k=3, seed=2, options=options)
    assert isinstance(s, TopKSession)
    seen = 0
    while not s.done:
        q = s.pending
        assert q is not None
        if s.pending_is_reask:
            challenger = s.pending_challenger
            if challenger is not None:
                # The re-ask of a Step-2 root comparison offers the same buttons.
                assert "not_relevant" in s.allowed_outcomes
                s.submit(PairAnswer(q.left, q.right, "not_relevant"))
                last = s.reasked[-1]
                assert last.not_relevant and last.a == challenger and last.winner == last.b
                seen += 1
                continue
            assert "not_relevant" not in s.allowed_outcomes
            with pytest.raises(InvalidAnswer, match="challenger"):
                s.submit(PairAnswer(q.left, q.right, "not_relevant"))
        s.submit(oracle(s))
    assert seen > 0
    assert s.result().top == sorted(DOCS, key=lambda d: -SCORES[d])[:3]


# -- the heap keeps the first answer -----------------------------------------------------------
@pytest.mark.parametrize("cache", [True, False])
def test_result_unaffected_by_reasks(cache: bool) -> None:
    base = run(seed=9, pair_cache=cache)
    for answer in (oracle, contrary):
        s = run(seed=9, pair_cache=cache, reask_fraction=0.5, answer=answer)
        r, b = s.result(), base.result()
        assert (r.top, r.rest, r.kappa_labels) == (b.top, b.rest, b.kappa_labels)
        # The protocol asked the same comparisons with the same answers (orientation aside).
        assert r.judged == b.judged and r.calls == b.calls
        assert r.judgments == b.judgments + r.reasks == len(s.answers)
        assert r.reasks == len(s.reasks) > 0
        assert len(r.reasked) == r.reasks
        assert list(r.implied_pairs()) == list(b.implied_pairs())


# -- replay, undo, progress (hypothesis) -------------------------------------------------------
@st.composite
def sessions(draw):
    n = draw(st.integers(1, 18))
    k = draw(st.integers(1, 6))
    docs = [f"d{i}" for i in range(n)]
    scores = {d: float(draw(st.integers(0, 5))) for d in docs}
    options = {
        "reask_fraction": draw(st.sampled_from([0.1, 0.25, 0.5])),
        "pair_cache": draw(st.booleans()),
        "allow_ties": draw(st.booleans()),
        "not_relevant": draw(st.booleans()),
    }
    assessor = Assessor(
        scores,
        seed=draw(st.integers(0, 1000)),
        flip=draw(st.sampled_from([0.0, 0.2])),
        tie=0.1 if options["allow_ties"] else 0.0,
        not_relevant_below=1.0 if options["not_relevant"] else None,
    )
    return docs, k, draw(st.integers(0, 2**31)), options, assessor


@settings(max_examples=40, deadline=None)
@given(sessions())
def test_replay_undo_and_progress_properties(case) -> None:
    docs, k, seed, options, assessor = case
    s = open_session("topk", docs, k=k, seed=seed, options=options)
    trail = []
    while not s.done:
        p = s.progress()
        assert p.max_remaining >= 1 and 1.0 <= p.expected_remaining <= p.max_remaining
        trail.append((s.pending, s.pending_is_reask, p))
        s.submit(assessor.answer(s))
    total = len(s.answers)
    # The worst-case bound holds at every step, re-asks included (any assessor).
    for i, (_, _, p) in enumerate(trail):
        assert p.max_remaining >= total - i
    assert s.progress().done and s.progress().max_remaining == 0
    log = s.answers
    cuts = sorted({0, 1, total // 2, total - 1, total} & set(range(total + 1)))
    for cut in cuts:
        again = open_session("topk", docs, k=k, seed=seed, options=options, answers=log[:cut])
        assert isinstance(again, TopKSession)
        if cut < total:
            pending, is_reask, p = trail[cut]
            assert (again.pending, again.pending_is_reask, again.progress()) == (
                pending,
                is_reask,
                p,
            )
        assert again.reasks == {a: o for a, o in s.reasks.items() if a < cut}
        if cut:  # undo = replay without the last answer
            undone = open_session(
                "topk", docs, k=k, seed=seed, options=options, answers=log[: cut - 1]
            )
            assert undone.pending == trail[cut - 1][0]
    assert again.result() == s.result()
    assert s.result().judgments == total


# -- self-consistency --------------------------------------------------------------------------
def records_of(s: TopKSession, task: str, assessor: str) -> list[JudgmentRecord]:
    return [
        JudgmentRecord(task, assessor, task, "topk", a.left, a.right, a.outcome, seq=i)
        for i, a in enumerate(s.answers)
    ]


def study(flip: float, trials: int = 6) -> tuple[list[JudgmentRecord], set[tuple[str, int]], int]:
    records: list[JudgmentRecord] = []
    reasks: set[tuple[str, int]] = set()
    total = 0
    rng = random.Random(flip)
    for t in range(trials):
        assessor = Assessor(SCORES, seed=rng.getrandbits(32), flip=flip)
        s = open_session("topk", DOCS, k=5, seed=t, options={"reask_fraction": 0.5})
        assert isinstance(s, TopKSession)
        run_session(s, assessor, timed=False)
        records += records_of(s, f"t{t}", "A")
        reasks |= {(f"t{t}", at) for at in s.reasks}
        total += len(s.reasks)
    return records, reasks, total


def test_consistent_oracle_is_fully_self_consistent() -> None:
    records, reasks, total = study(0.0)
    sc = self_consistency(records, reasks)["A"]
    # Pair cache on: the only repeats are the re-asks, all swapped, all agreeing.
    assert sc.reask_repeats == sc.repeats == sc.swapped_repeats == sc.live_repeats == total > 0
    assert sc.rate == 1.0 and sc.reask_consistent == total


def test_noisy_assessor_shows_measurable_inconsistency() -> None:
    records, reasks, total = study(0.25)
    sc = self_consistency(records, reasks)["A"]
    assert sc.reask_repeats == sc.repeats == total > 50
    assert sc.rate is not None and 0.0 < sc.rate < 1.0
    # Flip noise p on both answers: P(agree) = p² + (1-p)² = 0.625; a loose band around it.
    assert 0.45 < sc.rate < 0.8
    # Without the re-ask keys the same repeats are still reported, just not labelled.
    plain = self_consistency(records)["A"]
    assert (plain.repeats, plain.consistent, plain.reask_repeats) == (sc.repeats, sc.consistent, 0)


def test_same_document_on_the_other_side_is_agreement() -> None:
    log = [
        JudgmentRecord("t", "A", "q", "topk", "a", "b", "left", seq=0),  # a ≻ b
        JudgmentRecord("t", "A", "q", "topk", "c", "d", "left", seq=1),  # c ≻ d
        JudgmentRecord("t", "A", "q", "topk", "b", "a", "right", seq=2),  # a again, now right
        JudgmentRecord("t", "A", "q", "topk", "d", "c", "right", seq=3),  # c again: agrees
        JudgmentRecord("t", "A", "q", "topk", "x", "y", "left", seq=4),
        JudgmentRecord("t", "A", "q", "topk", "y", "x", "left", seq=5),  # y now: disagrees
    ]
    reps = repeated_judgments(log, {("t", 2), ("t", 3), ("t", 5)})
    assert [(r.pair, r.consistent, r.swapped, r.reask) for r in reps] == [
        (("a", "b"), True, True, True),
        (("c", "d"), True, True, True),
        (("x", "y"), False, True, True),
    ]
    sc = self_consistency(log, {("t", 2), ("t", 3), ("t", 5)})["A"]
    assert (sc.reask_repeats, sc.reask_consistent, sc.rate) == (3, 2, 2 / 3)


def test_analysis_service_labels_reasks() -> None:
    """app.analysis.service replays topk tasks with the option to find their re-asks."""
    from app.analysis.records import build_records
    from app.analysis.service import analyze_records

    s = run(seed=4, reask_fraction=0.5)
    options = validate_options("topk", {"reask_fraction": 0.5})
    tasks_raw = [(1, "A", "q1", "topk", 5, 4, options, DOCS, "done")]
    log = [
        (1, i, a.left, a.right, a.outcome, None, None, 1000, None, False, None)
        for i, a in enumerate(s.answers)
    ]
    judgments, tasks, warnings, reasks = build_records(tasks_raw, log)
    assert warnings == [] and reasks == {(1, at) for at in s.reasks}
    assert tasks[0].top == tuple(s.result().top)
    report = analyze_records(judgments, tasks, reasks=reasks)
    (row,) = report["self_consistency"]
    assert row["reask_repeats"] == row["reask_consistent"] == len(s.reasks) > 0


# -- the analysis uses the protocol's answer, and counts re-asks apart -------------------------
def test_direct_relations_and_transitivity_ignore_reasks() -> None:
    from labeling.analysis.agreement import direct_relations
    from labeling.analysis.consistency import transitivity

    log = [
        JudgmentRecord("t", "A", "q", "topk", "a", "b", "left", seq=0),  # a ≻ b (protocol)
        JudgmentRecord("t", "A", "q", "topk", "b", "c", "left", seq=1),  # b ≻ c
        JudgmentRecord("t", "A", "q", "topk", "a", "c", "left", seq=2),  # a ≻ c: transitive
        JudgmentRecord("t", "A", "q", "topk", "c", "a", "left", seq=3),  # re-ask of seq 2: c ≻ a
    ]
    reasks = {("t", 3)}
    # The heap acted on seq 2, so that is the assessor's relation; the latest answer is not.
    assert direct_relations(log, reasks)[("q", "A")][("a", "c")] == ">"
    assert direct_relations(log)[("q", "A")][("a", "c")] == "<"  # unnamed: latest counts
    assert transitivity(log, reasks)["A"].intransitive == 0
    assert transitivity(log)["A"].intransitive == 1  # a ≻ b ≻ c ≻ a from the re-ask


def test_time_table_counts_reasks_apart() -> None:
    from labeling.analysis.records import TaskRecord
    from labeling.analysis.timing import time_table

    log = [
        JudgmentRecord(1, "A", "q", "topk", "a", "b", "left", active_ms=4000, seq=0),
        JudgmentRecord(1, "A", "q", "topk", "c", "d", "left", active_ms=6000, seq=1),
        JudgmentRecord(1, "A", "q", "topk", "b", "a", "right", active_ms=1000, seq=2),  # re-ask
        JudgmentRecord(2, "B", "q", "topk", "a", "b", "left", active_ms=2000, seq=0),
    ]
    tasks = [TaskRecord(t, u, "q", "topk", finished=True) for t, u in ((1, "A"), (2, "B"))]
    row = time_table(log, tasks, reasks={(1, 2)})["topk"]
    assert (row.judgments, row.reasks, row.tasks) == (3, 1, 2)
    assert row.time_per_judgment.mean == pytest.approx(4.0)  # (4 + 6 + 2) / 3
    assert row.judgments_per_query.mean == pytest.approx(1.5)  # 2 and 1
    assert row.time_per_query.mean == pytest.approx(6.0)  # 10 s and 2 s
    assert (row.reasks_per_query.mean, row.reasks_per_query.max) == (0.5, 1.0)
    assert row.reask_time_per_query.mean == pytest.approx(0.5)  # 1 s and 0 s
    plain = time_table(log, tasks)["topk"]  # without the keys every answer is a judgment
    assert (plain.judgments, plain.reasks, plain.judgments_per_query.mean) == (4, 0, 2.0)


def _relations_of_protocol(s: TopKSession) -> dict[tuple[str, str], str]:
    """Oracle: the relation of every pair from the posed protocol answers (not re-asks)."""
    out: dict[tuple[str, str], str] = {}
    for seq, a in enumerate(s.answers):
        if seq in s.reasks or a.outcome not in ("left", "right"):
            continue
        winner = a.left if a.outcome == "left" else a.right
        key = (min(a.left, a.right), max(a.left, a.right))
        out[key] = ">" if winner == key[0] else "<"
    return out


def test_analysis_report_uses_protocol_answers_and_prints_reasks() -> None:
    """End to end through app.analysis.service (no database) and the CLI's text report."""
    from app.analysis.records import build_records
    from app.analysis.service import analyze_records
    from app.cli.analysis import format_report

    options = validate_options("topk", {"reask_fraction": 0.5})
    # Task 2's assessor contradicts every re-ask: that must not reach agreement or Table 1.
    sessions = {
        1: run(seed=4, reask_fraction=0.5),
        2: run(seed=5, reask_fraction=0.5, answer=contrary),
    }
    tasks_raw = [
        (t, f"U{t}", "q1", "topk", 5, s.seed, options, DOCS, "done") for t, s in sessions.items()
    ]
    log = [
        (t, i, a.left, a.right, a.outcome, None, None, 1000 + i, None, False, None)
        for t, s in sessions.items()
        for i, a in enumerate(s.answers)
    ]
    judgments, tasks, warnings, reasks = build_records(tasks_raw, log)
    assert warnings == []
    report = analyze_records(judgments, tasks, reasks=reasks)
    n_reasks = sum(len(s.reasks) for s in sessions.values())
    time = report["time"]["topk"]
    assert time["reasks"] == report["judgments"]["reasks"] == n_reasks > 0
    assert time["judgments"] == sum(len(s.answers) - len(s.reasks) for s in sessions.values())
    protocol_counts = [s.result().judgments - s.result().reasks for s in sessions.values()]
    assert time["judgments_per_query"]["mean"] == pytest.approx(sum(protocol_counts) / 2)
    assert time["reasks_per_query"]["mean"] == pytest.approx(n_reasks / 2)
    # Agreement: both assessors are consistent on protocol questions, so every co-judged pair
    # agrees, and the instances are exactly the pairs both compared in the protocol.
    r1, r2 = (_relations_of_protocol(s) for s in sessions.values())
    common = set(r1) & set(r2)
    pooled = report["agreement"]["topk"]["pooled"]
    assert pooled["instances"] == len(common) > 0
    assert pooled["agreed"] == sum(r1[p] == r2[p] for p in common) == len(common)
    assert [t["intransitive"] for t in report["transitivity"]] == [0, 0]
    (c1, c2) = report["self_consistency"]
    assert c1["reask_consistent"] == c1["reask_repeats"] == len(sessions[1].reasks)
    assert (c2["reask_consistent"], c2["reask_repeats"]) == (0, len(sessions[2].reasks))
    text = format_report(report)
    assert f"re-asks 0/{len(sessions[2].reasks)})" in text
    assert f"plus {n_reasks} re-asks (not in the figures above)" in text
