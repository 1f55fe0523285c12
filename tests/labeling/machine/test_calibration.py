"""Calibration of machine judges: PAV and Platt against scikit-learn, the prior, learning from
answers, and the report's figures by hand and against scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest

from labeling.machine.calibration import (
    PRIOR_GRID,
    Calibrator,
    brier_score,
    calibration_report,
    cohen_kappa,
    expected_calibration_error,
    isotonic_fit,
    pav,
    platt_fit,
    position_bias,
    reliability_bins,
)
from labeling.machine.judges import JudgeQuery, ThurstoneJudge
from tests.conftest import oracle


def test_pav_by_hand() -> None:
    assert pav([1, 3, 2, 4]).tolist() == [1, 2.5, 2.5, 4]
    assert pav([3, 2, 1]).tolist() == [2, 2, 2]
    # weights: (3·1 + 1·3) / 4 = 1.5
    assert pav([3, 1], [1, 3]).tolist() == [1.5, 1.5]
    assert pav([0, 1, 1, 2]).tolist() == [0, 1, 1, 2]
    with pytest.raises(ValueError, match="positive"):
        pav([1, 2], [1, 0])


@pytest.mark.parametrize("seed", range(5))
def test_isotonic_matches_sklearn(seed: int) -> None:
    isotonic = oracle("sklearn.isotonic", "scikit-learn is the isotonic oracle")
    rng = np.random.default_rng(seed)
    n = 300
    x = np.round(rng.uniform(0, 1, n), 2)  # ties on purpose
    y = (rng.uniform(0, 1, n) < x**2).astype(float)
    w = rng.uniform(0.1, 3.0, n)
    ours = isotonic_fit(x, y, w)
    ref = isotonic.IsotonicRegression(out_of_bounds="clip").fit(x, y, sample_weight=w)
    grid = np.linspace(-0.1, 1.1, 500)
    assert np.allclose(ours(grid), ref.predict(grid), atol=1e-12)
    assert np.allclose(ours(x), ref.predict(x), atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_platt_matches_sklearn_logistic_regression(seed: int) -> None:
    linear_model = oracle("sklearn.linear_model", "scikit-learn is the logistic oracle")
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 2, 400)
    y = (rng.uniform(0, 1, 400) < 1 / (1 + np.exp(-(0.7 * x - 0.3)))).astype(float)
    w = rng.uniform(0.5, 2.0, 400)
    a, b = platt_fit(x, y, w, l2=0.0)
    ref = linear_model.LogisticRegression(C=1e12, tol=1e-12, max_iter=10_000)
    ref.fit(x[:, None], y, sample_weight=w)
    assert a == pytest.approx(float(ref.coef_[0, 0]), abs=1e-5)
    assert b == pytest.approx(float(ref.intercept_[0]), abs=1e-5)


def test_platt_soft_targets_and_separable_data_stay_finite() -> None:
    # soft targets equal to σ(2x − 1) are fitted exactly
    x = np.linspace(-3, 3, 50)
    a, b = platt_fit(x, 1 / (1 + np.exp(-(2 * x - 1))))
    assert (a, b) == pytest.approx((2.0, -1.0), abs=1e-6)
    a, b = platt_fit([-1.0, 1.0], [0.0, 1.0], l2=1e-3)
    assert math.isfinite(a) and a > 0


@pytest.mark.parametrize("method", ["isotonic", "platt"])
def test_prior_alone_is_symmetric_and_shrinks_toward_half(method: str) -> None:
    cal = Calibrator(kind=method)  # type: ignore[arg-type]
    raw = np.linspace(0.01, 0.99, 99)
    g = cal.probability(raw)
    assert cal.n_answers == 0
    assert np.allclose(g + g[::-1], 1.0, atol=1e-9)
    assert np.all(np.diff(g) >= -1e-12)
    assert np.all(np.abs(g - 0.5) <= np.abs(raw - 0.5) + 1e-9)  # trust 0.5 < 1
    if method == "isotonic":  # at the grid: exactly 0.5 + trust·(p − 0.5)
        assert np.allclose(cal.probability(PRIOR_GRID), 0.5 + 0.5 * (PRIOR_GRID - 0.5))
    full = Calibrator(kind="isotonic", prior_trust=1.0)
    assert np.allclose(full.probability(PRIOR_GRID), PRIOR_GRID)


def simulated_answers(judge: ThurstoneJudge, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Raw P(first better) of ``judge`` and the truth on n random pairs (20 per query)."""
    rng = np.random.default_rng(seed)
    raw: list[float] = []
    truth: list[float] = []
    for q in range(n // 20):
        qid = f"s{seed}q{q}"
        pairs = [tuple(f"d{i}" for i in rng.choice(30, 2, replace=False)) for _ in range(20)]
        raw += judge.prefer(JudgeQuery(qid, ""), pairs).tolist()  # type: ignore[arg-type]
        truth += [float(judge.utility(qid, a) > judge.utility(qid, b)) for a, b in pairs]
    return np.array(raw), np.array(truth)


@pytest.mark.parametrize("method", ["isotonic", "platt"])
def test_calibration_learns_an_overconfident_judge(method: str) -> None:
    judge = ThurstoneJudge(0.8, seed=4, overconfidence=3.0)
    train_raw, train_y = simulated_answers(judge, 800, seed=1)
    test_raw, test_y = simulated_answers(judge, 3000, seed=2)
    raw_report = calibration_report(test_raw, test_y)
    assert raw_report.ece > 0.1  # the raw judge is badly overconfident
    cal = Calibrator(kind=method)  # type: ignore[arg-type]
    for start in range(0, 800, 100):  # incremental, as people answer
        cal.update(train_raw[start : start + 100], train_y[start : start + 100])
    assert cal.n_answers == 800
    fitted = calibration_report(cal.probability(test_raw), test_y)
    assert fitted.ece < 0.03
    assert fitted.brier < raw_report.brier
    assert fitted.accuracy == pytest.approx(raw_report.accuracy, abs=0.01)  # monotone map


def test_incremental_updates_equal_one_batch_and_stay_symmetric() -> None:
    rng = np.random.default_rng(0)
    raw = rng.uniform(0, 1, 200)
    y = (rng.uniform(0, 1, 200) < raw).astype(float)
    one, many = Calibrator(), Calibrator()
    one.update(raw, y)
    for p, answer in zip(raw, y, strict=True):
        many.update(p, answer)
    grid = np.linspace(0, 1, 101)
    assert np.array_equal(one.probability(grid), many.probability(grid))
    assert np.allclose(one.probability(grid) + one.probability(1 - grid), 1.0, atol=1e-12)
    assert np.allclose(
        one.p_right(grid), np.maximum(one.probability(grid), 1 - one.probability(grid))
    )
    with pytest.raises(ValueError):
        one.update([0.5], [0.5])
    assert one.describe()["answers"] == 200


def test_report_by_hand() -> None:
    p = [0.9, 0.8, 0.3, 0.55]
    y = [1, 0, 0, 1]
    # judge says first, first, second, first; right, wrong, right, right
    r = calibration_report(p, y)
    assert r.count == 4 and r.accuracy == 0.75
    # confidences 0.9, 0.8, 0.7, 0.55 in bins [0.9,.95) [0.8,.85) [0.7,.75) [0.55,.6)
    assert r.ece == pytest.approx((0.1 + 0.8 + 0.3 + 0.45) / 4)
    assert r.brier == pytest.approx((0.01 + 0.64 + 0.09 + 0.2025) / 4)
    assert r.kappa == pytest.approx(0.5)  # p_o 3/4, p_e 0.75·0.5 + 0.25·0.5
    counts = [b.count for b in r.bins]
    assert counts == [0, 1, 0, 0, 1, 0, 1, 0, 1, 0]
    assert r.bins[4].lower == pytest.approx(0.7) and r.bins[4].accuracy == 1.0
    assert math.isnan(r.bins[0].accuracy)
    d = r.to_dict()
    assert d["bins"][0]["accuracy"] is None and d["position_bias"] is None
    assert reliability_bins([1.0], [1.0], 4)[-1].count == 1  # the last bin is closed
    assert math.isnan(expected_calibration_error([], []))
    assert brier_score([0.5], [1]) == 0.25


def test_kappa_matches_sklearn() -> None:
    metrics = oracle("sklearn.metrics", "scikit-learn is the κ oracle")
    rng = np.random.default_rng(5)
    for labels in (2, 5):
        a = rng.integers(0, labels, 200)
        b = np.where(rng.uniform(0, 1, 200) < 0.6, a, rng.integers(0, labels, 200))
        assert cohen_kappa(a, b) == pytest.approx(metrics.cohen_kappa_score(a, b), abs=1e-12)
    p = rng.uniform(0, 1, 300)
    y = (rng.uniform(0, 1, 300) < p).astype(int)
    r = calibration_report(p, y)
    assert r.kappa == pytest.approx(metrics.cohen_kappa_score((p >= 0.5).astype(int), y))
    assert r.brier == pytest.approx(metrics.brier_score_loss(y, p))
    assert math.isnan(cohen_kappa([1, 1], [1, 1]))


def test_position_bias_by_hand() -> None:
    always_first = position_bias([0.9, 0.8, 1.0], [0.9, 0.7, 1.0])
    assert always_first.first_shown_rate == 1.0
    assert always_first.consistent_rate == 0.0
    assert always_first.mean_shift == pytest.approx(((0.8) + (0.5) + 1.0) / 2 / 3)
    fair = position_bias([0.9, 0.2, 0.6], [0.1, 0.8, 0.4])
    assert fair.first_shown_rate == 0.5 and fair.consistent_rate == 1.0
    assert fair.mean_shift == pytest.approx(0.0)
    partial = position_bias([0.9, math.nan, 0.5], [0.2, 0.7, 0.5])
    # decided answers: 0.9 (first), 0.2 (second), 0.7 (first); 0.5 and NaN have none
    assert partial.first_shown_rate == pytest.approx(2 / 3)
    assert partial.consistent_rate == 1.0  # only pair 0 decided in both orders
    assert partial.mean_shift == pytest.approx(((0.9 + 0.2 - 1) / 2 + 0) / 2)
    report = calibration_report([0.7], [1], position=fair).to_dict()
    assert report["position_bias"]["first_shown_rate"] == 0.5


def test_report_leaves_out_no_opinion() -> None:
    r = calibration_report([0.9, math.nan, 0.2], [1, 1, 0])
    assert r.count == 2 and r.no_opinion == 1 and r.accuracy == 1.0
    assert r.to_dict()["no_opinion"] == 1
