"""A judge as one task's machine (:class:`labeling.strategies.assist.MachineOpinion`).

:class:`JudgeOpinion` asks a pair judge (:mod:`labeling.machine.judges`) about one query and
passes its raw P(first better) through a calibrator frozen for the task (the study's
calibration when the task started, docs/machine-judges.md#assisted-strategies), so the same
task sees the same probabilities on every replay. It remembers every raw probability it was
asked for (:attr:`JudgeOpinion.raw`), for the study calibration to learn from afterwards.
Pure: no FastAPI, no SQLAlchemy, no network.
"""

from __future__ import annotations

import math

from labeling.machine.calibration import Calibrator
from labeling.machine.judges import JudgeQuery, PairJudge

__all__ = ["JudgeOpinion"]


class JudgeOpinion:
    """``probability(a, b)``: ``calibrator(judge.prefer(query, [(a, b)]))``, ``None`` where the
    judge has no opinion (NaN). ``calibrator=None`` passes the raw probability."""

    def __init__(
        self, judge: PairJudge, query: JudgeQuery, calibrator: Calibrator | None = None
    ) -> None:
        self.judge = judge
        self.query = query
        self.calibrator = calibrator
        #: Raw P(first better) by the pair as asked (first, second); NaN: no opinion.
        self.raw: dict[tuple[str, str], float] = {}
        answers = 0 if calibrator is None else calibrator.n_answers
        method = "raw" if calibrator is None else calibrator.method
        self._version = f"{judge.version}+calibration/{method}/answers={answers}"

    @property
    def version(self) -> str:
        """The judge's version, the calibration method and how many answers it had learned."""
        return self._version

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
