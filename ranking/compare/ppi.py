"""Prediction-powered intervals for a metric's mean when the labels come from a machine and a
small random sample of queries was also labelled by people
(docs/metrics.md#prediction-powered-intervals).

Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, "Prediction-powered inference", Science 2023;
Angelopoulos, Duchi & Zrnic, "PPI++: Efficient Prediction-Powered Inference", 2023; applied
to IR evaluation by Oosterhuis, Jagerman, Qin, Wang & Bendersky, "Reliable Confidence
Intervals for Information Retrieval Evaluation Using Generative A.I.", KDD 2024.

Per query ``q`` a run's metric under the machine's labels is ``f_q`` (all ``N`` queries) and
under people's labels ``y_q`` (the ``n`` audited queries, a uniform random sample of them).
With the power-tuning weight λ (λ = 1: classic PPI; λ = 0: the audited queries alone)

    θ̂_λ = λ · mean_N(f) + mean_n(y − λ f)
    se² = Var_N(λ f) / N + Var_n(y − λ f) / n        (population variances, ddof 0)

and the interval ``θ̂ ± z_{1−α/2} · se`` (CLT). PPI++'s tuned weight (clipped to [0, 1]):

    λ̂ = Cov_n(y, f) / ((1 + n / N) · Var_{n+N}(f))

with ``Cov_n`` the two-sided centred covariance over the audited queries (mean of the
products about each mean) and ``Var_{n+N}`` the sample variance (ddof 1) of the audited and
all queries' ``f`` together, as ``ppi_py`` computes it (``ppi_mean_ci``, the package these
functions are tested against). A paired difference of two runs is the same estimator on the
per-query differences, so "could the two runs swap?" is whether its interval holds 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["PpiBoard", "PpiInterval", "ppi_board", "ppi_mean", "ppi_of_queries", "tuned_lambda"]

Lambda = float | Literal["tuned"]


@dataclass(frozen=True, slots=True)
class PpiInterval:
    """A prediction-powered estimate of a mean and its ``level`` interval: ``machine_only``
    is the plain mean of ``f`` over all queries, ``audited`` ``n``, ``queries`` ``N``."""

    estimate: float
    low: float
    high: float
    se: float
    lam: float
    level: float
    audited: int
    queries: int
    machine_only: float

    def holds(self, value: float) -> bool:
        """Whether ``value`` is inside the interval (ends included)."""
        return self.low <= value <= self.high

    def to_dict(self) -> dict[str, float | int | list[float]]:
        return {
            "estimate": self.estimate,
            "interval": [self.low, self.high],
            "se": self.se,
            "lambda": self.lam,
            "level": self.level,
            "audited": self.audited,
            "queries": self.queries,
            "machine_only": self.machine_only,
        }


def _vector(values: ArrayLike, name: str) -> np.ndarray:
    out = np.asarray(values, dtype=np.float64).reshape(-1)
    if out.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.isfinite(out).all():
        raise ValueError(f"{name} has a value that is not a finite number")
    return out


def tuned_lambda(human: np.ndarray, machine_audit: np.ndarray, machine_all: np.ndarray) -> float:
    """PPI++'s variance-minimising λ̂ (module docstring), clipped to [0, 1]; 1 when ``f``
    does not vary (nothing to tune)."""
    n, big_n = len(human), len(machine_all)
    cov = 2.0 * float(np.mean((human - human.mean()) * (machine_audit - machine_audit.mean())))
    pooled = np.concatenate([machine_audit, machine_all])
    var = float(np.var(pooled, ddof=1)) if len(pooled) > 1 else 0.0
    if var <= 0.0:
        return 1.0
    return float(np.clip(cov / (2.0 * (1.0 + n / big_n) * var), 0.0, 1.0))


def ppi_mean(
    machine_all: ArrayLike,
    machine_audit: ArrayLike,
    human_audit: ArrayLike,
    *,
    level: float = 0.95,
    lam: Lambda = 1.0,
) -> PpiInterval:
    """The prediction-powered mean of the module docstring: ``machine_all`` the metric under
    the machine's labels on every query, ``machine_audit`` and ``human_audit`` (aligned) the
    metric under each label set on the audited queries. ``lam``: a weight in [0, 1] or
    ``"tuned"`` (PPI++). ValueError for empty, misaligned or non-finite input."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    f_all = _vector(machine_all, "the machine-label values")
    f_n = _vector(machine_audit, "the audited queries' machine-label values")
    y = _vector(human_audit, "the audited queries' human-label values")
    if len(f_n) != len(y):
        raise ValueError(f"{len(y)} human values for {len(f_n)} machine values on the audit")
    if lam == "tuned":
        weight = tuned_lambda(y, f_n, f_all)
    elif isinstance(lam, float | int) and not isinstance(lam, bool) and 0.0 <= lam <= 1.0:
        weight = float(lam)
    else:
        raise ValueError(f"lam must be a number in [0, 1] or 'tuned', got {lam!r}")
    n, big_n = len(y), len(f_all)
    estimate = weight * float(f_all.mean()) + float(np.mean(y - weight * f_n))
    se = math.sqrt(float(np.var(weight * f_all)) / big_n + float(np.var(y - weight * f_n)) / n)
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    return PpiInterval(
        estimate,
        estimate - z * se,
        estimate + z * se,
        se,
        weight,
        level,
        n,
        big_n,
        float(f_all.mean()),
    )


