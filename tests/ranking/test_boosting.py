"""Boosting: step sizes (§7.E) and FocusedBoost's exact reductions, round by round."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ranking.data.dataset import QueryDataset
from ranking.learners.boosting import WeakRankers, adarank, focusedboost, rankboost, step_size


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


def test_step_sizes() -> None:
    for c, alpha in ((0.2, 0.202733), (0.5, 0.549306), (0.9, 1.472219)):
        assert step_size(c) == pytest.approx(alpha, abs=1e-6)
    assert step_size(-0.5) == pytest.approx(-0.549306, abs=1e-6)
    # c = ±1 would give α = ±∞; c is clipped to 1 − ε (ε = 1e-10): α = ½ ln((2 − ε)/ε).
    assert step_size(1.0) == pytest.approx(11.859499, abs=1e-6)
    assert step_size(-1.0) == pytest.approx(-11.859499, abs=1e-6)


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


def test_rankboost_second_round_matches_a_brute_force_reweighting() -> None:
    # α = ½ ln((1 + r)/(1 − r)) is the bound-minimising step (docs/ranking.md#boosting); it
    # zeroes the new edge of h_t only when no pair ties under h_t, so round 2 is checked against
    # a loop instead.
    ds = _synthetic(3)
    weak = WeakRankers.build(ds.X, "threshold", n_thresholds=4)
    res = rankboost(ds, weak, rounds=2, forbid_repeat=False)
    H = weak.values(ds.X)
    diffs = []  # (pairs, M): h(x_u) − h(x_v) for every graded pair u ≻ v
    for q in range(ds.n_queries):
        sl = slice(ds.offsets[q], ds.offsets[q + 1])
        y, hq = ds.labels[sl], H[sl]
        diffs += [hq[u] - hq[v] for u in range(y.size) for v in range(y.size) if y[u] > y[v]]
    Z = np.array(diffs)
    r = Z.mean(axis=0)  # D_1 uniform
    m1 = int(np.argmax(np.abs(r)))
    a1 = 0.5 * math.log((1 + r[m1]) / (1 - r[m1]))
    assert res.history[0] == (m1, pytest.approx(a1, abs=1e-12), pytest.approx(r[m1], abs=1e-12))
    d2 = np.exp(-a1 * Z[:, m1])
    r2 = (d2 / d2.sum()) @ Z
    m2 = int(np.argmax(np.abs(r2)))
    assert res.history[1][0] == m2
    assert res.history[1][2] == pytest.approx(r2[m2], abs=1e-12)


def test_adarank_edges_in_unit_interval_positive_steps_no_repeats() -> None:
    ds = _synthetic(4)
    weak = WeakRankers.build(ds.X, "feature")
    res = adarank(ds, weak, rounds=10, at=3)
    assert all(0.0 <= c <= 1.0 for _, _, c in res.history)
    assert all(a > 0 for _, a, _ in res.history)
    # no weak ranker twice in a row
    chosen = [m for m, _, _ in res.history]
    assert all(x != y for x, y in itertools.pairwise(chosen))


def test_boost_model_roundtrip_and_truncate() -> None:
    from ranking.learners.boosting import BoostModel

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


def _ndcg_on_top(h: np.ndarray, kappa: np.ndarray, at: int) -> float:
    """κ-NDCG@at of the ranking of T's items by h (stable ties), written out by hand."""
    top = [i for i in range(len(kappa)) if kappa[i] > 0]
    ranked = sorted(top, key=lambda i: -h[i])  # Python's sort is stable
    dcg = sum((2.0 ** kappa[d] - 1) / math.log2(2 + j) for j, d in enumerate(ranked[:at]))
    ideal = sorted((kappa[d] for d in top), reverse=True)
    idcg = sum((2.0**g - 1) / math.log2(2 + j) for j, g in enumerate(ideal[:at]))
    return dcg / idcg


