"""A model trained on heapjudge's text features beats BM25 alone on held-out Cranfield queries
(docs/features.md#does-it-help-cranfield).

Every query's candidates are its BM25 top 100 (the ``whole.bm25`` feature, which is the
service's BM25; ties by collection order). A linear ListNet from the built-in trainer learns
from the features of half the queries (normalised per query over the whole collection, LETOR's
QueryLevelNorm) and re-ranks the other half; then the halves swap, so every query is held out
once. Graded qrels (grade = 5 − code, ``-1`` and unjudged 0); NDCG@10, exp gain, over the 100
candidates, for the model's order and for BM25's order of the same candidates.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from labeling.machine.features import FEATURE_NAMES, FeatureExtractor
from labeling.sources.smart import load_cranfield
from ranking.dataset import QueryDataset, normalize_per_query
from ranking.estimators import ListNet, metric_values

DEPTH = 100


def ndcg10(grades: np.ndarray, scores: np.ndarray) -> float:
    """Plain NDCG@10 (gain 2^g − 1, discount log2(rank + 1), stable ties), 0 when no relevant
    candidate: an independent check of the trainer's metric."""
    order = np.argsort(-scores, kind="stable")[:10]
    disc = 1 / np.log2(np.arange(2, 12))
    dcg = float(((2.0 ** grades[order] - 1) * disc[: len(order)]).sum())
    ideal = np.sort(grades)[::-1][:10]
    idcg = float(((2.0**ideal - 1) * disc[: len(ideal)]).sum())
    return dcg / idcg if idcg > 0 else 0.0


@pytest.fixture(scope="module")
def cranfield_rows(shared_data: Path) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    c = load_cranfield(shared_data / "cranfield")
    fx = FeatureExtractor([(d.doc_id, d.title, d.text) for d in c.documents])
    qrels: dict[str, dict[str, int]] = {}
    for e in c.qrels:
        qrels.setdefault(e.query_id, {})[e.doc_id] = e.grade
    j = FEATURE_NAMES.index("whole.bm25")
    rows = {}
    for q, m in fx.extract({t.query_id: t.title for t in c.topics}).items():
        bm25 = m.values[:, j]
        top = np.lexsort((np.arange(len(bm25)), -bm25))[:DEPTH]
        x = normalize_per_query(m.values, np.array([0, len(bm25)]))[top]
        grades = np.array([qrels.get(q, {}).get(m.doc_ids[i], 0) for i in top], dtype=float)
        rows[q] = (x, grades, bm25[top])
    return rows


def dataset(rows: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], qids: list[str]):
    return QueryDataset.from_arrays(
        np.vstack([rows[q][0] for q in qids]),
        np.concatenate([rows[q][1] for q in qids]),
        np.array([q for q in qids for _ in range(len(rows[q][1]))], dtype=object),
    )


def test_listnet_on_text_features_beats_bm25_on_held_out_queries(
    cranfield_rows: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> None:
    qids = list(cranfield_rows)
    assert len(qids) == 225
    halves = [qids[::2], qids[1::2]]
    model_ndcg: list[float] = []
    bm25_ndcg: list[float] = []
    for train, test in ((halves[0], halves[1]), (halves[1], halves[0])):
        model = ListNet(seed=0).fit(dataset(cranfield_rows, train))
        held_out = dataset(cranfield_rows, test)
        scores = model.predict(held_out)
        bm25 = np.concatenate([cranfield_rows[q][2] for q in test])
        ours = metric_values("ndcg@10", held_out, scores)
        base = metric_values("ndcg@10", held_out, bm25)
        # the trainer's metric agrees with the plain formula, query by query
        start = 0
        for i, q in enumerate(test):
            n = len(cranfield_rows[q][1])
            grades = cranfield_rows[q][1]
            assert ours[i] == pytest.approx(ndcg10(grades, scores[start : start + n]))
            assert base[i] == pytest.approx(ndcg10(grades, bm25[start : start + n]))
            start += n
        model_ndcg += ours.tolist()
        bm25_ndcg += base.tolist()
    model_mean, bm25_mean = float(np.mean(model_ndcg)), float(np.mean(bm25_ndcg))
    print(f"Cranfield held-out NDCG@10: ListNet on features {model_mean:.4f}, BM25 {bm25_mean:.4f}")
    assert bm25_mean == pytest.approx(0.398, abs=0.01)  # docs/features.md's figure
    assert model_mean > bm25_mean + 0.01
