"""Every worked value of docs/metrics.md#worked-values (and hand-computed ones), to 1e-9.

Values printed with six or seven digits in docs/metrics.md are checked against their closed forms
(computed here independently with math.log2), and against the printed digits.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ranking import metrics
from ranking.io.topk import kappa_labels

TOL = 1e-9


def ranked(labels_in_rank_order: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """Labels given in model-rank order -> (labels, strictly decreasing scores)."""
    lab = np.asarray(labels_in_rank_order, dtype=float)
    return lab, -np.arange(lab.size, dtype=float)


def closed_ndcg(rank_labels: list[int], at: int, k_gain: bool = True) -> float:
    """Independent scalar NDCG@at (2^r - 1 gain, 1/log2(1+j))."""

    def g(r: float) -> float:
        return 2.0**r - 1.0 if k_gain else r

    dcg = sum(g(r) / math.log2(1 + j) for j, r in enumerate(rank_labels[:at], start=1))
    ideal = sorted(rank_labels, reverse=True)
    idcg = sum(g(r) / math.log2(1 + j) for j, r in enumerate(ideal[:at], start=1))
    return dcg / idcg


# ---------------------------------------------------------------- 7.B  (k = 3, n = 5)

SMALL = [2, 3, 0, 1, 0]  # model ranking (d2, d1, d4, d3, d5) with κ-labels (3, 2, 1, 0, 0)


@pytest.mark.parametrize(
    ("at", "printed", "exact"),
    [
        (1, 0.428571, 3 / 7),
        (2, 0.833991, (3 + 7 / math.log2(3)) / (7 + 3 / math.log2(3))),
        (3, 0.789596, (3 + 7 / math.log2(3)) / (7 + 3 / math.log2(3) + 0.5)),
        (5, 0.835448, (3 + 7 / math.log2(3) + 1 / math.log2(5)) / (7 + 3 / math.log2(3) + 0.5)),
    ],
)
def test_7b_kappa_ndcg(at: int, printed: float, exact: float) -> None:
    lab, s = ranked(SMALL)
    value = metrics.kappa_ndcg(lab, s, at=at)
    assert value.shape == (1,)
    assert value[0] == pytest.approx(exact, abs=TOL)
    assert round(float(value[0]), 6) == pytest.approx(printed, abs=1e-12)


def test_7b_kappa_ndcg_intermediates() -> None:
    lab, s = ranked(SMALL)
    assert metrics.dcg(lab, s, at=1)[0] == pytest.approx(3.0, abs=TOL)
    assert metrics.dcg(lab, s, at=2)[0] == pytest.approx(7.416508, abs=1e-6)
    assert metrics.dcg(lab, s, at=5)[0] == pytest.approx(7.847185, abs=1e-6)
    ideal = np.array([3.0, 2, 1, 0, 0])
    assert metrics.dcg(ideal, -np.arange(5.0), at=2)[0] == pytest.approx(8.892789, abs=1e-6)
    assert metrics.dcg(ideal, -np.arange(5.0), at=3)[0] == pytest.approx(9.392789, abs=1e-6)


def test_7b_kappa_err() -> None:
    lab, s = ranked(SMALL)
    assert metrics.kappa_err(lab, s)[0] == pytest.approx(1333 / 2048, abs=TOL)
    assert metrics.kappa_err(lab, s, k=3)[0] == pytest.approx(0.65087890625, abs=TOL)
    ideal, s2 = ranked([3, 2, 1, 0, 0])
    assert metrics.kappa_err(ideal, s2)[0] == pytest.approx(1385 / 1536, abs=TOL)
    assert metrics.kappa_err(ideal, s2)[0] == pytest.approx(0.9016927083, abs=1e-10)


def test_7b_from_topk_labels() -> None:
    labels = kappa_labels(["d1", "d2", "d3"], ["d4", "d5"], 3)
    assert labels == {"d1": 3, "d2": 2, "d3": 1, "d4": 0, "d5": 0}
    order = ["d2", "d1", "d4", "d3", "d5"]
    lab, s = ranked([labels[d] for d in order])
    assert metrics.kappa_ndcg(lab, s, at=2)[0] == pytest.approx(0.833991, abs=1e-6)


# ---------------------------------------------------------------- 7.C  (k = 10, n = 50)

K10 = list(range(10, 0, -1))

N_KAPPA = {
    1: 1023,
    2: 1345.405104,
    3: 1472.905104,
    4: 1527.601027,
    5: 1551.972754,
    6: 1563.015177,
    7: 1568.015177,
    8: 1570.223431,
    9: 1571.126521,
    10: 1571.415586,
}


@pytest.mark.parametrize("at", [*N_KAPPA, 11, 20, 50])
def test_7c_ideal_dcg(at: int) -> None:
    lab, s = ranked([*K10, *([0] * 40)])
    expected = N_KAPPA[min(at, 10)]
    assert metrics.dcg(lab, s, at=at)[0] == pytest.approx(expected, abs=1e-6)
    exact = sum((2.0 ** (11 - j) - 1) / math.log2(1 + j) for j in range(1, min(at, 10) + 1))
    assert metrics.dcg(lab, s, at=at)[0] == pytest.approx(exact, abs=TOL)


def test_7c_perfect() -> None:
    lab, s = ranked([*K10, *([0] * 40)])
    for at in (1, 2, 5, 10, 20, None):
        assert metrics.kappa_ndcg(lab, s, at=at)[0] == pytest.approx(1.0, abs=TOL)
    assert metrics.kappa_err(lab, s)[0] == pytest.approx(0.9993255681, abs=1e-10)
    assert metrics.kappa_err(lab, s, k=10)[0] == pytest.approx(0.9993255681, abs=1e-10)


CASES_7C = {
    "swap12": (
        [9, 10, 8, 7, 6, 5, 4, 3, 2, 1],
        {1: 0.4995112, 2: 0.8595486, 5: 0.8782427, 10: 0.8797492},
        0.7493255681,
    ),
    "reverse": (
        list(range(1, 11)),
        {1: 0.00097752, 5: 0.0160089, 10: 0.3942960},
        0.1254009,
    ),
    "f_first": ([0, *K10], {1: 0.0, 5: 0.6829334, 10: 0.7002443}, 0.4997192),
    "top1_at_11": (
        [*range(9, 0, -1), 0, 10],
        {1: 0.4995112, 5: 0.4990501, 10: 0.4985543},
        0.6116085,
    ),
}


@pytest.mark.parametrize("case", list(CASES_7C))
def test_7c_cases(case: str) -> None:
    head, ndcgs, kerr = CASES_7C[case]
    rank_labels = head + [0] * (50 - len(head))
    lab, s = ranked(rank_labels)
    for at, printed in ndcgs.items():
        value = float(metrics.kappa_ndcg(lab, s, at=at)[0])
        assert value == pytest.approx(closed_ndcg(rank_labels, at), abs=TOL)
        digits = len(str(printed).split(".")[1])
        assert value == pytest.approx(printed, abs=0.6 * 10.0**-digits)
    value = float(metrics.kappa_err(lab, s)[0])
    digits = len(str(kerr).split(".")[1])
    assert value == pytest.approx(kerr, abs=0.6 * 10.0**-digits)


def test_7c_swap_drops_err_by_exactly_a_quarter() -> None:
    perfect, s = ranked([*K10, *([0] * 40)])
    swapped, _ = ranked([9, 10, *range(8, 0, -1), *([0] * 40)])
    drop = metrics.kappa_err(perfect, s)[0] - metrics.kappa_err(swapped, s)[0]
    assert drop == pytest.approx(0.25, abs=TOL)
    assert metrics.kappa_ndcg(swapped, s, at=1)[0] == pytest.approx(511 / 1023, abs=TOL)
    reverse, _ = ranked([*range(1, 11), *([0] * 40)])
    assert metrics.kappa_ndcg(reverse, s, at=1)[0] == pytest.approx(1 / 1023, abs=TOL)


def test_7c_batched_equals_single() -> None:
    rows = [CASES_7C[c][0] + [0] * (50 - len(CASES_7C[c][0])) for c in CASES_7C]
    lab = np.asarray(rows, dtype=float)
    s = np.tile(-np.arange(50.0), (len(rows), 1))
    batched = metrics.kappa_err(lab, s)
    for i, row in enumerate(rows):
        assert batched[i] == pytest.approx(metrics.kappa_err(*ranked(row))[0], abs=1e-15)


# ---------------------------------------------------------------- 7.D  graded


def test_7d_ndcg() -> None:
    lab, s = ranked([1, 2, 0])
    expected = (1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3))
    assert metrics.ndcg(lab, s, at=3)[0] == pytest.approx(expected, abs=TOL)
    assert metrics.ndcg(lab, s, at=3)[0] == pytest.approx(0.796708, abs=1e-6)


def test_7d_err_r_max() -> None:
    lab, s = ranked([1, 2, 0])
    assert metrics.err(lab, s)[0] == pytest.approx(17 / 32, abs=TOL)
    assert metrics.err(lab, s, r_max="query")[0] == pytest.approx(0.53125, abs=TOL)
    assert metrics.err(lab, s, r_max=4)[0] == pytest.approx(77 / 512, abs=TOL)
    assert metrics.err(lab, s, r_max=4)[0] == pytest.approx(0.150390625, abs=TOL)


def test_7d_essential_loss_bound_side() -> None:
    # labels A=2, B=1, C=0; scores (2, 3, 1): model order (B, A, C); 1 − NDCG = 0.203292.
    value = metrics.ndcg([2, 1, 0], [2, 3, 1])[0]
    assert 1 - value == pytest.approx(0.203292, abs=1e-6)
    assert 1 - value <= 3 / (3 + 1 / math.log2(3))


def test_004_toy_example_ndcg_prefers_f2() -> None:
    """The toy example of Lan et al. 2014 ("Position-Aware ListMLE"): grades 5..1 on x1..x5,
    f1 = ln(4, 5, 3, 2, 1), f2 = ln(5, 4, 1, 2, 3).

    f1 ranks (x2, x1, x3, x4, x5): DCG = 15 + 31/log2 3 + 7/2 + 3/log2 5 + 1/log2 6 = 39.737705;
    f2 ranks (x1, x2, x5, x4, x3): DCG = 44.963946; ideal 45.642829.
    """

    def closed_dcg(rank_grades: list[int]) -> float:
        return sum((2.0**r - 1) / math.log2(1 + j) for j, r in enumerate(rank_grades, start=1))

    grades = np.array([5.0, 4, 3, 2, 1])
    f1 = np.log([4.0, 5, 3, 2, 1])
    f2 = np.log([5.0, 4, 1, 2, 3])
    assert metrics.dcg(grades, f1)[0] == pytest.approx(closed_dcg([4, 5, 3, 2, 1]), abs=TOL)
    assert metrics.dcg(grades, f1)[0] == pytest.approx(39.737705, abs=1e-6)
    assert metrics.dcg(grades, f2)[0] == pytest.approx(closed_dcg([5, 4, 1, 2, 3]), abs=TOL)
    assert metrics.dcg(grades, f2)[0] == pytest.approx(44.963946, abs=1e-6)
    assert closed_dcg([5, 4, 3, 2, 1]) == pytest.approx(45.642829, abs=1e-6)
    n1, n2 = metrics.ndcg(grades, f1, at=5)[0], metrics.ndcg(grades, f2, at=5)[0]
    assert n1 == pytest.approx(closed_ndcg([4, 5, 3, 2, 1], 5), abs=TOL)
    assert n2 == pytest.approx(closed_ndcg([5, 4, 1, 2, 3], 5), abs=TOL)
    assert (round(n1, 6), round(n2, 6)) == (0.870623, 0.985126)
