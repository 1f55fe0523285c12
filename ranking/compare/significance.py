"""Paired significance tests on per-query metric values, bootstrap intervals, corrections.

Every function takes the per-query values of systems on the *same* queries, aligned: value
``i`` of every system is the metric of query ``i``. A pair's difference is
``d_i = a_i − b_i`` and its observed statistic the mean difference ``d̄``. docs/campaigns.md
states every convention below.

Tests (two-sided, H0: the two systems are exchangeable per query / have equal mean):

* ``"t"``  the paired Student t-test: ``t = d̄ / (s_d / √n)``, ``s_d`` the sample standard
  deviation (n − 1), p = 2·P(T_{n−1} ≥ |t|) (as ``scipy.stats.ttest_rel``). When every
  ``d_i`` is equal (``s_d = 0``): p = 1 if they are all 0, else 0.
* ``"randomization"``  Fisher's randomization (sign-flip) test (Smucker, Allan, Carterette,
  "A comparison of statistical significance tests for information retrieval evaluation",
  CIKM 2007): under H0 each ``d_i`` keeps or flips its sign with probability ½; p is the
  share of sign vectors ``s`` with ``|Σ s_i d_i| ≥ |Σ d_i|`` (ties count as ≥, within a
  relative tolerance :data:`TIE_RTOL` of ``Σ(|a_i| + |b_i|)``, which absorbs summation
  order). For ``n ≤ exact_max_n`` (default 20) all ``2^n`` sign vectors are enumerated and
  p is that exact fraction; above, ``B`` seeded uniform sign vectors give
  ``p = (count + 1) / (B + 1)`` (Phipson & Smyth, "Permutation p-values should never be
  zero", 2010), never 0.
* ``"bootstrap"``  the paired bootstrap test of Efron & Tibshirani ("An introduction to the
  bootstrap", 1993, §16.4), non-studentised: resample the queries with replacement ``B``
  times (seeded); with ``d̄*`` the resampled mean difference, p =
  ``(#{|d̄* − d̄| ≥ |d̄|} + 1) / (B + 1)`` (the resampled differences shifted to mean 0 under
  H0; ties as ≥ with the same tolerance).

With a correction over ``m`` pairs the smallest Monte Carlo p, ``1/(B + 1)``, adjusts to about
``m/(B + 1)``: :func:`compare_systems` therefore defaults to ``B = max(10,000, ⌈2m/α⌉)``
(:func:`resamples_for`; 50 systems, 1,225 pairs, α = 0.05: B = 49,000).

Many pairs at once (:func:`compare_systems`) share one matrix of random signs / resampling
weights (ranx reseeds every pair's test with the same seed to a similar end); by linearity
``Σ s_i (a_i − b_i) = Σ s_i a_i − Σ s_i b_i``, so one product ``signs @ values.T`` per block of
resamples serves every pair: the work is O(B·n·S + B·S²), not O(B·n·S²). Memory is bounded by
blocks of about 2^22 cells. The random stream depends only on ``(seed, n, B)``, so a pair's
p-value does not depend on which other systems are compared.

Intervals (:func:`bootstrap_interval`, :func:`mean_intervals`): the bootstrap distribution of
the mean (``B`` seeded resamples of the queries), read by the percentile method (default;
``numpy.quantile``'s linear interpolation) or BCa (Efron, "Better bootstrap confidence
intervals", JASA 1987: bias correction ``z0 = Φ⁻¹((#{θ* < θ̂} + #{θ* ≤ θ̂}) / 2B)``,
acceleration from the jackknife of the mean).

Corrections: Bonferroni ``min(1, m·p)``; Holm ("A simple sequentially rejective multiple test
procedure", 1979) step-down adjusted p-values ``p̃_(i) = min(1, max_{j ≤ i} (m − j + 1)·p_(j))``
over the ascending ``p_(1) ≤ … ≤ p_(m)``. A pair is significant when its adjusted p ≤ α.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "CORRECTIONS",
    "DEFAULT_RESAMPLES",
    "EXACT_MAX_N",
    "INTERVAL_METHODS",
    "TESTS",
    "TIE_RTOL",
    "Checkpoint",
    "Comparison",
    "Correction",
    "IntervalMethod",
    "PairComparison",
    "Test",
    "adjust_pvalues",
    "bonferroni",
    "bootstrap_difference_interval",
    "bootstrap_interval",
    "bootstrap_test",
    "compare_systems",
    "holm",
    "mean_intervals",
    "pair_pvalues",
    "paired_t_test",
    "randomization_test",
    "resamples_for",
    "values_matrix",
]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

Test = Literal["t", "randomization", "bootstrap"]
Correction = Literal["holm", "bonferroni", "none"]
IntervalMethod = Literal["percentile", "bca"]
TESTS: tuple[Test, ...] = ("t", "randomization", "bootstrap")
CORRECTIONS: tuple[Correction, ...] = ("holm", "bonferroni", "none")
INTERVAL_METHODS: tuple[IntervalMethod, ...] = ("percentile", "bca")

DEFAULT_RESAMPLES = 10_000
"""Default B for the Monte Carlo randomization test, the bootstrap test and intervals."""
EXACT_MAX_N = 20
"""Up to this many queries the randomization test enumerates all 2^n sign vectors."""
TIE_RTOL = 1e-9
"""A resampled statistic within ``TIE_RTOL · Σ(|a_i| + |b_i|)`` of the observed one ties."""
_BLOCK_CELLS = 1 << 22


# ---------------------------------------------------------------------------------------------
# inputs


def values_matrix(values: Mapping[str, ArrayLike]) -> tuple[tuple[str, ...], F64]:
    """``(names, V)``: the systems' per-query values stacked as rows of a (S, n) float array.

    Raises ValueError when the systems' lengths differ, a value is not finite, or there are
    no queries.
    """
    names = tuple(values)
    rows = [np.asarray(values[name], dtype=np.float64).ravel() for name in names]
    lengths = {row.size for row in rows}
    if len(lengths) > 1:
        sizes = ", ".join(f"{name}: {row.size}" for name, row in zip(names, rows, strict=True))
        raise ValueError(f"every system needs one value per query, aligned ({sizes})")
    matrix = np.vstack(rows) if rows else np.zeros((0, 0))
    if rows and matrix.shape[1] == 0:
        raise ValueError("no queries: every system has 0 values")
    if not np.isfinite(matrix).all():
        bad = names[int(np.nonzero(~np.isfinite(matrix).all(axis=1))[0][0])]
        raise ValueError(f"system {bad!r} has a value that is not finite (NaN or ±inf)")
    return names, matrix


def _pair(a: ArrayLike, b: ArrayLike) -> F64:
    return values_matrix({"a": a, "b": b})[1]


def _rows_per_block(n: int) -> int:
    return max(1, _BLOCK_CELLS // max(n, 1))


# ---------------------------------------------------------------------------------------------
# resampling streams


def _exact_flip_blocks(n: int) -> Iterator[F64]:
    """All flip patterns with query 0 kept (the other half mirrors them: |Σ s d| is symmetric).

    Blocks of 0/1 rows ``f``; the sign vector is ``s = 1 − 2f``.
    """
    total = 1 << (n - 1)
    rows = _rows_per_block(n)
    shifts = np.arange(n - 1, dtype=np.int64)
    for lo in range(0, total, rows):
        codes = np.arange(lo, min(total, lo + rows), dtype=np.int64)
        block = np.zeros((codes.size, n))
        block[:, 1:] = (codes[:, None] >> shifts) & 1
        yield block


def _random_flip_blocks(n: int, n_resamples: int, seed: int) -> Iterator[F64]:
    """Blocks of seeded uniform 0/1 flip rows ``f`` (sign vector ``s = 1 − 2f``)."""
    rng = np.random.default_rng(seed)
    rows, n_bytes = _rows_per_block(n), (n + 7) // 8
    for lo in range(0, n_resamples, rows):
        r = min(rows, n_resamples - lo)
        packed = rng.integers(0, 256, size=(r, n_bytes), dtype=np.uint8)
        yield np.unpackbits(packed, axis=1, count=n).astype(np.float64)


def _bootstrap_weight_blocks(n: int, n_resamples: int, seed: int) -> Iterator[F64]:
    """Blocks of resampling weights: row k counts how often each query is drawn (sums to n)."""
    rng = np.random.default_rng(seed)
    rows = _rows_per_block(n)
    for lo in range(0, n_resamples, rows):
        r = min(rows, n_resamples - lo)
        draws = rng.integers(0, n, size=(r, n), dtype=np.int64)
        draws += (np.arange(r, dtype=np.int64) * n)[:, None]
        yield np.bincount(draws.ravel(), minlength=r * n).reshape(r, n).astype(np.float64)


#: Called between chunks of a resampling test's work; it raises to stop the test (a caller's
#: time budget, a client that left). None: nothing to check.
Checkpoint = Callable[[], None] | None


def _count_at_least(
    sums: F64, ia: I64, ib: I64, centre: F64, threshold: F64, counts: I64, checkpoint: Checkpoint
) -> None:
    """``counts[k] += #{rows: |sums[:, ia_k] − sums[:, ib_k] − centre_k| ≥ threshold_k}``."""
    by_system = np.ascontiguousarray(sums.T)  # (S, rows): a pair's rows are contiguous
    step = max(1, _BLOCK_CELLS // max(sums.shape[0], 1))
    centred = bool(np.any(centre))
    for lo in range(0, ia.size, step):
        if checkpoint is not None:
            checkpoint()
        hi = lo + step
        diff = by_system[ia[lo:hi]]
        diff -= by_system[ib[lo:hi]]
        if centred:
            diff -= centre[lo:hi, None]
        np.abs(diff, out=diff)
        counts[lo:hi] += np.count_nonzero(diff >= threshold[lo:hi, None], axis=1)


def _tie_threshold(v: F64, ia: I64, ib: I64) -> tuple[F64, F64]:
    """Observed sum differences ``Σ a − Σ b`` and the ≥ threshold ``|Σ a − Σ b| − tol``."""
    sums = v.sum(axis=1)
    scale = np.abs(v).sum(axis=1)
    observed = sums[ia] - sums[ib]
    return observed, np.abs(observed) - TIE_RTOL * (scale[ia] + scale[ib])


# ---------------------------------------------------------------------------------------------
# p-values for many pairs


def _t_pvalues(v: F64, ia: I64, ib: I64) -> F64:
    n = v.shape[1]
    if n < 2:
        raise ValueError("the paired t-test needs at least 2 queries")
    # Imported here, not with the module: scipy costs the service ~20 MB of resident memory
    # at start (docs/performance.md#imports). scipy.special: the functions scipy.stats.t and
    # .norm call (faster to load).
    from scipy import special

    out = np.empty(ia.size)
    step = _rows_per_block(n)
    for lo in range(0, ia.size, step):
        d = v[ia[lo : lo + step]] - v[ib[lo : lo + step]]
        mean = d.mean(axis=1)
        sd = d.std(axis=1, ddof=1)
        constant = sd == 0
        with np.errstate(divide="ignore", invalid="ignore"):
            t = mean / np.sqrt(sd**2 / n)
        p = 2.0 * special.stdtr(n - 1, -np.abs(t))  # 2 P(T_{n-1} >= |t|)
        p[constant] = np.where(mean[constant] == 0, 1.0, 0.0)
        out[lo : lo + step] = p
    return out


def _randomization_pvalues(
    v: F64, ia: I64, ib: I64, n_resamples: int, seed: int, exact_max_n: int, checkpoint: Checkpoint
) -> tuple[F64, bool]:
    n = v.shape[1]
    _, threshold = _tie_threshold(v, ia, ib)
    centre = np.zeros(ia.size)
    counts = np.zeros(ia.size, dtype=np.int64)
    exact = n <= exact_max_n
    blocks = _exact_flip_blocks(n) if exact else _random_flip_blocks(n, n_resamples, seed)
    totals = v.sum(axis=1)
    for flips in blocks:  # Σ s_i v_i = Σ v_i − 2 Σ f_i v_i
        sums = totals - 2.0 * (flips @ v.T)
        _count_at_least(sums, ia, ib, centre, threshold, counts, checkpoint)
    if exact:
        return counts.astype(np.float64) / float(1 << (n - 1)), True
    return (counts.astype(np.float64) + 1.0) / (n_resamples + 1.0), False


def _bootstrap_pvalues(
    v: F64, ia: I64, ib: I64, n_resamples: int, seed: int, checkpoint: Checkpoint
) -> F64:
    n = v.shape[1]
    observed, threshold = _tie_threshold(v, ia, ib)
    counts = np.zeros(ia.size, dtype=np.int64)
    for weights in _bootstrap_weight_blocks(n, n_resamples, seed):
        _count_at_least(weights @ v.T, ia, ib, observed, threshold, counts, checkpoint)
    return (counts.astype(np.float64) + 1.0) / (n_resamples + 1.0)


def _check_resamples(n_resamples: int) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be ≥ 1, got {n_resamples}")


def pair_pvalues(
    v: ArrayLike,
    ia: ArrayLike,
    ib: ArrayLike,
    test: Test = "t",
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    exact_max_n: int = EXACT_MAX_N,
    checkpoint: Checkpoint = None,
) -> tuple[F64, bool]:
    """Unadjusted two-sided p-values of the pairs ``(ia[k], ib[k])`` of rows of ``v`` (S, n).

    Returns ``(p, exact)``: ``exact`` is True when the randomization test enumerated every
    sign vector (the p-values are then exact fractions). See the module docstring for each
    test's statistic and p-value convention. ``checkpoint`` (resampling tests) is called
    between chunks of at most about 2^22 cells of work; whatever it raises stops the test.
    """
    matrix = np.asarray(v, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError("v must be a (systems, queries) array")
    rows_a = np.asarray(ia, dtype=np.int64).ravel()
    rows_b = np.asarray(ib, dtype=np.int64).ravel()
    if test == "t":
        return _t_pvalues(matrix, rows_a, rows_b), False
    _check_resamples(n_resamples)
    if test == "randomization":
        return _randomization_pvalues(
            matrix, rows_a, rows_b, n_resamples, seed, exact_max_n, checkpoint
        )
    if test == "bootstrap":
        return _bootstrap_pvalues(matrix, rows_a, rows_b, n_resamples, seed, checkpoint), False
    raise ValueError(f"unknown test {test!r}; choose one of {', '.join(TESTS)}")


_ONE_PAIR = (np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.int64))


def paired_t_test(a: ArrayLike, b: ArrayLike) -> float:
    """Two-sided p of the paired t-test of ``a`` against ``b`` (as ``scipy.stats.ttest_rel``)."""
    return float(_t_pvalues(_pair(a, b), *_ONE_PAIR)[0])


def randomization_test(
    a: ArrayLike,
    b: ArrayLike,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    exact_max_n: int = EXACT_MAX_N,
) -> float:
    """Two-sided p of Fisher's sign-flip randomization test on the mean difference.

    Exact (the fraction of all 2^n sign vectors) for ``n ≤ exact_max_n``, else
    ``(count + 1) / (n_resamples + 1)`` over seeded random sign vectors.
    """
    _check_resamples(n_resamples)
    v = _pair(a, b)
    return float(_randomization_pvalues(v, *_ONE_PAIR, n_resamples, seed, exact_max_n, None)[0][0])


def bootstrap_test(
    a: ArrayLike, b: ArrayLike, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> float:
    """Two-sided p of the paired (shift) bootstrap test: ``(#{|d̄* − d̄| ≥ |d̄|} + 1)/(B + 1)``."""
    _check_resamples(n_resamples)
    return float(_bootstrap_pvalues(_pair(a, b), *_ONE_PAIR, n_resamples, seed, None)[0])


# ---------------------------------------------------------------------------------------------
# intervals


def _bootstrap_means(v: F64, n_resamples: int, seed: int) -> F64:
    """(B, S): the mean of every row of ``v`` under each of B seeded resamplings of columns."""
    n = v.shape[1]
    blocks = [w @ v.T for w in _bootstrap_weight_blocks(n, n_resamples, seed)]
    means: F64 = np.vstack(blocks) / n
    return means


def _bca_levels(v: F64, boot: F64, alpha: float) -> tuple[F64, F64]:
    """Per-row BCa quantile levels (Efron 1987) for the mean; jackknife acceleration."""
    from scipy import special  # on use: memory at server start (see _t_pvalues)

    n = v.shape[1]
    theta = v.mean(axis=1)
    below = (boot < theta).sum(axis=0) + (boot <= theta).sum(axis=0)
    share = np.clip(below / (2.0 * boot.shape[0]), 0.5 / boot.shape[0], 1 - 0.5 / boot.shape[0])
    z0 = special.ndtri(share)
    jack = (v.sum(axis=1, keepdims=True) - v) / max(n - 1, 1)
    dev = jack.mean(axis=1, keepdims=True) - jack
    num = (dev**3).sum(axis=1)
    den = 6.0 * (dev**2).sum(axis=1) ** 1.5
    accel = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    levels = []
    for z in (special.ndtri(alpha / 2), special.ndtri(1 - alpha / 2)):
        levels.append(special.ndtr(z0 + (z0 + z) / (1 - accel * (z0 + z))))
    return levels[0], levels[1]


def mean_intervals(
    values: ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    method: IntervalMethod = "percentile",
) -> tuple[F64, F64]:
    """Bootstrap confidence intervals ``(low, high)`` of the mean of every row of (S, n).

    All rows share the same seeded resamples of the queries (columns), so the intervals of
    a leaderboard are read from one resampling. ``method``: ``"percentile"`` (the α/2 and
    1 − α/2 quantiles of the bootstrap means) or ``"bca"``.
    """
    v = np.atleast_2d(np.asarray(values, dtype=np.float64))
    if v.shape[1] == 0:
        raise ValueError("no queries")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    _check_resamples(n_resamples)
    alpha = 1.0 - confidence
    boot = _bootstrap_means(v, n_resamples, seed)
    if method == "percentile":
        low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2], axis=0)
        return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    if method == "bca":
        lo_level, hi_level = _bca_levels(v, boot, alpha)
        low = np.array([np.quantile(boot[:, s], lo_level[s]) for s in range(v.shape[0])])
        high = np.array([np.quantile(boot[:, s], hi_level[s]) for s in range(v.shape[0])])
        return low, high
    raise ValueError(f"unknown interval method {method!r}; choose percentile or bca")


