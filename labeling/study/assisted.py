"""Simulated studies with a machine judge: the ``machine…`` scenarios of ``heapjudge simulate
--compare`` and ``heapjudge simulate --machine-accuracy`` (docs/machine-judges.md#measured).

**The machine.** Trial ``t``'s latent values ``x_i ~ U(0, 1)`` (as in every scenario,
docs/noise.md#scenarios) are turned into utilities on the normal scale, ``u_i = Φ⁻¹(x_i)``
(same order), and the machine is a :class:`labeling.machine.judges.ThurstoneJudge` with
pairwise accuracy ``A`` on random pairs: it perceives ``v_i = u_i + σ·ε_i``, σ = tan(π(1 − A))
(0.7265 for A = 0.8), fixed per document. The order fed to every strategy is the machine's
(decreasing v: a prior correlated 1/√(1 + σ²) ≈ 0.81 with u at A = 0.8), the judge serving as
the task's prior as well.

**A learned calibration.** The trials of a cell are the queries of one study, in order: the
judge's raw probabilities reach each session through a calibrator learned from the earlier
queries' human answers (isotonic, the default prior: trust 1/2, weight 10; raw
probabilities rounded to 0.001 for speed); the people's answers per stratum are the evidence
of the :mod:`labeling.strategies.assist` rule's bound, carried from query to query with the
session's own, and the study's audits so far start each session's audit test. Nothing is told
about the judge's own calibration. A query's raw probabilities come from its documents'
perceived utilities, each computed once (the same numbers the judge's ``prefer`` gives).

**The person**: consistent (``machine0.8``) or flipping each answer with p = 0.1
(``machine0.8+flip0.1``). κ-NDCG@k is against the latent truth, which for the consistent
person is also the person-only result of every strategy.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

from labeling.errors import ConfigError
from labeling.machine.calibration import Calibrator
from labeling.machine.judges import JudgeQuery, ThurstoneJudge
from labeling.machine.opinion import JudgeOpinion
from labeling.machine.trust import AuditMonitor, ErrorEvidence, StratumEvidence
from labeling.strategies.assist import AssistStrategy
from labeling.strategies.registry import resolve_strategy
from labeling.study.simulation import StudyTrial, drive, prior_order, scenario_assessor

#: ``compare_assisted``'s default order: the machine's own (the judge serving as the prior).
MACHINE_ORDER = "machine"

#: The machine scenarios of ``heapjudge simulate --compare``.
MACHINE_SCENARIOS: tuple[str, ...] = ("machine0.8", "machine0.8+flip0.1")
_SCENARIO = re.compile(r"^machine(0\.\d+|1(?:\.0*)?)(?:\+flip(0\.\d+))?$")
_NORMAL = NormalDist()
#: Rounding of raw probabilities in the study calibration (keeps the isotonic fit small).
STUDY_ROUNDING = 3


def parse_machine_scenario(name: str) -> tuple[float, float]:
    """``(accuracy, flip)`` of a scenario named ``machine<A>`` or ``machine<A>+flip<p>``."""
    match = _SCENARIO.match(name)
    if match is None:
        raise ConfigError(f"not a machine scenario: {name!r} (e.g. machine0.8, machine0.8+flip0.1)")
    accuracy = float(match.group(1))
    if not 0.5 < accuracy <= 1.0:
        raise ConfigError(f"machine accuracy must be in (0.5, 1], got {accuracy}")
    return accuracy, float(match.group(2) or 0.0)


def machine_trial(
    rng: random.Random, docs: Sequence[str], accuracy: float, query_id: str
) -> tuple[dict[str, float], ThurstoneJudge, JudgeQuery, list[str]]:
    """One query of a machine scenario: latent values, the judge, the query and the machine's
    order (module docstring)."""
    latent = {doc: rng.random() for doc in docs}
    utility = {doc: _NORMAL.inv_cdf(x) for doc, x in latent.items()}
    judge = ThurstoneJudge(accuracy, seed=rng.getrandbits(32), truth=lambda _q, doc: utility[doc])
    query = JudgeQuery(query_id, "")
    perceived = {doc: judge.perceived(query_id, doc) for doc in docs}
    order = sorted(docs, key=lambda doc: (-perceived[doc], doc))
    return latent, judge, query, order


class _StudyOpinion(JudgeOpinion):
    """A :class:`JudgeOpinion` over the study's evidence per stratum and per bin (the bin's
    kept by the study as it goes, equal to what the calibrator's answers count) whose raw
    probabilities come from the query's perceived utilities, computed once per document (the numbers
    :meth:`ThurstoneJudge.prefer` gives, by its formula, without asking it pair by pair)."""

    def __init__(
        self,
        judge: ThurstoneJudge,
        query: JudgeQuery,
        calibrator: Calibrator,
        *,
        evidence: ErrorEvidence,
        prior_audits: AuditMonitor,
        stratum_evidence: StratumEvidence,
        perceived: dict[str, float],
    ) -> None:
        super().__init__(
            judge, query, calibrator, prior_audits=prior_audits, stratum_evidence=stratum_evidence
        )
        self._study_evidence = evidence
        self._perceived = perceived
        sigma = judge.sigma
        # P(first better) = Φ(c · (v_first − v_second)), c = overconfidence / (σ √(2(1 + σ²)))
        # (labeling.machine.judges.ThurstoneJudge.prefer); σ = 0 is its step function.
        self._scale = 0.0 if sigma == 0.0 else 1.0 / (sigma * math.sqrt(2.0 * (1.0 + sigma**2)))
        self._over = judge.overconfidence

    @property
    def evidence(self) -> ErrorEvidence:
        return self._study_evidence

    def raw_probability(self, first: str, second: str) -> float:
        key = (first, second)
        p = self.raw.get(key)
        if p is None:
            if self._scale == 0.0:
                return super().raw_probability(first, second)
            z = (self._perceived[first] - self._perceived[second]) * self._scale
            p = self.raw[key] = 0.5 * (1.0 + math.erf(self._over * z / math.sqrt(2.0)))
        return p


def compare_assisted(
    strategy: str,
    scenario: str,
    n: int,
    k: int,
    trials: int,
    *,
    seed: int = 0,
    order: str | float | None = MACHINE_ORDER,
    max_loss: float | None = None,
) -> list[StudyTrial]:
    """``trials`` queries of one study (module docstring) run by ``strategy`` in a machine
    ``scenario``; ``judgments`` counts human answers, ``machine_answers`` the machine's.
    ``order``: the documents in the machine's order (:data:`MACHINE_ORDER`, the default), in
    random order (None), or in the order of a prior of that correlation with the latent
    values (:func:`labeling.study.simulation.prior_order`) — the plan preview compares a
    strategy with and without the machine on the same order. ``max_loss``: the option
    ``machine.max_loss`` the machine answers within (None: its default)."""
    if n < 1 or k < 1 or trials < 1:
        raise ConfigError(f"n, k and trials must be >= 1, got n={n}, k={k}, trials={trials}")
    accuracy, flip = parse_machine_scenario(scenario)
    cls = resolve_strategy(strategy)
    docs = [f"d{i:04d}" for i in range(n)]
    study = Calibrator("isotonic")
    audits = AuditMonitor()
    strata = StratumEvidence()
    evidence = ErrorEvidence()
    out: list[StudyTrial] = []
    for t in range(trials):
        rng = random.Random(f"{seed}:{t}")
        latent, judge, query, shown = machine_trial(rng, docs, accuracy, f"q{t}")
        if order is None:
            shown = sorted(docs, key=lambda _doc: rng.random())
        elif order != MACHINE_ORDER:
            shown = prior_order(latent, float(order), rng)
        truth = sorted(docs, key=lambda doc: -latent[doc])
        rank = {doc: r for r, doc in enumerate(truth)}
        person = scenario_assessor("flip0.1" if flip else "random", rank, rng.getrandbits(32))
        person.flip = flip
        perceived = {doc: judge.perceived(query.query_id, doc) for doc in docs}
        opinion = _StudyOpinion(
            judge,
            query,
            study,
            evidence=evidence.copy(),
            prior_audits=audits,
            stratum_evidence=strata,
            perceived=perceived,
        )
        top, rest, humans, machines, state = drive(
            cls, shown, k, person, machine=opinion, seed=rng.getrandbits(32), max_loss=max_loss
        )
        if isinstance(state, AssistStrategy):
            audits = state.monitor  # the study's audit test goes on from this query's
            strata = state.trust  # and the evidence of the bound, per stratum
        if isinstance(state, AssistStrategy) and state.evidence:
            raw = [round(opinion.raw[(a, b)], STUDY_ROUNDING) for a, b, _, _ in state.evidence]
            won = [w for _, _, _, w in state.evidence]
            study.update(raw, won)
            for p, w in zip(raw, won, strict=True):
                evidence.add(p, w)
        position = {doc: i for i, doc in enumerate([*top, *rest])}
        label = {doc: k - i for i, doc in enumerate(truth[:k])}
        out.append(
            StudyTrial(
                judgments=humans,
                calls=humans + machines,
                exact=top == truth[:k],
                seconds=0.0,
                truth_labels=[label.get(doc, 0) for doc in docs],
                produced_rank=[position[doc] for doc in docs],
                machine_answers=machines,
            )
        )
    return out


def summary(runs: Sequence[StudyTrial]) -> dict[str, Any]:
    """Mean and p95 human judgments and mean machine answers of ``runs``."""
    humans = np.array([r.judgments for r in runs], dtype=float)
    return {
        "human_judgments": {
            "mean": float(humans.mean()),
            "p95": float(np.percentile(humans, 95)),
        },
        "machine_answers": {"mean": float(np.mean([r.machine_answers for r in runs]))},
    }
