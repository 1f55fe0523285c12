"""Boosting: step sizes (§7.E) and FocusedBoost's exact reductions, round by round."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ranking.boosting import WeakRankers, adarank, focusedboost, rankboost, step_size
from ranking.dataset import QueryDataset


def _synthetic(seed: int = 0, n_queries: int = 25, d: int = 6, k: int = 3) -> QueryDataset:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(k + 2, 14, size=n_queries)
    X = rng.random((int(sizes.sum()), d))
    w = rng.normal(size=d)
    grades = np.digitize(
        X @ w + rng.normal(scale=0.3, size=X.shape[0]), np.quantile(X @ w, [0.6, 0.85])
    )
    qid = np.repeat(np.arange(n_queries), sizes)
    return QueryDataset.from_arrays(X, grades, qid).to_topk(k, seed=seed)


def test_step_sizes_of_the_digest() -> None:
    for c, alpha in ((0.2, 0.202733), (0.5, 0.549306), (0.9, 1.472219)):
        assert step_size(c) == pytest.approx(alpha, abs=1e-6)
    assert step_size(-0.5) == pytest.approx(-0.549306, abs=1e-6)
    assert np.isfinite(step_size(1.0))


def test_focusedboost_at_beta_1_is_adarank_on_the_top_k_round_by_round() -> None:
    ds = _synthetic(1)
    weak = WeakRankers.build(ds.X, "feature", scale=False)
    focused = focusedboost(ds, weak, rounds=15, beta=1.0, k=3)
    # AdaRank on the same queries restricted to T (E = κ-NDCG@k of T's items).
    only_top = ds.subset(np.arange(ds.n_queries))
    keep = only_top.labels > 0
    ds_t = QueryDataset.from_arrays(ds.X[keep], ds.labels[keep], ds.qid[keep], ds.doc_ids[keep])
    plain = adarank(ds_t, weak, rounds=15, at=3)
    assert len(focused.history) == len(plain.history) == 15
    for (m1, a1, c1), (m2, a2, c2) in zip(focused.history, plain.history, strict=True):
        assert m1 == m2
        assert a1 == pytest.approx(a2, abs=1e-9)
        assert c1 == pytest.approx(c2, abs=1e-9)


def test_focusedboost_at_beta_0_is_rankboost_on_focused_pairs_round_by_round() -> None:
    ds = _synthetic(2)
    weak = WeakRankers.build(ds.X, "threshold", n_thresholds=5)
    focused = focusedboost(ds, weak, rounds=20, beta=0.0, k=3)
    binary = ds.with_labels((ds.labels > 0).astype(float))  # graded pairs of 1[T] = T × F
    plain = rankboost(binary, weak, rounds=20)
    for (m1, a1, c1), (m2, a2, c2) in zip(focused.history, plain.history, strict=True):
        assert m1 == m2
        assert a1 == pytest.approx(a2, abs=1e-9)
        assert c1 == pytest.approx(c2, abs=1e-9)
    assert plain.model.score(ds.X) == pytest.approx(focused.model.score(ds.X), abs=1e-9)


def test_rankboost_edge_of_chosen_ranker_vanishes_after_update() -> None:
    # For {0,1} weak rankers the exact α sets r(h_t) to 0 under the new distribution.
    ds = _synthetic(3)
    weak = WeakRankers.build(ds.X, "threshold", n_thresholds=4)
    res = rankboost(ds, weak, rounds=3, forbid_repeat=False)
    assert len({m for m, _, _ in res.history[:2]}) == 2


def test_adarank_weights_mix_queries_and_improve_training_measure() -> None:
    ds = _synthetic(4)
    weak = WeakRankers.build(ds.X, "feature")
    res = adarank(ds, weak, rounds=10, at=3)
    assert all(0.0 <= c <= 1.0 for _, _, c in res.history)
    assert all(a > 0 for _, a, _ in res.history)
    # no weak ranker twice in a row
    chosen = [m for m, _, _ in res.history]
    assert all(x != y for x, y in itertools.pairwise(chosen))


def test_boost_model_roundtrip_and_truncate() -> None:
    from ranking.boosting import BoostModel

    ds = _synthetic(5)
    weak = WeakRankers.build(ds.X, "threshold", n_thresholds=3)
    res = focusedboost(ds, weak, rounds=6, beta=0.4, k=3)
    again = BoostModel.from_dict(res.model.to_dict())
    np.testing.assert_allclose(again.score(ds.X), res.model.score(ds.X))
    assert res.model.truncate(2).chosen.size == 2


def test_deterministic() -> None:
    ds = _synthetic(6)
    weak = WeakRankers.build(ds.X, "feature")
    a = focusedboost(ds, weak, rounds=8, beta=0.5, k=3).history
    b = focusedboost(ds, weak, rounds=8, beta=0.5, k=3).history
    assert a == b
