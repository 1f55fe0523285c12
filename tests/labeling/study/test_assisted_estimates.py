"""The plan preview's simulation with a machine (labeling.study.assisted, .estimates): the same
study as with a plain JudgeOpinion (the kept evidence and the all-pairs raw probabilities are
only faster), the stated max_loss reaching the rule, and the expected loss against a
brute-force κ-NDCG@k."""

from __future__ import annotations

import math
import random

import pytest

from labeling.machine.calibration import Calibrator
from labeling.machine.opinion import JudgeOpinion
from labeling.machine.trust import AuditMonitor, StratumEvidence
from labeling.strategies.assist import AssistStrategy
from labeling.strategies.registry import resolve_strategy
from labeling.study.assisted import STUDY_ROUNDING, compare_assisted, machine_trial
from labeling.study.estimates import assisted_judgments
from labeling.study.simulation import drive, prior_order, scenario_assessor


def _reference(strategy: str, n: int, k: int, trials: int, order: float | None) -> list[tuple]:
    """compare_assisted's study with a plain JudgeOpinion (its evidence recounted from the
    calibrator at every query, its raw probabilities asked pair by pair)."""
    cls = resolve_strategy(strategy)
    docs = [f"d{i:04d}" for i in range(n)]
    study = Calibrator("isotonic")
    audits = AuditMonitor()
    strata = StratumEvidence()
    out = []
    for t in range(trials):
        rng = random.Random(f"0:{t}")
        latent, judge, query, shown = machine_trial(rng, docs, 0.8, f"q{t}")
        if order is None:
            shown = sorted(docs, key=lambda _doc: rng.random())
        else:
            shown = prior_order(latent, order, rng)
        truth = sorted(docs, key=lambda doc: -latent[doc])
        person = scenario_assessor(
            "random", {d: r for r, d in enumerate(truth)}, rng.getrandbits(32)
        )
        person.flip = 0.0
        opinion = JudgeOpinion(judge, query, study, prior_audits=audits, stratum_evidence=strata)
        top, rest, humans, machines, state = drive(
            cls, shown, k, person, machine=opinion, seed=rng.getrandbits(32)
        )
        assert isinstance(state, AssistStrategy)
        audits, strata = state.monitor, state.trust
        if state.evidence:
            raw = [round(opinion.raw[(a, b)], STUDY_ROUNDING) for a, b, _, _ in state.evidence]
            study.update(raw, [won for *_, won in state.evidence])
        out.append((humans, machines, [*top, *rest]))
    return out


@pytest.mark.parametrize("strategy", ["tournament+assist", "insertion+assist"])
@pytest.mark.parametrize("order", [None, 0.2])
def test_the_fast_study_is_the_plain_one(strategy: str, order: float | None) -> None:
    # enough queries for the machine to earn answers in some stratum; k = 10: at k = 5 every
    # question of a tournament has a stake above the tolerance's share of max_loss
    n, k = 30, 10
    runs = compare_assisted(strategy, "machine0.8", n, k, 60, order=order)
    ref = _reference(strategy, n, k, 60, order)
    assert [(r.judgments, r.machine_answers) for r in runs] == [(h, m) for h, m, _ in ref]
    assert sum(r.machine_answers for r in runs) > 0  # the machine was trusted somewhere
    for r, (_, _, produced) in zip(runs, ref, strict=True):
        assert r.produced_rank == [produced.index(f"d{i:04d}") for i in range(n)]


def _kappa_ndcg(labels: list[int], rank: list[int], k: int) -> float:
    """κ-NDCG@k by the formula (Niu et al., SIGIR 2012, §3.3): gains 2^y − 1, discount
    1/log2(position + 1), over the produced top k, divided by the true top k's DCG."""
    order = sorted(range(len(rank)), key=lambda i: rank[i])
    dcg = sum((2 ** labels[i] - 1) / math.log2(j + 2) for j, i in enumerate(order[:k]))
    ideal = sorted(labels, reverse=True)[:k]
    idcg = sum((2**y - 1) / math.log2(j + 2) for j, y in enumerate(ideal))
    return dcg / idcg


def test_the_expected_loss_is_the_mean_kappa_ndcg_loss() -> None:
    est = assisted_judgments("tournament+assist", 20, 5, 0.7, None, max_loss=0.5)
    runs = compare_assisted("tournament+assist", "machine0.7", 20, 5, est.trials, order=None,
                            max_loss=0.5)  # fmt: skip
    brute = [1.0 - _kappa_ndcg(r.truth_labels, r.produced_rank, 5) for r in runs]
    assert est.loss_mean == pytest.approx(sum(brute) / len(brute), abs=1e-12)
    assert est.loss_mean > 0  # a loose max loss and a weak machine cost the result something
    # A machine that is always right costs nothing.
    assert assisted_judgments("tournament+assist", 20, 5, 1.0, None).loss_mean == 0.0


def test_the_stated_max_loss_reaches_the_rule() -> None:
    tight = assisted_judgments("tournament+assist", 20, 5, 0.8, None, max_loss=0.001)
    default = assisted_judgments("tournament+assist", 20, 5, 0.8, None)
    loose = assisted_judgments("tournament+assist", 20, 5, 0.8, None, max_loss=0.3)
    assert tight.machine_mean <= default.machine_mean < loose.machine_mean
    assert loose.human_mean < default.human_mean
    assert assisted_judgments("tournament+assist", 20, 5, 0.8, None, max_loss=0.01) == default
