"""Paired tests, bootstrap intervals and corrections against independent oracles.

* the t-test against ``scipy.stats.ttest_rel``;
* the exact randomization test against a brute-force loop over every sign vector written here,
  and the Monte Carlo version against the exact p within a binomial tolerance;
* the bootstrap test: calibration under H0 over seeds, and agreement with the t-test at n = 400;
* bootstrap intervals: coverage of a known mean at the stated rate over many seeds (within a
  binomial tolerance), and endpoints against ``scipy.stats.bootstrap`` (percentile and BCa);
* Holm and Bonferroni on a hand-checked example.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from ranking.compare import significance as sig


def _pair(seed: int, n: int, shift: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    return a, np.clip(a + rng.normal(shift, 0.15, n), 0, 1)


# --------------------------------------------------------------------------------- t-test


@pytest.mark.parametrize("seed", range(6))
def test_t_test_matches_scipy(seed: int) -> None:
    a, b = _pair(seed, 5 + 7 * seed)
    assert sig.paired_t_test(a, b) == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-10)


def test_t_test_constant_differences() -> None:
    a = np.array([0.5, 0.25, 1.0])
    assert sig.paired_t_test(a, a) == 1.0  # no difference at all (scipy gives NaN)
    assert sig.paired_t_test(a + 0.25, a) == 0.0  # the same non-zero difference everywhere


# ------------------------------------------------------------------------ randomization


def _brute_force_randomization(a: np.ndarray, b: np.ndarray) -> float:
    d = a - b
    observed = abs(d.sum())
    hits = 0
    for signs in itertools.product((1, -1), repeat=d.size):
        hits += int(abs(float(np.dot(signs, d))) >= observed - 1e-12)
    return hits / float(1 << d.size)


@pytest.mark.parametrize("seed", range(4))
def test_exact_randomization_matches_enumeration(seed: int) -> None:
    a, b = _pair(seed, 11)
    assert sig.randomization_test(a, b) == pytest.approx(_brute_force_randomization(a, b))


def test_exact_randomization_counts_ties_as_at_least() -> None:
    # Values on a coarse grid: many sign vectors reach exactly |Σd|; they all count.
    a = np.array([1.0, 0.5, 0.5, 1.0, 0.0, 0.5, 1.0, 0.5])
    b = np.array([0.5, 0.0, 0.0, 0.5, 0.0, 0.5, 0.5, 0.0])
    expected = _brute_force_randomization(a, b)
    # d = (.5,.5,.5,.5,0,0,.5,.5): |Σ s d| ≥ 3 needs all six ±.5 equal: 2·4 of 256 vectors
    assert expected == pytest.approx(8 / 256)
    assert sig.randomization_test(a, b) == pytest.approx(expected)


def test_monte_carlo_randomization_near_exact_and_never_zero() -> None:
    a, b = _pair(7, 16, shift=0.04)
    exact = sig.randomization_test(a, b)
    n_resamples = 20_000
    mc = sig.randomization_test(a, b, exact_max_n=0, n_resamples=n_resamples, seed=3)
    tolerance = 4 * math.sqrt(exact * (1 - exact) / n_resamples) + 2 / n_resamples
    assert abs(mc - exact) <= tolerance
    far = sig.randomization_test(a + 1, a, exact_max_n=0, n_resamples=999)
    assert far == pytest.approx(1 / 1000)  # (0 + 1)/(B + 1): no resample reaches |Σd|


def test_monte_carlo_is_seeded() -> None:
    a, b = _pair(1, 40)
    p1 = sig.randomization_test(a, b, n_resamples=500, seed=5)
    assert p1 == sig.randomization_test(a, b, n_resamples=500, seed=5)
    assert p1 != sig.randomization_test(a, b, n_resamples=500, seed=6)


# ---------------------------------------------------------------------------- bootstrap


def test_bootstrap_test_is_calibrated_under_the_null() -> None:
    rng = np.random.default_rng(11)
    trials, rejections = 300, 0
    for seed in range(trials):
        a = rng.normal(0.5, 0.2, 60)
        b = a + rng.normal(0.0, 0.1, 60)  # no mean difference
        rejections += sig.bootstrap_test(a, b, n_resamples=400, seed=seed) <= 0.05
    rate = rejections / trials
    assert abs(rate - 0.05) <= 3 * math.sqrt(0.05 * 0.95 / trials) + 0.01


def test_bootstrap_test_agrees_with_t_test_for_large_n() -> None:
    a, b = _pair(3, 400, shift=0.006)
    p_t = sig.paired_t_test(a, b)
    assert 0.005 < p_t < 0.2  # an informative, non-extreme case
    p_boot = sig.bootstrap_test(a, b, n_resamples=20_000, seed=1)
    assert p_boot == pytest.approx(p_t, rel=0.25)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_interval_covers_the_mean_at_the_stated_rate(method: sig.IntervalMethod) -> None:
    rng = np.random.default_rng(2024)
    trials, covered, n = 400, 0, 50
    for seed in range(trials):
        x = rng.normal(0.3, 1.0, n)  # known mean 0.3
        low, high = sig.bootstrap_interval(x, n_resamples=1000, seed=seed, method=method)
        covered += low <= 0.3 <= high
    rate = covered / trials
    # Bootstrap intervals of a mean at n = 50 cover about 0.94 (the t/z gap); binomial 3σ.
    assert abs(rate - 0.944) <= 3 * math.sqrt(0.95 * 0.05 / trials)


@pytest.mark.parametrize(("method", "scipy_method"), [("percentile", "percentile"), ("bca", "BCa")])
def test_interval_matches_scipy_bootstrap(method: sig.IntervalMethod, scipy_method: str) -> None:
    x = np.random.default_rng(5).exponential(1.0, 40)  # skewed: BCa differs from percentile
    low, high = sig.bootstrap_interval(x, n_resamples=40_000, seed=1, method=method)
    ref = stats.bootstrap(
        (x,), np.mean, n_resamples=40_000, method=scipy_method, random_state=1
    ).confidence_interval
    se = x.std(ddof=1) / math.sqrt(x.size)
    assert low == pytest.approx(ref.low, abs=0.05 * se)
    assert high == pytest.approx(ref.high, abs=0.05 * se)


def test_difference_interval_is_the_interval_of_the_differences() -> None:
    a, b = _pair(4, 30)
    assert sig.bootstrap_difference_interval(a, b, n_resamples=300) == sig.bootstrap_interval(
        a - b, n_resamples=300
    )


def test_mean_intervals_rows_share_the_resamples() -> None:
    x = np.random.default_rng(0).random((3, 25))
    low, high = sig.mean_intervals(x, n_resamples=300, seed=2)
    for s in range(3):
        assert (low[s], high[s]) == pytest.approx(
            sig.bootstrap_interval(x[s], n_resamples=300, seed=2), rel=1e-12
        )
    assert (low <= x.mean(axis=1)).all() and (x.mean(axis=1) <= high).all()


# --------------------------------------------------------------------------- corrections


def test_holm_and_bonferroni_hand_checked() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # ascending 0.005, 0.01, 0.03, 0.04 scaled by 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04;
    # running maximum 0.02, 0.03, 0.06, 0.06; back in input order:
    assert sig.holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert sig.bonferroni(p) == pytest.approx([0.04, 0.16, 0.12, 0.02])
    assert sig.holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])  # 2·0.5 = 1, then max(1, 0.6)
    assert sig.bonferroni([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    assert sig.adjust_pvalues(p, "none") == pytest.approx(p)


# ------------------------------------------------------------------------- every pair


def _systems(n_systems: int, n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    base = rng.random(n)
    return {
        f"s{i}": np.clip(base + 0.01 * i + rng.normal(0, 0.1, n), 0, 1) for i in range(n_systems)
    }


def _single_pair_p(test: sig.Test, a: np.ndarray, b: np.ndarray) -> float:
    if test == "t":
        return sig.paired_t_test(a, b)
    if test == "randomization":
        return sig.randomization_test(a, b, n_resamples=500, seed=9)
    return sig.bootstrap_test(a, b, n_resamples=500, seed=9)


@pytest.mark.parametrize("test", ["t", "randomization", "bootstrap"])
def test_compare_systems_matches_the_pairwise_functions(test: sig.Test) -> None:
    values = _systems(4, 30)
    comp = sig.compare_systems(values, test=test, correction="holm", n_resamples=500, seed=9)
    expected = [(f"s{i}", f"s{j}") for i in range(4) for j in range(i + 1, 4)]
    assert [(p.system_a, p.system_b) for p in comp.pairs] == expected
    raw = []
    for pair in comp.pairs:
        a, b = values[pair.system_a], values[pair.system_b]
        assert pair.difference == pytest.approx(a.mean() - b.mean())
        assert pair.p_value == pytest.approx(_single_pair_p(test, a, b), rel=1e-9)
        raw.append(pair.p_value)
    adjusted = sig.holm(raw)
    for pair, adj in zip(comp.pairs, adjusted, strict=True):
        assert pair.p_adjusted == pytest.approx(adj)
        assert pair.significant == (adj <= 0.05)
    matrix = comp.pvalue_matrix()
    assert matrix.shape == (4, 4) and (matrix == matrix.T).all()


def test_shared_resamples_do_not_depend_on_the_other_systems() -> None:
    values = _systems(30, 500, seed=1)
    many = sig.compare_systems(values, test="randomization", n_resamples=300, seed=4)
    two = sig.compare_systems(
        {"s3": values["s3"], "s17": values["s17"]}, test="randomization", n_resamples=300, seed=4
    )
    pair = next(p for p in many.pairs if (p.system_a, p.system_b) == ("s3", "s17"))
    assert pair.p_value == two.pairs[0].p_value
    assert len(many.pairs) == 30 * 29 // 2


def test_compare_systems_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="aligned"):
        sig.compare_systems({"a": [0.1, 0.2], "b": [0.1]})
    with pytest.raises(ValueError, match="not finite"):
        sig.compare_systems({"a": [0.1, float("nan")], "b": [0.1, 0.2]})
    with pytest.raises(ValueError, match="at least 2 systems"):
        sig.compare_systems({"a": [0.1, 0.2]})
    with pytest.raises(ValueError, match="unknown correction"):
        sig.compare_systems({"a": [0.1, 0.2], "b": [0.3, 0.1]}, correction="sidak")  # type: ignore[arg-type]


def test_default_resamples_let_a_corrected_p_reach_alpha() -> None:
    # 50 systems: 1,225 pairs; Holm multiplies the smallest MC p 1/(B + 1) by 1,225, so
    # B must exceed 1,225/0.05 = 24,500; the default takes twice that.
    assert sig.resamples_for(1225, 0.05, "holm") == 49_000
    assert sig.resamples_for(3, 0.05, "holm") == sig.DEFAULT_RESAMPLES
    assert sig.resamples_for(1225, 0.05, "none") == sig.DEFAULT_RESAMPLES
    values = _systems(3, 25)
    comp = sig.compare_systems(values, test="randomization")
    assert comp.n_resamples == sig.DEFAULT_RESAMPLES and not comp.exact
    assert sig.compare_systems(values, test="t").n_resamples is None


class _Stop(Exception):
    pass


@pytest.mark.parametrize("test", ["randomization", "bootstrap"])
def test_checkpoint_sees_every_chunk_and_changes_nothing(test: str) -> None:
    """A checkpoint is called between chunks of a resampling test and leaves its p-values as
    they are; one that raises stops the test at that chunk (the service's time budget and
    client disconnects)."""
    rng = np.random.default_rng(4)
    values = {f"s{i}": rng.random(30) + 0.02 * i for i in range(6)}
    plain = sig.compare_systems(values, test, n_resamples=3000, seed=1)
    calls: list[int] = []
    counted = sig.compare_systems(
        values, test, n_resamples=3000, seed=1, checkpoint=lambda: calls.append(1)
    )
    assert [p.p_value for p in counted.pairs] == [p.p_value for p in plain.pairs]
    assert len(calls) >= 1
    seen = 0

    def stop_at_first() -> None:
        nonlocal seen
        seen += 1
        raise _Stop

    with pytest.raises(_Stop):
        sig.compare_systems(values, test, n_resamples=3000, seed=1, checkpoint=stop_at_first)
    assert seen == 1
