"""Small exact statistics for the study analysis: χ² on 2×2 tables, Cohen's κ, binomial test.

Pure Python (``math`` only) so that :mod:`labeling` needs neither scipy nor numpy; the tests
compare every function with scipy as an independent oracle.

References: docs/analysis.md#chi-square (the χ² construction of Niu et al., SIGIR 2012, Tables
2–3); Cohen (1960) for κ; the two-sided exact binomial test as in ``scipy.stats.binomtest``
(sum of the probabilities of every outcome no more likely than the observed one).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: Relative tolerance when comparing binomial probabilities with the observed one, so that
#: outcomes exactly as likely (e.g. the mirror image at p = 0.5) are not lost to rounding.
_BINOM_RTOL = 1e-7


@dataclass(frozen=True, slots=True)
class ChiSquare:
    """Result of a χ² test of independence on a 2×2 table (df = 1)."""

    statistic: float
    df: int
    p_value: float
    yates: bool
    table: tuple[tuple[int, int], tuple[int, int]]
    expected: tuple[tuple[float, float], tuple[float, float]]


def chi2_sf_df1(x: float) -> float:
    """Upper tail P(χ²₁ ≥ x) = erfc(√(x/2)) (χ²₁ is the square of a standard normal)."""
    if x < 0 or math.isnan(x):
        raise ValueError(f"χ² statistic must be a number ≥ 0, got {x!r}")
    return math.erfc(math.sqrt(x / 2.0))


def _check_count(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where}: count must be a non-negative integer, got {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"{where}: count must be a non-negative integer, got {value!r}")
        value = int(value)
    if value < 0:
        raise ValueError(f"{where}: count must be a non-negative integer, got {value!r}")
    return int(value)


def chi2_2x2(table: Sequence[Sequence[int]], *, yates: bool = False) -> ChiSquare:
    """Pearson's χ² test of independence on the 2×2 table ``[[a, b], [c, d]]``.

    With rows = methods and columns = (agreed, disagreed) this is the test of
    docs/analysis.md#chi-square::

        χ² = N·(ad − bc)² / ((a+b)(c+d)(a+c)(b+d)),   df = 1,   p = erfc(√(χ²/2))

    which equals Σ (O − E)²/E with E = row total × column total / N. With ``yates=True`` each
    |O − E| is reduced by ½ but not below 0 (``scipy.stats.chi2_contingency(correction=True)``)::

        χ² = N·max(0, |ad − bc| − N/2)² / ((a+b)(c+d)(a+c)(b+d))

    Raises ValueError for a table that is not 2×2 of non-negative integers, or when a row or a
    column sums to zero (an expected count of 0: the test is undefined).
    """
    if len(table) != 2 or any(len(row) != 2 for row in table):
        raise ValueError(f"χ² table must be 2×2, got {[list(r) for r in table]!r}")
    a, b, c, d = (_check_count(table[i][j], f"table[{i}][{j}]") for i in (0, 1) for j in (0, 1))
    n = a + b + c + d
    rows, cols = (a + b, c + d), (a + c, b + d)
    if 0 in rows or 0 in cols:
        raise ValueError(
            f"χ² undefined for table [[{a}, {b}], [{c}, {d}]]: a row or column sums to zero"
        )
    expected = (
        (rows[0] * cols[0] / n, rows[0] * cols[1] / n),
        (rows[1] * cols[0] / n, rows[1] * cols[1] / n),
    )
    diff = abs(a * d - b * c)  # exact in integers; |O − E| = diff / N in every cell
    # Integer numerator and denominator: one correctly rounded division at the end.
    if yates:
        numerator, denominator = n * max(0, 2 * diff - n) ** 2, 4
    else:
        numerator, denominator = n * diff * diff, 1
    statistic = numerator / (denominator * rows[0] * rows[1] * cols[0] * cols[1])
    return ChiSquare(
        statistic=statistic,
        df=1,
        p_value=chi2_sf_df1(statistic),
        yates=yates,
        table=((a, b), (c, d)),
        expected=expected,
    )


def cohen_kappa(matrix: Sequence[Sequence[float]]) -> float | None:
    """Cohen's κ of a square confusion matrix (rows: rater U, columns: rater V).

    κ = (p_o − p_e) / (1 − p_e), with p_o = Σ_x M[x][x] / N and p_e = Σ_x (row_x / N)(col_x / N).
    Returns None when κ is undefined (no instances, or p_e = 1: both raters always used the
    same single category).
    """
    size = len(matrix)
    if size == 0 or any(len(row) != size for row in matrix):
        raise ValueError(f"κ needs a non-empty square matrix, got {[list(r) for r in matrix]!r}")
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            if value < 0:
                raise ValueError(f"matrix[{i}][{j}] is negative: {value!r}")
    n = math.fsum(math.fsum(row) for row in matrix)
    if n == 0:
        return None
    p_o = math.fsum(matrix[i][i] for i in range(size)) / n
    row_sums = [math.fsum(row) / n for row in matrix]
    col_sums = [math.fsum(matrix[i][j] for i in range(size)) / n for j in range(size)]
    p_e = math.fsum(r * c for r, c in zip(row_sums, col_sums, strict=True))
    if math.isclose(p_e, 1.0, rel_tol=0.0, abs_tol=1e-15):
        return None
    return (p_o - p_e) / (1.0 - p_e)


def binom_logpmf(i: int, n: int, p: float) -> float:
    """log P(X = i) for X ~ Binomial(n, p), via log-gamma (exact to rounding, any n)."""
    if not 0 <= i <= n:
        return -math.inf
    if p == 0.0:
        return 0.0 if i == 0 else -math.inf
    if p == 1.0:
        return 0.0 if i == n else -math.inf
    log_comb = math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
    return log_comb + i * math.log(p) + (n - i) * math.log1p(-p)


def binomial_test(successes: int, n: int, p: float = 0.5) -> float:
    """Exact two-sided binomial test: P-value of ``successes`` out of ``n`` under Binomial(n, p).

    p-value = Σ P(X = i) over every i with P(X = i) ≤ P(X = successes)·(1 + 1e-7), the
    "minimum likelihood" two-sided test (as ``scipy.stats.binomtest(...).pvalue``). The sum is
    taken in log space (log-sum-exp with ``math.fsum``), so it is accurate for large n.
    """
    successes = _check_count(successes, "successes")
    n = _check_count(n, "n")
    if successes > n:
        raise ValueError(f"successes ({successes}) cannot exceed n ({n})")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p!r}")
    if n == 0:
        return 1.0
    observed = binom_logpmf(successes, n, p)
    if observed == -math.inf:  # impossible outcome (p = 0 or 1): the hypothesis is refuted
        return 0.0
    threshold = observed + math.log1p(_BINOM_RTOL)
    logs = [binom_logpmf(i, n, p) for i in range(n + 1)]
    kept = [v for v in logs if v <= threshold and v != -math.inf]
    top = max(kept)
    total = math.exp(top) * math.fsum(math.exp(v - top) for v in kept)
    return min(1.0, total)
