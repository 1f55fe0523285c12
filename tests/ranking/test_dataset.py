"""Query-grouped data set: padding, conversions graded -> total order -> top-k -> κ-labels."""

from __future__ import annotations

import numpy as np
import pytest

from ranking.data.dataset import (
    QueryDataset,
    dataset_from_topk,
    kappa_from_rank,
    normalize_per_query,
    random_total_order,
    topk_from_rank,
)
from ranking.io.topk import kappa_labels


def _toy() -> QueryDataset:
    X = np.arange(14, dtype=float).reshape(7, 2)
    labels = [2, 0, 1, 1, 0, 2, 2]
    qid = ["a", "a", "a", "a", "b", "b", "b"]
    return QueryDataset.from_arrays(X, labels, qid, [f"d{i}" for i in range(7)])


def test_offsets_padding_and_flat_order() -> None:
    ds = _toy()
    assert ds.n_queries == 2 and list(ds.sizes) == [4, 3]
    padded, mask = ds.pad(ds.labels)
    assert padded.shape == (2, 4)
    np.testing.assert_array_equal(mask, [[1, 1, 1, 1], [1, 1, 1, 0]])
    np.testing.assert_array_equal(padded[mask], ds.labels)  # padded[mask] = flat order
    assert list(ds.query_ids) == ["a", "b"]


def test_random_total_order_is_consistent_with_grades_and_seeded() -> None:
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=40).astype(float)
    offsets = np.array([0, 10, 25, 40])
    seen = set()
    for seed in range(20):
        rank = random_total_order(labels, offsets, seed)
        for q in range(3):
            sl = slice(offsets[q], offsets[q + 1])
            r, y = rank[sl], labels[sl]
            assert sorted(r) == list(range(offsets[q + 1] - offsets[q]))
            in_order = y[np.argsort(r)]
            assert np.all(np.diff(in_order) <= 0)
        seen.add(tuple(rank))
        np.testing.assert_array_equal(rank, random_total_order(labels, offsets, seed))
    assert len(seen) > 1  # ties really are shuffled


def test_kappa_labels_from_rank_and_topk_lists() -> None:
    np.testing.assert_array_equal(kappa_from_rank([0, 1, 2, 3, 4], 3), [3, 2, 1, 0, 0])
    ds = _toy().to_topk(k=2, seed=5)
    assert ds.topk == 2
    # κ-labels: k + 1 − pos in the top, 0 elsewhere; grade-2 docs must be the top of each query.
    for q in range(ds.n_queries):
        sl = slice(ds.offsets[q], ds.offsets[q + 1])
        kap = ds.labels[sl]
        assert sorted(kap[kap > 0].tolist(), reverse=True) == [2.0, 1.0]
    top_rest = topk_from_rank(ds, 2)
    assert top_rest[0][0] == [str(d) for d in ds.doc_ids[:4][np.argsort(-ds.labels[:4])][:2]]
    assert {d for d in top_rest[1][0]} <= {"d5", "d6"}
    # Agreement with the evaluator's dict conversion.
    for q, (top, rest) in enumerate(top_rest):
        ref = kappa_labels(top, rest, 2)
        sl = slice(ds.offsets[q], ds.offsets[q + 1])
        assert {str(d): lab for d, lab in zip(ds.doc_ids[sl], ds.labels[sl], strict=True)} == ref


@pytest.mark.parametrize(("n", "k"), [(1, 1), (5, 3), (7, 7), (4, 10)])
def test_kappa_from_rank_is_the_array_form_of_kappa_labels(n: int, k: int) -> None:
    """One κ-label definition: the array form over truth positions equals the dict form over
    document ids (ranking.io.topk.kappa_labels) for any order, also with k above n."""
    rng = np.random.default_rng(n * 100 + k)
    rank = rng.permutation(n)  # document i sits at 0-based truth position rank[i]
    docs = [f"d{i}" for i in range(n)]
    in_order = [docs[i] for i in np.argsort(rank)]
    ref = kappa_labels(in_order[:k], in_order[k:], k)
    got = kappa_from_rank(rank, k)
    assert {d: float(ref[d]) for d in docs} == dict(zip(docs, got.tolist(), strict=True))


def test_topk_truth_does_not_leak_grades_below_k() -> None:
    # With k = 1, F's order in `rank` must be a fresh shuffle, not "grade-1 before grade-0".
    labels = np.array([3.0] + [1.0] * 20 + [0.0] * 20)
    ds = QueryDataset.from_arrays(np.zeros((41, 1)), labels, np.zeros(41, dtype=int))
    positions = [ds.to_topk(1, seed=s).rank[1:21].mean() for s in range(10)]
    assert np.mean(positions) > 12  # grade-1 docs would sit at 1..20 (mean 10.5) if leaked


def test_dataset_from_exported_topk_truth() -> None:
    feats = {"q1": {"x": [1.0, 0.0], "y": [0.5, 0.5], "z": [0.0, 1.0]}}
    ds = dataset_from_topk(feats, {"q1": (["y", "x"], ["z"])}, k=2)
    assert ds.topk == 2
    assert list(ds.doc_ids) == ["y", "x", "z"]
    np.testing.assert_array_equal(ds.labels, [2, 1, 0])
    with pytest.raises(ValueError, match="no feature vector"):
        dataset_from_topk(feats, {"q1": (["w"], ["z"])}, k=2)
    with pytest.raises(ValueError, match="more than k"):
        dataset_from_topk(feats, {"q1": (["x", "y", "z"], [])}, k=2)


def test_subset_concat_and_target_order() -> None:
    ds = _toy().with_total_order(3)
    sub = ds.subset([1])
    assert sub.n_queries == 1 and list(sub.doc_ids) == ["d4", "d5", "d6"]
    back = QueryDataset.concat([ds.subset([0]), sub])
    np.testing.assert_array_equal(back.X, ds.X)
    t = ds.target()
    # the target's order lists columns best first consistent with rank
    first = t.order[0, :4]
    np.testing.assert_array_equal(ds.rank[:4][first], [0, 1, 2, 3])
    with pytest.raises(ValueError, match="same query id"):
        QueryDataset.concat([ds, ds])


def test_bad_input_is_rejected() -> None:
    with pytest.raises(ValueError, match="more than one block"):
        QueryDataset.from_arrays(np.zeros((3, 1)), [0, 0, 0], ["a", "b", "a"])
    with pytest.raises(ValueError, match="row 1"):
        QueryDataset.from_arrays(np.array([[0.0], [np.nan]]), [0, 0], ["a", "a"])
    with pytest.raises(ValueError, match="lower label above"):
        QueryDataset.from_arrays(np.zeros((2, 1)), [0, 1], ["a", "a"], rank=[0, 1])


def test_normalize_per_query() -> None:
    X = np.array([[1.0, 5.0], [3.0, 5.0], [10.0, 0.0], [20.0, 1.0]])
    out = normalize_per_query(X, [0, 2, 4])
    np.testing.assert_allclose(out, [[0, 0], [1, 0], [0, 0], [1, 1]])