def bootstrap_interval(
    values: ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    method: IntervalMethod = "percentile",
) -> tuple[float, float]:
    """Bootstrap confidence interval of the mean of one system's per-query values."""
    x = np.asarray(values, dtype=np.float64).ravel()
    low, high = mean_intervals(
        x[None, :], confidence=confidence, n_resamples=n_resamples, seed=seed, method=method
    )
    return float(low[0]), float(high[0])


def bootstrap_difference_interval(
    a: ArrayLike,
    b: ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    method: IntervalMethod = "percentile",
) -> tuple[float, float]:
    """Bootstrap confidence interval of the mean paired difference ``mean(a − b)``."""
    v = _pair(a, b)
    return bootstrap_interval(
        v[0] - v[1], confidence=confidence, n_resamples=n_resamples, seed=seed, method=method
    )


# ---------------------------------------------------------------------------------------------
# corrections


def bonferroni(p: ArrayLike) -> F64:
    """Bonferroni-adjusted p-values ``min(1, m·p)``."""
    x = np.asarray(p, dtype=np.float64).ravel()
    return np.minimum(1.0, x * x.size)


def holm(p: ArrayLike) -> F64:
    """Holm's step-down adjusted p-values, in the input order.

    With ``p_(1) ≤ … ≤ p_(m)`` ascending (ties in input order):
    ``p̃_(i) = min(1, max_{j ≤ i} (m − j + 1)·p_(j))``.
    """
    x = np.asarray(p, dtype=np.float64).ravel()
    order = np.argsort(x, kind="stable")
    scaled = (x.size - np.arange(x.size)) * x[order]
    out = np.empty_like(x)
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out


