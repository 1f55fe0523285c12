"""Compatibility as a metric (against :mod:`ranking.metrics.rbo` and ir-measures' ``Compat``),
recall, and ir-measures measure names computed with ir-measures' own conventions, checked
against the installed ``ir_measures`` package on random runs with tied scores."""

from __future__ import annotations

import random

import numpy as np
import pytest

from ranking import metrics as M
from ranking.evaluate import evaluate
from ranking.metrics.rbo import compatibility as rbo_compatibility

ir_measures = pytest.importorskip("ir_measures")


def _random_case(seed: int, n_queries: int = 12, ties: bool = True) -> tuple[dict, dict]:
    """qrels (grades 0..3, some queries without a relevant document) and a run, with many
    tied scores, or distinct positive ones."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n_queries):
        qid = str(q + 1)  # numeric: gdeval reads topic numbers
        docs = [f"d{i:03d}" for i in range(rng.randint(3, 40))]
        judged = rng.sample(docs, rng.randint(1, len(docs)))
        top = 0 if q == 0 else 3  # query 1 has no relevant document
        qrels[qid] = {d: rng.randint(0, top) for d in judged}
        ranked = rng.sample(docs, rng.randint(1, len(docs)))
        if ties:
            run[qid] = {d: float(rng.randint(0, 6)) for d in ranked}
        else:
            run[qid] = {d: 1.0 + i + rng.random() / 2 for i, d in enumerate(ranked)}
    return qrels, run


def _ir_measures(measure: str, qrels: dict, run: dict) -> dict[str, float]:
    parsed = ir_measures.parse_measure(measure)
    return {m.query_id: m.value for m in ir_measures.iter_calc([parsed], qrels, run)}


@pytest.mark.parametrize(
    "name",
    [
        "nDCG@10",
        "nDCG",
        "AP",
        "P@10",
        "P(rel=2)@10",
        "RR",
        "R@100",
        "R@5",
        "AP(rel=2)",
        "Compat(p=0.95)",
        "Compat(p=0.8)",
        "Compat(p=0.9,normalize=False)",
    ],
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ir_measures_names_give_ir_measures_values(name: str, seed: int) -> None:
    # ir-measures' compat provider orders an ideal's tied-grade documents by the run's score
    # (unretrieved ones as 0.0, equal scores in qrels order), the papers in the run's favour
    # (docs/metrics.md#compat): they agree when the run's scores are distinct and positive.
    qrels, run = _random_case(seed, ties=not name.startswith("Compat"))
    # whatever the caller's preset, an ir-measures name uses its tool's conventions
    ours = evaluate(run, qrels=qrels, metrics=[name], conventions="paper").per_query[name]
    theirs = _ir_measures(name, qrels, run)
    assert set(theirs) <= set(ours)
    for qid, value in theirs.items():
        assert ours[qid] == pytest.approx(value, abs=1e-6), (qid, name)


def test_err_by_its_ir_measures_name_is_gdeval() -> None:
    qrels, run = _random_case(3)
    try:
        theirs = _ir_measures("ERR@20", qrels, run)
    except Exception as exc:  # gdeval is a Perl script; skip where it cannot run
        pytest.skip(f"ir-measures' gdeval provider is not usable here: {exc}")
    ours = evaluate(run, qrels=qrels, metrics=["ERR@20"]).per_query["ERR@20"]
    for qid, value in theirs.items():
        assert ours[qid] == pytest.approx(value, abs=1e-4), qid


def test_names_parse_with_their_conventions() -> None:
    spec = M.parse_metric_spec("P(rel=2)@10")
    assert (spec.family, spec.at, spec.preset, spec.rel) == ("p", 10, "trec_eval", 2.0)
    assert M.parse_metric_spec("Compat(p=0.8)").p == 0.8
    assert M.parse_metric_spec("compat@p=0.9") == M.MetricSpec("compat", p=0.9)
    assert M.parse_metric_spec("compat").p == 0.95
    assert M.parse_metric("R@100") == ("recall", 100)
    assert M.parse_metric("recall@5") == ("recall", 5)
    # heapjudge's own names stay case-insensitive and take the caller's conventions
    assert M.parse_metric_spec("NDCG@10").preset is None
    assert M.parse_metric_spec("nDCG@10").preset == "trec_eval"
    assert M.parse_metric_spec("ERR@20").preset == "gdeval"
    for bad, message in [
        ("nDCG(dcg=exp-log2)@10", "not supported"),
        ("Compat@10", "no cutoff"),
        ("compat@p=1.5", "persistence"),
        ("compat@10", "persistence"),
        ("P", "needs a cutoff"),
        ("Judged@10", "unknown metric"),
    ]:
        with pytest.raises(ValueError, match=message):
            M.parse_metric_spec(bad)


def test_compat_metric_is_rbo_compatibility_on_padded_arrays() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(1, 15))
        grades = rng.choice([0, 0, 1, 2, 3], size=n).astype(float)
        scores = rng.permutation(n).astype(float)  # no ties: the run order is the sort
        extra = rng.choice([0, 1, 2], size=int(rng.integers(0, 5))).astype(float)
        ideal = np.concatenate([grades, extra])  # judged documents the run did not retrieve
        p = float(rng.choice([0.5, 0.9, 0.95]))
        value = M.compute(f"compat@p={p}", grades, scores, ideal_labels=ideal[None, :])[0]
        docs = [f"r{i}" for i in range(n)]
        judged = dict(zip(docs, grades, strict=True)) | {f"x{i}": g for i, g in enumerate(extra)}
        run = [docs[i] for i in np.argsort(-scores, kind="stable")]
        assert value == pytest.approx(rbo_compatibility(run, judged, p), abs=1e-12)


def test_compat_hand_computed_and_from_topk() -> None:
    # ideal (a, b) with grades 2, 1; the run ranks (b, a): X = (0, 2), p = 0.5
    # S(R, I) = 0 + 0.5 * 2/2 = 0.5; S(I, I) = 1 + 0.5 = 1.5 -> 1/3
    value = M.compute("compat@p=0.5", [1.0, 2.0], [2.0, 1.0])
    assert value[0] == pytest.approx(1 / 3)
    from ranking.io.topk import TopKTruth

    truth = [TopKTruth("q", 2, ("a", "b"), ("c",))]
    report = evaluate({"q": {"b": 3.0, "a": 2.0, "c": 1.0}}, topk=truth, metrics=["compat@p=0.5"])
    # D = 3: S(R, I) = 0 + 0.5 + 0.25 * 2/3; S(I, I) = 1 + 0.5 + 0.25 * 2/3
    expected = (0.5 + 0.25 * 2 / 3) / (1.5 + 0.25 * 2 / 3)
    assert report.metrics["compat@p=0.5"] == pytest.approx(expected)


def test_recall_by_hand() -> None:
    labels = np.array([[1.0, 0.0, 2.0, 0.0]])
    scores = np.array([[4.0, 3.0, 2.0, 1.0]])
    all_judged = np.array([[1.0, 2.0, 1.0, 0.0]])  # three relevant, one not retrieved
    assert M.recall(labels, scores, at=2, ideal_labels=all_judged)[0] == pytest.approx(1 / 3)
    assert M.recall(labels, scores, at=3, ideal_labels=all_judged)[0] == pytest.approx(2 / 3)
    assert M.recall(labels, scores, at=3)[0] == pytest.approx(1.0)  # R from the list
    assert M.recall([[0.0]], [[1.0]], at=1, empty="skip")[0] != M.recall([[0.0]], [[1.0]], at=1)[0]
