"""Calibrating a machine judge on people's answers, and the calibration report.

A pairwise judge gives a raw ``p``, its P(first better) for a pair
(:mod:`labeling.machine.judges`). People's answers on pairs the judge had an opinion on teach
a monotone map ``g`` from ``p`` to the calibrated P(first better); the judge's answer is
"first" when ``g(p) ≥ 0.5`` and P(that answer is right) = ``max(g(p), 1 − g(p))``.

Two maps (:class:`Calibrator`):

* **Platt** (J. Platt, "Probabilistic outputs for support vector machines and comparisons to
  regularized likelihood methods", 1999): ``g(p) = σ(a·logit(p) + b)``, fitted by weighted
  logistic regression (Newton–Raphson with backtracking; ``p`` clipped to ``[1e-6, 1 − 1e-6]``).
  ``a = 1, b = 0`` is the identity: the raw judge is already calibrated.
* **Isotonic** (B. Zadrozny and C. Elkan, "Transforming classifier scores into accurate
  multiclass probability estimates", KDD 2002): the non-decreasing step function of ``p`` with
  the least weighted squared error, by pool adjacent violators (M. Ayer et al., "An empirical
  distribution function for sampling with incomplete information", 1955; :func:`pav`), read
  between the fitted points by linear interpolation and clipped outside them (as
  scikit-learn's ``IsotonicRegression(out_of_bounds="clip")``).

Order symmetry: an answer on (A, B) with raw ``p`` and outcome ``y`` (1 = the first shown was
better) is also an answer on (B, A) with ``1 − p`` and ``1 − y``; each answer enters the fit as
both, weight 1/2 each, so ``g(1 − p) = 1 − g(p)`` (Platt's ``b`` is 0).

Prior (until enough answers exist): ``prior_weight`` pseudo-answers (default 10) spread evenly
over a grid of 20 raw probabilities ``p_i = (i + 0.5)/20``, each with the soft outcome
``t_i = 0.5 + trust·(p_i − 0.5)``: in Beta terms, pseudo-counts ``α_i = w·t_i`` and
``β_i = w·(1 − t_i)`` at ``p_i``, ``w = prior_weight/20``. ``trust = 1`` says "the raw
probabilities are calibrated", ``trust = 0`` says "the judge knows nothing" (every answer 0.5);
the default 0.5 halves the raw confidence. With n people's answers the prior's share of the fit
is ``prior_weight / (prior_weight + n)``.

The report (:func:`calibration_report`) on pairs with the calibrated ``p`` and people's outcome
``y``: accuracy and count by confidence bin (reliability diagram data), expected calibration
error over equal-width confidence bins of ``[0.5, 1]`` (M. P. Naeini, G. Cooper and
M. Hauskrecht, "Obtaining well calibrated probabilities using Bayesian binning", AAAI 2015;
C. Guo et al., "On calibration of modern neural networks", ICML 2017), the Brier score
(G. W. Brier, "Verification of forecasts expressed in terms of probability", 1950), Cohen's κ
between the judge's answers and people's (J. Cohen, "A coefficient of agreement for nominal
scales", 1960), and position bias when the judge was asked both orders (:func:`position_bias`).
Pure: no FastAPI, no SQLAlchemy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "CalibrationReport",
    "Calibrator",
    "IsotonicMap",
    "PositionBias",
    "ReliabilityBin",
    "brier_score",
    "calibration_report",
    "cohen_kappa",
    "expected_calibration_error",
    "isotonic_fit",
    "pav",
    "platt_fit",
    "position_bias",
    "reliability_bins",
]

F64 = NDArray[np.float64]
#: Raw probabilities are clipped to ``[EPS, 1 − EPS]`` before the logit.
EPS = 1e-6
#: The prior's grid of raw probabilities.
PRIOR_GRID: F64 = (np.arange(20) + 0.5) / 20


def _logit(p: ArrayLike) -> F64:
    q = np.clip(np.asarray(p, dtype=np.float64), EPS, 1 - EPS)
    out: F64 = np.log(q) - np.log1p(-q)
    return out


def _sigmoid(z: F64) -> F64:
    out: F64 = 0.5 * (1.0 + np.tanh(0.5 * z))
    return out


# ======================================================================= fitting
def pav(y: ArrayLike, w: ArrayLike | None = None) -> F64:
    """Pool adjacent violators: the non-decreasing sequence closest to ``y`` (in order) in
    weighted squared error; ``w`` defaults to ones and must be positive.

    Each new value starts a block; while the last block's mean is below the one before it, the
    two merge into one block with their weighted mean. Every value then takes its block's mean.
    """
    values = np.asarray(y, dtype=np.float64)
    weights = np.ones_like(values) if w is None else np.asarray(w, dtype=np.float64)
    if values.shape != weights.shape or values.ndim != 1:
        raise ValueError("y and w must be 1-D arrays of the same length")
    if np.any(weights <= 0):
        raise ValueError("weights must be positive")
    means: list[float] = []
    sums: list[float] = []
    sizes: list[int] = []
    for value, weight in zip(values.tolist(), weights.tolist(), strict=True):
        means.append(value)
        sums.append(weight)
        sizes.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            total = sums[-2] + sums[-1]
            means[-2] = (means[-2] * sums[-2] + means[-1] * sums[-1]) / total
            sums[-2] = total
            sizes[-2] += sizes[-1]
            del means[-1], sums[-1], sizes[-1]
    return np.repeat(np.asarray(means, dtype=np.float64), sizes)


@dataclass(frozen=True, slots=True)
class IsotonicMap:
    """A fitted isotonic map: non-decreasing ``y`` at increasing ``x``; between them linear
    interpolation, outside them the end values."""

    x: F64
    y: F64

    def __call__(self, values: ArrayLike) -> F64:
        out: F64 = np.interp(np.asarray(values, dtype=np.float64), self.x, self.y)
        return out


def isotonic_fit(x: ArrayLike, y: ArrayLike, w: ArrayLike | None = None) -> IsotonicMap:
    """Isotonic regression of ``y`` on ``x`` with weights ``w``: points with equal ``x`` are
    first pooled into their weighted mean (scikit-learn does the same), then :func:`pav`."""
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.float64)
    ws = np.ones_like(xs) if w is None else np.asarray(w, dtype=np.float64)
    if not (xs.shape == ys.shape == ws.shape) or xs.size == 0:
        raise ValueError("x, y and w must be non-empty and of the same length")
    unique, inverse = np.unique(xs, return_inverse=True)
    weight = np.bincount(inverse, weights=ws)
    mean = np.bincount(inverse, weights=ws * ys) / weight
    return IsotonicMap(unique, pav(mean, weight))


def platt_fit(
    x: ArrayLike, y: ArrayLike, w: ArrayLike | None = None, *, l2: float = 1e-9
) -> tuple[float, float]:
    """``(a, b)`` minimising the weighted cross-entropy of ``σ(a·x + b)`` against the (possibly
    soft) targets ``y ∈ [0, 1]``, plus ``l2·a²/2`` (keeps separable data finite).

    Newton–Raphson from ``(0, 0)``: gradient ``Σ w (σ − y) (x, 1)``, Hessian
    ``Σ w σ(1 − σ) (x, 1)(x, 1)ᵀ``; a step is halved until the loss does not rise.
    """
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.float64)
    ws = np.ones_like(xs) if w is None else np.asarray(w, dtype=np.float64)
    design = np.column_stack((xs, np.ones_like(xs)))
    ridge = np.diag([l2, 0.0]) + 1e-12 * np.eye(2)

    def loss(theta: F64) -> float:
        z = design @ theta
        # −[y log σ(z) + (1 − y) log(1 − σ(z))] = logaddexp(0, z) − y z
        return float(ws @ (np.logaddexp(0.0, z) - ys * z) + 0.5 * l2 * theta[0] ** 2)

    theta = np.zeros(2)
    current = loss(theta)
    for _ in range(100):
        s = _sigmoid(design @ theta)
        grad = design.T @ (ws * (s - ys)) + ridge @ theta
        hess = (design * (ws * s * (1 - s))[:, None]).T @ design + ridge
        step = np.linalg.solve(hess, grad)
        scale, improved = 1.0, False
        while scale > 1e-10 and not improved:
            candidate = theta - scale * step
            value = loss(candidate)
            improved = value <= current
            scale /= 2
        if not improved:
            break
        done = current - value <= 1e-13 * max(1.0, abs(current))
        theta, current = candidate, value
        if done:
            break
    return float(theta[0]), float(theta[1])


# ======================================================================= calibrator
@dataclass(slots=True)
class Calibrator:
    """Raw P(first better) → calibrated P(first better), learned from people's answers with a
    prior (module docstring). :meth:`update` adds answers; the map is refitted on next use."""

    kind: Literal["platt", "isotonic"] = "isotonic"
    prior_weight: float = 10.0
    prior_trust: float = 0.5
    _raw: list[float] = field(default_factory=list, init=False, repr=False)
    _first_better: list[float] = field(default_factory=list, init=False, repr=False)
    _fitted: IsotonicMap | tuple[float, float] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in ("platt", "isotonic"):
            raise ValueError(f"kind must be 'platt' or 'isotonic', got {self.kind!r}")
        if not (self.prior_weight > 0 and 0 <= self.prior_trust <= 1):
            raise ValueError("prior_weight must be > 0 and prior_trust in [0, 1]")

    @property
    def n_answers(self) -> int:
        """How many people's answers the calibration has learned from."""
        return len(self._raw)

    def update(self, raw: ArrayLike, first_better: ArrayLike) -> None:
        """Learn from people's answers: the judge's raw P(first better) for each pair and
        whether people found the first shown better (bool or 0/1)."""
        p = np.atleast_1d(np.asarray(raw, dtype=np.float64))
        y = np.atleast_1d(np.asarray(first_better, dtype=np.float64))
        if p.shape != y.shape or p.ndim != 1:
            raise ValueError("raw and first_better must have the same length")
        if not (np.all((p >= 0) & (p <= 1)) and np.all((y == 0) | (y == 1))):
            raise ValueError("raw must be probabilities and first_better 0/1")
        self._raw += p.tolist()
        self._first_better += y.tolist()
        self._fitted = None

    def training_points(self) -> tuple[F64, F64, F64]:
        """``(raw p, target, weight)`` of the fit: the prior's grid, then every answer in both
        orders (module docstring)."""
        p = np.asarray(self._raw, dtype=np.float64)
        y = np.asarray(self._first_better, dtype=np.float64)
        grid_t = 0.5 + self.prior_trust * (PRIOR_GRID - 0.5)
        grid_w = np.full(PRIOR_GRID.size, self.prior_weight / PRIOR_GRID.size)
        return (
            np.concatenate((PRIOR_GRID, p, 1 - p)),
            np.concatenate((grid_t, y, 1 - y)),
            np.concatenate((grid_w, np.full(2 * p.size, 0.5))),
        )

    def _fit(self) -> IsotonicMap | tuple[float, float]:
        if self._fitted is None:
            p, t, w = self.training_points()
            if self.kind == "isotonic":
                self._fitted = isotonic_fit(p, t, w)
            else:
                self._fitted = platt_fit(_logit(p), t, w)
        return self._fitted

    def probability(self, raw: ArrayLike) -> F64:
        """Calibrated P(first better) for raw P(first better)."""
        fitted = self._fit()
        if isinstance(fitted, IsotonicMap):
            return fitted(raw)
        a, b = fitted
        return _sigmoid(a * _logit(raw) + b)

    def p_right(self, raw: ArrayLike) -> F64:
        """P(the judge's answer is right): ``max(g(p), 1 − g(p))``."""
        g = self.probability(raw)
        out: F64 = np.maximum(g, 1 - g)
        return out

    def describe(self) -> dict[str, Any]:
        """The kind (its stored key is "method"), the prior and the answer count (JSON-safe)."""
        return {
            "method": self.kind,  # the stored key, read by from_dict
            "prior_weight": self.prior_weight,
            "prior_trust": self.prior_trust,
            "answers": self.n_answers,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe state: :meth:`describe` plus every answer (raw p, first better 0/1)."""
        return {**self.describe(), "raw": list(self._raw), "first_better": list(self._first_better)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibrator:
        """Inverse of :meth:`to_dict`."""
        out = cls(data["method"], float(data["prior_weight"]), float(data["prior_trust"]))
        if data.get("raw"):
            out.update(data["raw"], data["first_better"])
        return out


# ======================================================================= report
@dataclass(frozen=True, slots=True)
class ReliabilityBin:
    """One confidence bin ``[lower, upper)`` (the last one closed): how many answers fell in
    it, their mean confidence and the share of them that was right (NaN when empty)."""

    lower: float
    upper: float
    count: int
    mean_confidence: float
    accuracy: float


@dataclass(frozen=True, slots=True)
class PositionBias:
    """A judge asked both orders of the same pairs (:func:`position_bias`)."""

    pairs: int
    first_shown_rate: float
    consistent_rate: float
    mean_shift: float


@dataclass(frozen=True, slots=True)
class CalibrationReport:
    """How well a judge's calibrated probabilities matched people (:func:`calibration_report`)."""

    count: int
    accuracy: float
    ece: float
    brier: float
    kappa: float
    bins: tuple[ReliabilityBin, ...]
    position: PositionBias | None = None
    no_opinion: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (NaN as ``None``)."""

        def clean(v: float) -> float | None:
            return None if math.isnan(v) else v

        out: dict[str, Any] = {
            "count": self.count,
            "accuracy": clean(self.accuracy),
            "ece": clean(self.ece),
            "brier": clean(self.brier),
            "kappa": clean(self.kappa),
            "bins": [
                {
                    "lower": b.lower,
                    "upper": b.upper,
                    "count": b.count,
                    "mean_confidence": clean(b.mean_confidence),
                    "accuracy": clean(b.accuracy),
                }
                for b in self.bins
            ],
            "position_bias": None,
            "no_opinion": self.no_opinion,
        }
        if self.position is not None:
            p = self.position
            out["position_bias"] = {
                "pairs": p.pairs,
                "first_shown_rate": clean(p.first_shown_rate),
                "consistent_rate": clean(p.consistent_rate),
                "mean_shift": clean(p.mean_shift),
            }
        return out


def _answers(p_first: ArrayLike, first_better: ArrayLike) -> tuple[F64, F64]:
    p = np.asarray(p_first, dtype=np.float64).reshape(-1)
    y = np.asarray(first_better, dtype=np.float64).reshape(-1)
    if p.shape != y.shape:
        raise ValueError("p_first and first_better must have the same length")
    return p, y


def reliability_bins(
    confidence: ArrayLike, correct: ArrayLike, n_bins: int = 10
) -> tuple[ReliabilityBin, ...]:
    """Equal-width bins of ``[0.5, 1]`` over the judge's confidence ``max(p, 1 − p)``: bin i is
    ``[0.5 + i/(2·n_bins), 0.5 + (i + 1)/(2·n_bins))``, the last closed at 1."""
    if n_bins < 1:
        raise ValueError("n_bins must be at least 1")
    c = np.asarray(confidence, dtype=np.float64).reshape(-1)
    ok = np.asarray(correct, dtype=np.float64).reshape(-1)
    edges = 0.5 + np.arange(n_bins + 1) / (2 * n_bins)
    which = np.clip(np.searchsorted(edges, c, side="right") - 1, 0, n_bins - 1)
    count = np.bincount(which, minlength=n_bins)
    conf = np.bincount(which, weights=c, minlength=n_bins)
    right = np.bincount(which, weights=ok, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf, acc = conf / count, right / count
    return tuple(
        ReliabilityBin(
            float(edges[i]), float(edges[i + 1]), int(count[i]), float(mean_conf[i]), float(acc[i])
        )
        for i in range(n_bins)
    )


def expected_calibration_error(
    confidence: ArrayLike, correct: ArrayLike, n_bins: int = 10
) -> float:
    """``ECE = Σ_b (n_b / N)·|accuracy_b − mean confidence_b|`` over :func:`reliability_bins`
    (NaN for no answers)."""
    bins = reliability_bins(confidence, correct, n_bins)
    total = sum(b.count for b in bins)
    if total == 0:
        return math.nan
    return sum(b.count / total * abs(b.accuracy - b.mean_confidence) for b in bins if b.count)


def brier_score(p_first: ArrayLike, first_better: ArrayLike) -> float:
    """``mean (p − y)²`` of P(first better) against the outcome (NaN for no answers)."""
    p, y = _answers(p_first, first_better)
    return float(np.mean((p - y) ** 2)) if p.size else math.nan


def cohen_kappa(a: Sequence[Any] | NDArray[Any], b: Sequence[Any] | NDArray[Any]) -> float:
    """Cohen's κ between two raters' labels: ``(p_o − p_e) / (1 − p_e)`` with ``p_o`` the share
    of agreement and ``p_e = Σ_k P_a(k)·P_b(k)`` the agreement expected from the raters'
    marginals; NaN when ``p_e = 1`` (both raters always give the same single label), as
    scikit-learn's ``cohen_kappa_score``."""
    x, y = np.asarray(a).reshape(-1), np.asarray(b).reshape(-1)
    if x.shape != y.shape or x.size == 0:
        raise ValueError("both raters must label the same, non-empty list of items")
    labels, codes = np.unique(np.concatenate((x, y)), return_inverse=True)
    ca, cb = codes[: x.size], codes[x.size :]
    p_o = float(np.mean(ca == cb))
    pa = np.bincount(ca, minlength=labels.size) / x.size
    pb = np.bincount(cb, minlength=labels.size) / x.size
    p_e = float(pa @ pb)
    return math.nan if p_e >= 1.0 else (p_o - p_e) / (1.0 - p_e)


def position_bias(p_ab: ArrayLike, p_ba: ArrayLike) -> PositionBias:
    """Position bias of a judge asked each pair in both orders: ``p_ab`` its P(first shown
    better) with A shown first, ``p_ba`` with B shown first (NaN = no opinion).

    * ``first_shown_rate``: among the answers with a preference (``p ≠ 0.5``), the share that
      preferred the first-shown document (0.5 for an unbiased judge);
    * ``consistent_rate``: among pairs with a preference in both orders, the share where both
      orders named the same document;
    * ``mean_shift``: mean of ``(p_ab + p_ba − 1)/2`` over pairs with both opinions, the
      average pull toward the first-shown document (0 unbiased, 0.5 always first).
    """
    ab = np.asarray(p_ab, dtype=np.float64).reshape(-1)
    ba = np.asarray(p_ba, dtype=np.float64).reshape(-1)
    if ab.shape != ba.shape:
        raise ValueError("p_ab and p_ba must have the same length")
    both = np.concatenate((ab, ba))
    decided = both[~np.isnan(both) & (both != 0.5)]
    first = float(np.mean(decided > 0.5)) if decided.size else math.nan
    pair = ~np.isnan(ab) & ~np.isnan(ba)
    strict = pair & (ab != 0.5) & (ba != 0.5)
    consistent = (
        float(np.mean((ab[strict] > 0.5) != (ba[strict] > 0.5))) if strict.any() else math.nan
    )
    shift = float(np.mean((ab[pair] + ba[pair] - 1) / 2)) if pair.any() else math.nan
    return PositionBias(int(ab.size), first, consistent, shift)


def calibration_report(
    p_first: ArrayLike,
    first_better: ArrayLike,
    *,
    n_bins: int = 10,
    position: PositionBias | None = None,
) -> CalibrationReport:
    """The report on answered pairs: the judge's calibrated P(first better) and people's
    outcome (1 = first better). The judge answers "first" when ``p ≥ 0.5``; its confidence is
    ``max(p, 1 − p)``; accuracy, κ and the bins compare that answer with people's. Pairs where
    the judge had no opinion (``p`` NaN) are left out and counted in ``no_opinion``."""
    p, y = _answers(p_first, first_better)
    opinion = ~np.isnan(p)
    p, y = p[opinion], y[opinion]
    says_first = (p >= 0.5).astype(np.float64)
    correct = (says_first == y).astype(np.float64)
    confidence = np.maximum(p, 1 - p)
    return CalibrationReport(
        count=int(p.size),
        accuracy=float(correct.mean()) if p.size else math.nan,
        ece=expected_calibration_error(confidence, correct, n_bins),
        brier=brier_score(p, y),
        kappa=cohen_kappa(says_first, y) if p.size else math.nan,
        bins=reliability_bins(confidence, correct, n_bins),
        position=position,
        no_opinion=int((~opinion).sum()),
    )