def _focusedboost_oracle(
    queries: list[tuple[np.ndarray, np.ndarray]], beta: float, rounds: int, k: int
) -> list[tuple[int, float, float]]:
    """The pseudo-code of docs/ranking.md#focusedrank with loops; |T| < 2 has no list part."""
    n_weak = queries[0][0].shape[1]
    list_q = [i for i, (_, y) in enumerate(queries) if (y > 0).sum() >= 2]
    pairs = [
        (i, u, v)
        for i, (_, y) in enumerate(queries)
        for u in range(len(y))
        for v in range(len(y))
        if y[u] > 0 and y[v] == 0
    ]
    p = {i: 1.0 / len(list_q) for i in list_q}
    d = {pr: 1.0 / len(pairs) for pr in pairs}
    f = [np.zeros(len(y)) for _, y in queries]
    history, previous = [], None
    for _ in range(rounds):
        c = []
        for m in range(n_weak):
            a = sum(p[i] * _ndcg_on_top(queries[i][0][:, m], queries[i][1], k) for i in list_q)
            b = sum(w * (queries[i][0][u, m] - queries[i][0][v, m]) for (i, u, v), w in d.items())
            c.append(beta * a + (1 - beta) * b)
        order = sorted(range(n_weak), key=lambda m: -abs(c[m]))
        m = next(m for m in order if m != previous)
        alpha = 0.5 * math.log((1 + c[m]) / (1 - c[m]))
        history.append((m, alpha, c[m]))
        for i, (h, _) in enumerate(queries):
            f[i] = f[i] + alpha * h[:, m]
        w_list = {i: math.exp(-_ndcg_on_top(f[i], queries[i][1], k)) for i in list_q}
        p = {i: w / sum(w_list.values()) for i, w in w_list.items()}
        w_pair = {(i, u, v): math.exp(-(f[i][u] - f[i][v])) for (i, u, v) in pairs}
        d = {pr: w / sum(w_pair.values()) for pr, w in w_pair.items()}
        previous = m
    return history


def test_focusedboost_needs_a_list_part_at_beta_1() -> None:
    ds = QueryDataset.from_arrays(np.eye(3), [3.0, 0.0, 0.0], [1, 1, 1], topk=3)
    with pytest.raises(ValueError, match=">= 2 items"):
        focusedboost(ds, WeakRankers.build(ds.X, "feature"), rounds=2, beta=1.0, k=3)


def test_focusedboost_mixed_beta_matches_the_reference_pseudocode_with_short_tops() -> None:
    # Some queries have |T| = 1: their list part is 0 (docs/ranking.md#focusedrank), so they must
    # not enter the query distribution P (E of a one-item T is 1 for every weak ranker).
    rng = np.random.default_rng(11)
    k = 3
    queries, rows = [], []
    for qi, (n, size_t) in enumerate([(6, 3), (5, 1), (7, 3), (4, 1), (6, 2)]):
        h = rng.random((n, 4))
        y = np.zeros(n)
        y[rng.permutation(n)[:size_t]] = np.arange(k, k - size_t, -1)
        queries.append((h, y))
        rows += [(qi, x, lab) for x, lab in zip(h, y, strict=True)]
    ds = QueryDataset.from_arrays(
        np.array([r[1] for r in rows]), [r[2] for r in rows], [r[0] for r in rows], topk=k
    )
    weak = WeakRankers.build(ds.X, "feature", scale=False, dedupe=False)
    for beta in (0.3, 0.7, 1.0):
        got = focusedboost(ds, weak, rounds=5, beta=beta, k=k).history
        want = _focusedboost_oracle(queries, beta, rounds=5, k=k)
        for (m1, a1, c1), (m2, a2, c2) in zip(got, want, strict=True):
            assert m1 == m2
            assert a1 == pytest.approx(a2, abs=1e-9)
            assert c1 == pytest.approx(c2, abs=1e-9)