def adjust_pvalues(p: ArrayLike, correction: Correction = "holm") -> F64:
    """Adjusted p-values under ``"holm"``, ``"bonferroni"`` or ``"none"``."""
    if correction == "holm":
        return holm(p)
    if correction == "bonferroni":
        return bonferroni(p)
    if correction == "none":
        return np.asarray(p, dtype=np.float64).ravel().copy()
    raise ValueError(f"unknown correction {correction!r}; choose one of {', '.join(CORRECTIONS)}")


# ---------------------------------------------------------------------------------------------
# every pair


@dataclass(frozen=True)
class PairComparison:
    """One pair: ``difference = mean_a − mean_b``; significant when ``p_adjusted ≤ α``."""

    system_a: str
    system_b: str
    mean_a: float
    mean_b: float
    difference: float
    p_value: float
    p_adjusted: float
    significant: bool


@dataclass(frozen=True)
class Comparison:
    """Every pair ``(i, j)``, ``i < j`` in the systems' input order, under one test."""

    systems: tuple[str, ...]
    means: tuple[float, ...]
    test: Test
    correction: Correction
    alpha: float
    n_queries: int
    n_resamples: int | None
    exact: bool
    pairs: tuple[PairComparison, ...]

    def pvalue_matrix(self, *, adjusted: bool = True) -> F64:
        """(S, S) symmetric matrix of the pairs' p-values (adjusted by default); diagonal 1."""
        index = {name: i for i, name in enumerate(self.systems)}
        out = np.ones((len(self.systems), len(self.systems)))
        for pair in self.pairs:
            i, j = index[pair.system_a], index[pair.system_b]
            out[i, j] = out[j, i] = pair.p_adjusted if adjusted else pair.p_value
        return out


