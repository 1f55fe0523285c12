"""What a training run compares its model with (docs/training.md#baselines): BM25 and LightGBM
lambdarank on the run's own folds and truth, each with the paired t-test of the ranking core
(:func:`ranking.estimators.experiments.paired_test`) of the model against it, and a sentence
that says which is better and whether significantly.

* **BM25**: on a collection with texts, the service's BM25 over the collection
  (:func:`app.retrieval.service.collection_index`, k1 = 1.2, b = 0.75), each query's documents
  ranked as :meth:`labeling.retrieval.bm25.Bm25Index.order` ranks them (score descending, ties
  by document id descending; the scores measured are the ranks reversed, so the metrics see
  exactly that order). A collection without texts has no BM25 of its own; when its vectors
  are LETOR 4.0's (46 columns, queries from the S1..S5 partition files) column 25 is "BM25 of
  the whole document" (T. Qin and T.-Y. Liu, "Introducing LETOR 4.0 datasets", 2013) and is
  used, ties broken by document id descending as well; otherwise the row says BM25 is not
  available and why.
* **LightGBM** lambdarank (:class:`ranking.estimators.lightgbm.LightGBMRanker`, the ``bench``
  extra), fitted per fold like the model (trees early-stopped on the fold's validation part),
  on one thread; when it is not installed the row says so.

The ranking core is imported inside the functions: it loads in the worker only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from app.kernel.db import Database
from app.retrieval import repository as retrieval_repository
from app.retrieval import service as retrieval
from app.training import repository
from labeling.retrieval.bm25 import Bm25Params

ALPHA = 0.05
#: LETOR 4.0's feature list: 21-25 BM25 of body, anchor, title, URL and the whole document.
LETOR4_WIDTH = 46
LETOR4_BM25_COLUMN = 25  # 1-based, as the LETOR files number them
NAMES = {"bm25": "BM25", "lightgbm": "LightGBM lambdarank"}


def bm25_scorer(
    db: Database, collection_id: int, data: Any, *, scheme: str
) -> tuple[Callable[[Any], np.ndarray] | None, str]:
    """A scorer of BM25 for the rows of any part of ``data`` (the run's whole data set), and
    where its scores come from; ``(None, reason)`` when the collection has none (module
    docstring)."""
    with db.read() as s:
        texts = repository.texts_present(s, collection_id)
        if texts:
            params = Bm25Params()
            index = retrieval.collection_index(s, collection_id, params)
            queries = retrieval_repository.query_texts(s, collection_id)
    width = int(data.X.shape[1])
    if texts:
        score: dict[tuple[str, str], float] = {}
        for a, b in zip(data.offsets[:-1], data.offsets[1:], strict=True):
            qid = str(data.qid[a])
            order = index.order(queries.get(qid, ""), [str(d) for d in data.doc_ids[a:b]])
            n = len(order)
            score.update({(qid, d): float(n - i) for i, d in enumerate(order)})

        def by_text(part: Any) -> np.ndarray:
            return np.array(
                [score[(str(q), str(d))] for q, d in zip(part.qid, part.doc_ids, strict=True)]
            )

        return by_text, (
            f"the collection's BM25 over its texts (k1 = {params.k1:g}, b = {params.b:g}), "
            "each query's documents in BM25's order (ties by document id descending)"
        )
    if scheme == "letor" and width == LETOR4_WIDTH:
        column = LETOR4_BM25_COLUMN - 1

        def by_column(part: Any) -> np.ndarray:
            return _ranked(part, np.asarray(part.X[:, column], dtype=np.float64))

        return by_column, (
            f"LETOR 4.0 feature {LETOR4_BM25_COLUMN} (BM25 of the whole document; the "
            "collection has no texts), ties by document id descending"
        )
    return None, (
        "not available: the collection has no texts to score with BM25, and its "
        f"{width}-column feature vectors have no known BM25 column (LETOR 4.0's feature "
        f"{LETOR4_BM25_COLUMN} is used for 46-column vectors from S1..S5)"
    )


def _ranked(part: Any, values: np.ndarray) -> np.ndarray:
    """Per query of ``part``: ``values`` turned into reversed ranks (n for the first, 1 for
    the last) with ties broken by document id descending, trec_eval's rule and BM25's
    (:meth:`labeling.retrieval.bm25.Bm25Index.order`): the file order of LETOR rows, which
    may follow the grades, then never decides a tie."""
    out = np.empty(len(values))
    for a, b in zip(part.offsets[:-1], part.offsets[1:], strict=True):
        by_id = sorted(range(a, b), key=lambda i: str(part.doc_ids[i]), reverse=True)
        order = sorted(by_id, key=lambda i: -values[i])  # stable: ties keep id descending
        out[order] = np.arange(b - a, 0, -1, dtype=np.float64)
    return out


def _pooled(per_fold: Sequence[Mapping[str, np.ndarray]], measure: str) -> np.ndarray:
    return np.concatenate([np.asarray(f[measure], dtype=np.float64) for f in per_fold])


def _row_values(
    name: str,
    per_fold: Sequence[Mapping[str, np.ndarray]],
    measures: Sequence[str],
    headline: str,
    query_ids: Sequence[Sequence[str]],
) -> dict[str, Any]:
    fold_test = [{m: float(np.mean(f[m])) for m in measures} for f in per_fold]
    per_query = {
        str(q): float(v)
        for ids, f in zip(query_ids, per_fold, strict=True)
        for q, v in zip(ids, f[headline], strict=True)
    }
    return {
        "name": name,
        "label": NAMES.get(name, name),
        "available": True,
        "fold_test": fold_test,
        "mean_test": {m: float(np.mean([f[m] for f in fold_test])) for m in measures},
        "per_query": per_query,
    }


def verdict(model: str, baseline: str, cell: Mapping[str, Any], measure: str, n: int) -> str:
    """The plain sentence of one comparison cell: which is better on ``measure`` (by the mean
    over the ``n`` pooled test queries) and whether significantly at :data:`ALPHA`."""
    a, b, p = cell["model_mean"], cell["baseline_mean"], cell["p"]
    if a == b:
        return (
            f"{model} and {baseline} score the same on {measure} over the {n} test queries "
            f"({a:.4f})."
        )
    better, worse = (model, baseline) if a > b else (baseline, model)
    hi, lo = max(a, b), min(a, b)
    if p is None or (isinstance(p, float) and math.isnan(p)):
        how = "no test possible (fewer than two test queries)"
    elif p < ALPHA:
        how = f"significantly (paired t-test over the test queries, p = {p:.3g} < {ALPHA:g})"
    else:
        how = f"not significantly (paired t-test over the test queries, p = {p:.3g} ≥ {ALPHA:g})"
    return (
        f"{better} is better than {worse} on {measure} ({hi:.4f} vs {lo:.4f}, mean over {n} "
        f"test queries), {how}."
    )


def comparison(
    *,
    model: str,
    measures: Sequence[str],
    model_values: Sequence[Mapping[str, np.ndarray]],
    baselines: Sequence[tuple[str, Sequence[Mapping[str, np.ndarray]] | None, str]],
    query_ids: Sequence[Sequence[str]],
) -> dict[str, Any]:
    """The result table: the model's cross-validation row and every baseline's on the same
    folds (``(name, per-fold per-query values or None, source or reason)``), each baseline
    with the paired test of the model against it per measure and its sentence on the
    headline measure (NDCG@10, or κ-NDCG@10 for top-k truth). ``query_ids`` are every fold's
    test queries in order: each row keeps its headline value per test query
    (``per_query``), so any pair of rows can be tested again."""
    from ranking.estimators.experiments import COLUMN_NAMES, paired_test

    headline = measures[1] if len(measures) > 1 else measures[0]
    n = int(sum(len(f[measures[0]]) for f in model_values))
    rows = [
        {
            **_row_values(model, model_values, measures, headline, query_ids),
            "role": "model",
            "label": model,
        }
    ]
    for name, values, source in baselines:
        label = NAMES.get(name, name)
        if values is None:
            rows.append(
                {
                    "name": name,
                    "label": label,
                    "role": "baseline",
                    "available": False,
                    "reason": source,
                }
            )
            continue
        row = {
            **_row_values(name, values, measures, headline, query_ids),
            "role": "baseline",
            "source": source,
        }
        tests = {}
        for m in measures:
            x, ref = _pooled(model_values, m), _pooled(values, m)
            p, mark = paired_test(x, ref, ALPHA)
            tests[m] = {
                "p": None if math.isnan(p) else p,
                "model_mean": float(x.mean()),
                "baseline_mean": float(ref.mean()),
                "mark": mark,
                "significant": bool(mark),
                "better": "model"
                if x.mean() > ref.mean()
                else "baseline"
                if x.mean() < ref.mean()
                else "same",
            }
        row["vs_model"] = tests
        row["verdict"] = verdict(model, label, tests[headline], COLUMN_NAMES[headline], n)
        rows.append(row)
    return {
        "headline": headline,
        "test_queries": n,
        "alpha": ALPHA,
        "test": "two-sided paired t-test of the model against the baseline, per test query, "
        "all folds pooled (ranking.estimators.experiments.paired_test, the test of heapjudge "
        "cv)",
        "note": "the model's row is its fold models' cross-validation; the kept model is the "
        "refit on all queries (metrics.kept) and has no held-out figure of its own",
        "rows": rows,
    }
