"""Kendall's τ-b against scipy; τ_AP on a hand-worked example, on the published values of the
ircor R package (Urbano & Marrero's reference implementation of τ_AP, τ_AP,a and τ_AP,b), and
against a brute-force average over tie orders; significant swaps on a hand-built case."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from ranking.compare import correlation as corr


@pytest.mark.parametrize("seed", range(5))
def test_kendall_tau_b_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, 25).astype(float)  # many ties
    y = x + rng.integers(-2, 3, 25)
    assert corr.kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic)
    u, v = rng.random(30), rng.random(30)
    assert corr.kendall_tau_b(u, v) == pytest.approx(stats.kendalltau(u, v).statistic)


def test_kendall_tau_b_of_a_constant_is_nan() -> None:
    assert np.isnan(corr.kendall_tau_b([1, 1, 1], [1, 2, 3]))


def test_tau_ap_hand_worked_example() -> None:
    # Truth A > B > C > D > E (scores 5..1). C(i)/(i − 1) per position of the estimate:
    # * B, A, C, E, D:  A 0/1 (B is below A in truth), C 2/2, E 3/3, D 3/4 (E is below D)
    #   τ_AP = 2/4 · (0 + 1 + 1 + 3/4) − 1 = 0.375       (Kendall's τ: 2 swaps, 0.6)
    # * B, A, C, D, E:  0/1, 2/2, 3/3, 4/4 → 2/4 · 3 − 1 = 0.5       (1 swap at the top, τ 0.8)
    # * A, B, C, E, D:  1/1, 2/2, 3/3, 3/4 → 2/4 · 3.75 − 1 = 0.875  (1 swap at the bottom, τ 0.8)
    truth = [5, 4, 3, 2, 1]
    two_swaps = [4, 5, 3, 1, 2]  # scores of A..E giving the order B, A, C, E, D
    top_swap = [4, 5, 3, 2, 1]
    bottom_swap = [5, 4, 3, 1, 2]
    assert corr.tau_ap(truth, two_swaps) == pytest.approx(0.375)
    assert corr.tau_ap(truth, top_swap) == pytest.approx(0.5)
    assert corr.tau_ap(truth, bottom_swap) == pytest.approx(0.875)
    assert corr.kendall_tau_b(truth, two_swaps) == pytest.approx(0.6)
    assert corr.kendall_tau_b(truth, top_swap) == pytest.approx(0.8)
    assert corr.kendall_tau_b(truth, bottom_swap) == pytest.approx(0.8)
    assert corr.tau_ap(truth, truth) == pytest.approx(1.0)
    assert corr.tau_ap(truth, truth[::-1]) == pytest.approx(-1.0)


# The ircor package's test data (tests/testthat/helper_data.R) and expected values
# (tests/testthat/test_tauAP.R), given there to 4 decimals.
SETS = {
    "set1": {
        "x": [0.897, 0.372, 0.908, 0.898, 0.661, 0.062, 0.177, 0.384, 0.498, 0.992],
        "y": [0.82, 0.406, 0.817, 0.953, 0.673, 0.073, 0.364, 0.547, 0.589, 0.988],
        "x_ties": [0.9, 0.4, 0.9, 0.9, 0.7, 0.1, 0.2, 0.4, 0.5, 1],
        "y_ties": [0.8, 0.4, 0.8, 1, 0.7, 0.1, 0.4, 0.5, 0.6, 1],
        "expected": (0.8519, 0.7454, 0.8333, 0.7321),
    },
    "set2": {
        "x": [0.266, 0.573, 0.202, 0.945, 0.629, 0.206, 0.687, 0.77, 0.718, 0.38],
        "y": [0.263, 0.843, 0.728, 0.928, 0.08, 0.114, 0.467, 0.641, 0.973, 0.644],
        "x_ties": [0.3, 0.6, 0.2, 0.9, 0.6, 0.2, 0.7, 0.8, 0.7, 0.4],
        "y_ties": [0.3, 0.8, 0.7, 0.9, 0.1, 0.1, 0.5, 0.6, 1, 0.6],
        "expected": (0.2504, 0.2692, 0.2880, 0.2970),
    },
    "set3": {
        "x": [0.185, 0.573, 0.944, 0.129, 0.468, 0.553, 0.761, 0.405, 0.976, 0.445],
        "y": [0.845, 0.272, 0.275, 0.924, 0.605, 0.334, 0.162, 0.872, 0.018, 0.25],
        "x_ties": [0.2, 0.6, 0.9, 0.1, 0.5, 0.6, 0.8, 0.4, 1, 0.4],
        "y_ties": [0.8, 0.3, 0.3, 0.9, 0.6, 0.3, 0.2, 0.9, 0, 0.2],
        "expected": (-0.6971, -0.5558, -0.6680, -0.7047),
    },
}


@pytest.mark.parametrize("name", sorted(SETS))
def test_tau_ap_matches_the_ircor_reference_values(name: str) -> None:
    data = SETS[name]
    tau, tau_a, tau_b, tau_b_ties = data["expected"]
    assert corr.tau_ap(data["x"], data["y"]) == pytest.approx(tau, abs=5e-5)
    assert corr.tau_ap(data["x"], data["y_ties"]) == pytest.approx(tau_a, abs=5e-5)
    assert corr.tau_ap_b(data["x"], data["y"]) == pytest.approx(tau_b, abs=5e-5)
    assert corr.tau_ap_b(data["x_ties"], data["y_ties"]) == pytest.approx(tau_b_ties, abs=5e-5)
    assert corr.tau_ap_b(data["y_ties"], data["x_ties"]) == pytest.approx(tau_b_ties, abs=5e-5)


def _yilmaz(truth: list[float], order: list[int]) -> float:
    """τ_AP of an explicit order (item indices, best first), straight from the definition."""
    total = 0.0
    for i in range(1, len(order)):
        correct = sum(truth[j] > truth[order[i]] for j in order[:i])
        total += correct / i
    return 2 * total / (len(order) - 1) - 1


def test_tau_ap_with_ties_in_the_estimate_is_the_mean_over_tie_orders() -> None:
    truth = [9.0, 7.0, 8.0, 3.0, 5.0, 1.0, 4.0]
    estimate = [2.0, 2.0, 3.0, 1.0, 2.0, 0.0, 1.0]  # groups {2}, {0, 1, 4}, {3, 6}, {5}
    groups = [[i for i in range(7) if estimate[i] == level] for level in (3.0, 2.0, 1.0, 0.0)]
    values = [
        _yilmaz(truth, [i for group in perm for i in group])
        for perm in itertools.product(*(itertools.permutations(g) for g in groups))
    ]
    assert corr.tau_ap(truth, estimate) == pytest.approx(float(np.mean(values)))


def test_tau_ap_refuses_ties_in_the_truth() -> None:
    with pytest.raises(ValueError, match="tau_ap_b"):
        corr.tau_ap([1, 1, 2], [1, 2, 3])


def test_tau_ap_b_without_ties_is_the_mean_of_both_directions() -> None:
    rng = np.random.default_rng(3)
    x, y = rng.random(12), rng.random(12)
    assert corr.tau_ap_b(x, y) == pytest.approx((corr.tau_ap(x, y) + corr.tau_ap(y, x)) / 2)


def test_significant_swaps_hand_built() -> None:
    n = 12
    base = np.linspace(0.2, 0.6, n)
    wobble = np.tile([0.01, -0.01], n // 2)
    # Under A: s1 beats s2 (mean +0.2) and s3 (+0.195) by far; s3 − s2 = +0.005 ± 0.02 is
    # not significant (t ≈ 0.83).
    a = {"s1": base + 0.2 + wobble, "s2": base, "s3": base + 0.005 + 2 * wobble}
    # Under B: s2 beats s1 by 0.05 (a significant swap, significant under B too); s1 still
    # beats s3; s2 beats s3 (reversed, but A did not separate them: not a swap).
    b = {"s1": base + 0.1, "s2": base + 0.15 + wobble, "s3": base + 0.05 - wobble}
    swaps = corr.significant_swaps(a, b, test="t", correction="none")
    assert (swaps.n_pairs, swaps.significant_in_a) == (3, 2)
    assert swaps.swapped_pairs == (("s1", "s2"),)
    assert (swaps.swaps, swaps.swaps_significant_in_b) == (1, 1)
    # B' reverses s1/s2 only by noise (−0.002 ± 0.03): still a swap, not significant in B'.
    b_noisy = dict(b, s2=base + 0.102 + 3 * wobble)
    swaps = corr.significant_swaps(a, b_noisy, test="t", correction="none")
    assert swaps.swapped_pairs == (("s1", "s2"),)
    assert (swaps.swaps, swaps.swaps_significant_in_b) == (1, 0)


def test_ordering_agreement_reports_both_orderings() -> None:
    a = {"x": [0.9, 0.8, 0.7], "y": [0.5, 0.4, 0.6], "z": [0.1, 0.2, 0.1]}
    b = {"x": [0.4, 0.5, 0.6], "y": [0.9, 0.8, 0.9], "z": [0.0, 0.1, 0.0]}
    agreement = corr.ordering_agreement(a, b, correction="none")
    assert agreement.ordering_a == ("x", "y", "z")
    assert agreement.ordering_b == ("y", "x", "z")
    assert agreement.kendall_tau == pytest.approx(1 / 3)
    # truth x > y > z; estimate y, x, z: i=2 0/1, i=3 2/2 → 2/2 · 1 − 1 = 0
    assert agreement.tau_ap == pytest.approx(0.0)