def ppi_of_queries(
    machine: Mapping[str, float],
    human: Mapping[str, float],
    *,
    level: float = 0.95,
    lam: Lambda = 1.0,
) -> PpiInterval:
    """:func:`ppi_mean` from per-query values keyed by query id: ``machine`` on every query,
    ``human`` on the audited ones (each must be one of ``machine``'s; ValueError otherwise).
    Queries whose value is NaN (a metric that skips them) are left out of both."""
    keep = {q: v for q, v in machine.items() if not math.isnan(v)}
    extra = [q for q in human if q not in machine]
    if extra:
        raise ValueError(
            f"{len(extra)} audited queries have no machine labels (e.g. {extra[0]!r}): the "
            "audit must be a sample of the machine-labelled queries"
        )
    audited = [q for q, v in human.items() if not math.isnan(v) and q in keep]
    if not audited:
        raise ValueError("no audited query to correct the machine's labels with")
    return ppi_mean(
        list(keep.values()),
        [keep[q] for q in audited],
        [human[q] for q in audited],
        level=level,
        lam=lam,
    )


@dataclass(frozen=True, slots=True)
class PpiBoard:
    """Every run's prediction-powered interval and, for every pair of runs ``(a, b)``, the
    interval of the paired difference ``a − b``; ``could_swap`` lists the pairs whose
    difference interval holds 0 (the labels' uncertainty could reverse them)."""

    runs: dict[str, PpiInterval]
    pairs: dict[tuple[str, str], PpiInterval]

    @property
    def could_swap(self) -> list[tuple[str, str]]:
        return [pair for pair, iv in self.pairs.items() if iv.holds(0.0)]

    def to_dict(self) -> dict[str, object]:
        return {
            "runs": {name: iv.to_dict() for name, iv in self.runs.items()},
            "pairs": [
                {"a": a, "b": b, "difference": iv.to_dict(), "could_swap": iv.holds(0.0)}
                for (a, b), iv in self.pairs.items()
            ],
            "ranking_could_change": bool(self.could_swap),
        }


def ppi_board(
    machine: Mapping[str, Mapping[str, float]],
    human: Mapping[str, Mapping[str, float]],
    *,
    level: float = 0.95,
    lam: Lambda = 1.0,
) -> PpiBoard:
    """:func:`ppi_of_queries` for each run (per-query values by run name, under the machine's
    labels and under the audit's) and for each pair's per-query difference (the queries both
    runs have a value for)."""
    if set(machine) != set(human):
        raise ValueError("the machine-label and audit values must cover the same runs")
    runs = {
        name: ppi_of_queries(machine[name], human[name], level=level, lam=lam) for name in machine
    }
    names = list(machine)
    pairs: dict[tuple[str, str], PpiInterval] = {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            diff_m = _difference(machine[a], machine[b])
            diff_h = _difference(human[a], human[b])
            pairs[(a, b)] = ppi_of_queries(diff_m, diff_h, level=level, lam=lam)
    return PpiBoard(runs, pairs)


def _difference(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    return {q: a[q] - b[q] for q in a if q in b}