def resamples_for(n_pairs: int, alpha: float = 0.05, correction: Correction = "holm") -> int:
    """Default B for ``n_pairs`` corrected comparisons: ``max(10,000, ⌈2·m/α⌉)``.

    The smallest Monte Carlo p-value is ``1/(B + 1)``; Holm or Bonferroni over ``m`` pairs
    multiply it by ``m``, so with ``B < m/α`` no pair could ever be significant. Twice that
    bound leaves room for the estimate's own noise. Without a correction: 10,000.
    """
    if correction == "none" or n_pairs <= 1:
        return DEFAULT_RESAMPLES
    return max(DEFAULT_RESAMPLES, math.ceil(2.0 * n_pairs / alpha))


def compare_systems(
    values: Mapping[str, ArrayLike],
    test: Test = "t",
    correction: Correction = "holm",
    alpha: float = 0.05,
    *,
    n_resamples: int | None = None,
    seed: int = 0,
    exact_max_n: int = EXACT_MAX_N,
    checkpoint: Checkpoint = None,
) -> Comparison:
    """Every pair's mean difference, p-value, adjusted p-value and significance.

    ``values`` maps each system to its per-query values (aligned across systems). The
    correction is over all ``S(S − 1)/2`` pairs. Resampling tests share one seeded stream of
    sign vectors / resampling weights across pairs (module docstring); ``checkpoint`` as in
    :func:`pair_pvalues`.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    names, v = values_matrix(values)
    if len(names) < 2:
        raise ValueError("comparing needs at least 2 systems")
    if correction not in CORRECTIONS:
        adjust_pvalues(np.zeros(1), correction)  # raises, naming the choices
    ia, ib = (np.asarray(x, dtype=np.int64) for x in np.triu_indices(len(names), 1))
    if n_resamples is None:
        n_resamples = resamples_for(ia.size, alpha, correction)
    options = {"n_resamples": n_resamples, "seed": seed, "exact_max_n": exact_max_n}
    p, exact = pair_pvalues(v, ia, ib, test, checkpoint=checkpoint, **options)
    adjusted = adjust_pvalues(p, correction)
    means = v.mean(axis=1)
    pairs = tuple(
        PairComparison(
            system_a=names[i],
            system_b=names[j],
            mean_a=float(means[i]),
            mean_b=float(means[j]),
            difference=float(means[i] - means[j]),
            p_value=float(p[k]),
            p_adjusted=float(adjusted[k]),
            significant=bool(adjusted[k] <= alpha),
        )
        for k, (i, j) in enumerate(zip(ia.tolist(), ib.tolist(), strict=True))
    )
    return Comparison(
        systems=names,
        means=tuple(float(m) for m in means),
        test=test,
        correction=correction,
        alpha=alpha,
        n_queries=int(v.shape[1]),
        n_resamples=None if test == "t" or exact else n_resamples,
        exact=exact,
        pairs=pairs,
    )
