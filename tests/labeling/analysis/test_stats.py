"""χ², Cohen's κ and the binomial test against hand-computed values and scipy/sklearn oracles."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from labeling.analysis.stats import binomial_test, chi2_2x2, chi2_sf_df1, cohen_kappa

# --- hand-computed values -------------------------------------------------------------------------


def test_worked_chi2_745_vs_547() -> None:
    r = chi2_2x2([[745, 255], [547, 453]])
    assert round(r.statistic, 4) == 85.7165
    assert r.df == 1
    assert r.p_value == pytest.approx(2.08e-20, rel=5e-3)
    assert r.expected == ((646.0, 354.0), (646.0, 354.0))
    assert round(chi2_2x2([[745, 255], [547, 453]], yates=True).statistic, 4) == 84.8529


def test_worked_chi2_30_vs_20() -> None:
    r = chi2_2x2([[30, 10], [20, 20]])
    assert r.statistic == pytest.approx(16 / 3, abs=1e-9)
    assert round(r.statistic, 4) == 5.3333
    assert round(r.p_value, 6) == 0.020921
    assert chi2_2x2([[30, 10], [20, 20]], yates=True).statistic == pytest.approx(4.32, abs=1e-9)


def test_worked_chi2_ignoring_ties_example() -> None:
    r = chi2_2x2([[897, 103], [831, 169]])
    assert round(r.statistic, 4) == 18.5355
    assert r.p_value == pytest.approx(1.668e-5, rel=1e-3)
    assert round(chi2_2x2([[897, 103], [831, 169]], yates=True).statistic, 4) == 17.9781


def test_critical_value_at_p_0001() -> None:
    # docs/analysis.md#chi-square: the critical value at p = 0.001, df = 1, is 10.828.
    assert chi2_sf_df1(10.828) == pytest.approx(0.001, rel=1e-3)


# --- oracles ----------------------------------------------------------------------------------

positive_table = st.tuples(*(st.integers(0, 5000) for _ in range(4))).filter(
    lambda t: t[0] + t[1] > 0 and t[2] + t[3] > 0 and t[0] + t[2] > 0 and t[1] + t[3] > 0
)


@settings(max_examples=300, deadline=None)
@given(positive_table, st.booleans())
def test_chi2_equals_scipy(t: tuple[int, int, int, int], yates: bool) -> None:
    table = [[t[0], t[1]], [t[2], t[3]]]
    ours = chi2_2x2(table, yates=yates)
    stat, p, dof, expected = sps.chi2_contingency(table, correction=yates)
    assert dof == 1
    assert ours.statistic == pytest.approx(stat, rel=1e-9, abs=1e-9)
    assert ours.p_value == pytest.approx(p, rel=1e-7, abs=1e-300)
    for i in range(2):
        for j in range(2):
            assert ours.expected[i][j] == pytest.approx(expected[i][j], rel=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.floats(0, 400, allow_nan=False))
def test_chi2_sf_equals_scipy(x: float) -> None:
    assert chi2_sf_df1(x) == pytest.approx(sps.chi2.sf(x, 1), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize(
    "table",
    [
        [[0, 0], [1, 2]],
        [[1, 0], [2, 0]],
        [[1, 2, 3], [4, 5, 6]],
        [[1, -2], [3, 4]],
        [[1.5, 2], [3, 4]],
    ],
)
def test_chi2_bad_tables_are_errors(table: list[list[float]]) -> None:
    with pytest.raises(ValueError):
        chi2_2x2(table)  # type: ignore[arg-type]


def test_chi2_sf_rejects_negative() -> None:
    with pytest.raises(ValueError):
        chi2_sf_df1(-1.0)


def brute_force_kappa(matrix: list[list[int]]) -> float:
    """κ from the explicit list of rated items: p_o by counting equal labels, p_e as the chance
    that U's label of one item equals V's label of an independently drawn item."""
    items = [(i, j) for i, row in enumerate(matrix) for j, c in enumerate(row) for _ in range(c)]
    n = len(items)
    p_o = sum(u == v for u, v in items) / n
    p_e = sum(u == v2 for u, _ in items for _, v2 in items) / (n * n)
    return (p_o - p_e) / (1 - p_e)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=9, max_size=9))
def test_kappa_equals_brute_force_and_sklearn(cells: list[int]) -> None:
    from sklearn.metrics import cohen_kappa_score

    matrix = [cells[0:3], cells[3:6], cells[6:9]]
    ours = cohen_kappa(matrix)
    n = sum(cells)
    rows = [sum(r) for r in matrix]
    cols = [sum(matrix[i][j] for i in range(3)) for j in range(3)]
    p_e = sum(r * c for r, c in zip(rows, cols, strict=True)) / (n * n) if n else 1.0
    if n == 0 or p_e == 1.0:
        assert ours is None
        return
    assert ours == pytest.approx(brute_force_kappa(matrix), abs=1e-12)
    u = [i for i, row in enumerate(matrix) for j, c in enumerate(row) for _ in range(c)]
    v = [j for i, row in enumerate(matrix) for j, c in enumerate(row) for _ in range(c)]
    assert ours == pytest.approx(cohen_kappa_score(u, v), abs=1e-12)


def test_kappa_worked_example() -> None:
    # The hand-computed C above: p_o = 0.7, marginals U (4,3,3), V (4,3,3) -> p_e = 0.34.
    assert cohen_kappa([[3, 1, 0], [0, 2, 1], [1, 0, 2]]) == pytest.approx(0.36 / 0.66, abs=1e-12)


def test_kappa_rejects_bad_matrix() -> None:
    with pytest.raises(ValueError):
        cohen_kappa([[1, 2], [3]])
    with pytest.raises(ValueError):
        cohen_kappa([[1, -1], [0, 1]])


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 300), st.data(), st.sampled_from([0.5, 0.5, 0.1, 0.3, 0.77, 0.0, 1.0]))
def test_binomial_test_equals_scipy(n: int, data: st.DataObject, p: float) -> None:
    k = data.draw(st.integers(0, n))
    expected = sps.binomtest(k, n, p).pvalue if n > 0 else 1.0
    assert binomial_test(k, n, p) == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_binomial_test_known_values() -> None:
    assert binomial_test(3, 10) == pytest.approx(0.34375, abs=1e-12)  # 2·176/1024
    assert binomial_test(5, 10) == pytest.approx(1.0, abs=1e-12)
    assert binomial_test(0, 0) == 1.0
    # Large n stays accurate (log space): 5,400 left wins out of 10,000.
    assert binomial_test(5400, 10000) == pytest.approx(sps.binomtest(5400, 10000).pvalue, rel=1e-8)
    # Extreme tails: p = 2·2^-n, still representable at n = 1000, below the smallest
    # subnormal double (2^-1074) at n = 5000, where it must be 0.0 rather than NaN.
    assert binomial_test(0, 1000) == pytest.approx(2.0**-999, rel=1e-9, abs=0.0)
    assert binomial_test(1000, 1000) == pytest.approx(2.0**-999, rel=1e-9, abs=0.0)
    assert binomial_test(0, 5000) == 0.0 == sps.binomtest(0, 5000).pvalue


def test_binomial_test_bad_input() -> None:
    with pytest.raises(ValueError):
        binomial_test(5, 3)
    with pytest.raises(ValueError):
        binomial_test(-1, 3)
    with pytest.raises(ValueError):
        binomial_test(1, 3, 1.5)
