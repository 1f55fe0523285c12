"""A judge as one task's machine (:class:`labeling.strategies.assist.Machine`).

:class:`JudgeOpinion` asks a pair judge (:mod:`labeling.machine.judges`) about one query and
passes its raw P(first better) through a calibrator frozen for the task (the study's
calibration when the task started, docs/machine-judges.md#assisted-strategies), so the same
task sees the same probabilities on every replay. It remembers every raw probability it was
asked for (:attr:`JudgeOpinion.raw`), for the study calibration to learn from afterwards.

For the assist rule's bound (:mod:`labeling.machine.trust`) it gives the raw probability
(:meth:`JudgeOpinion.raw_probability`), the study's **evidence** (every human answer the
frozen calibrator learned from, plus an optional gold set of ``(raw p, first better)``,
counted per confidence bin) and the study's audits so far (``prior_audits``).
Pure: no FastAPI, no SQLAlchemy, no network.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from labeling.machine.calibration import Calibrator
from labeling.machine.judges import JudgeQuery, PairJudge
from labeling.machine.trust import AuditMonitor, ErrorEvidence, StratumEvidence

__all__ = ["JudgeOpinion"]


class JudgeOpinion:
    """``probability(a, b)``: ``calibrator(judge.prefer(query, [(a, b)]))``, ``None`` where the
    judge has no opinion (NaN). ``calibrator=None`` passes the raw probability."""

    def __init__(
        self,
        judge: PairJudge,
        query: JudgeQuery,
        calibrator: Calibrator | None = None,
        *,
        gold: Sequence[tuple[float, bool]] = (),
        prior_audits: AuditMonitor | None = None,
        stratum_evidence: StratumEvidence | None = None,
    ) -> None:
        self.judge = judge
        self.query = query
        self.calibrator = calibrator
        #: The study's audits so far (the assist rule's sequential test starts from them).
        self.prior_audits = prior_audits
        #: The study's people's answers per stratum (confidence bin × stake class) so far: the
        #: evidence of the assist rule's bound (docs/machine-judges.md#the-rule).
        self.stratum_evidence = stratum_evidence
        self._gold = list(gold)
        self._evidence: ErrorEvidence | None = None
        #: Raw P(first better) by the pair as asked (first, second); NaN: no opinion.
        self.raw: dict[tuple[str, str], float] = {}
        answers = 0 if calibrator is None else calibrator.n_answers
        method = "raw" if calibrator is None else calibrator.kind
        self._version = f"{judge.version}+calibration/{method}/answers={answers}"

    @property
    def version(self) -> str:
        """The judge's version, the calibration method and how many answers it had learned."""
        return self._version

    @property
    def evidence(self) -> ErrorEvidence:
        """The study's human answers (the calibrator's, and the gold set) per confidence bin
        of the raw probability (computed once)."""
        if self._evidence is None:
            raw: list[float] = []
            first: list[float] = []
            if self.calibrator is not None:
                data = self.calibrator.to_dict()
                raw, first = list(data["raw"]), list(data["first_better"])
            raw += [p for p, _ in self._gold]
            first += [float(y) for _, y in self._gold]
            self._evidence = ErrorEvidence.of(raw, first)
        return self._evidence

    def raw_probability(self, first: str, second: str) -> float:
        """The judge's raw P(first better) (NaN: no opinion), asked once per ordered pair."""
        key = (first, second)
        p = self.raw.get(key)
        if p is None:
            p = self.raw[key] = float(self.judge.prefer(self.query, [key])[0])
        return p

    def probability(self, first: str, second: str) -> float | None:
        """Calibrated P(first better), or ``None`` (no opinion)."""
        p = self.raw_probability(first, second)
        if math.isnan(p):
            return None
        if self.calibrator is None:
            return p
        return float(self.calibrator.probability(p))
