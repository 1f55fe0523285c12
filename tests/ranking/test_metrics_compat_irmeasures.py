"""Compatibility as a metric (against :mod:`ranking.metrics.rbo` and ir-measures' ``Compat``),
recall, and ir-measures measure names computed with ir-measures' own conventions, checked
against the installed ``ir_measures`` package on random runs with tied scores."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

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


# --------------------------------------------------------------------------- trec_eval's own
# measures (the trec_eval family, computed by ranking.trec_eval): against ir-measures'
# pytrec_eval provider where it has them. Not IPrec: pytrec_eval's trec_eval 9 truncates the
# recall points that trec_eval 10.0 rounds (docs/trec-eval.md#identical).
TREC_EVAL_NAMES = [
    "Bpref",
    "Bpref(rel=2)",
    "infAP",
    "Rprec",
    "Rprec(rel=2)",
    "Success@1",
    "Success@5",
    "Success(rel=2)@10",
    "SetP",
    "SetR",
    "SetF",
    "SetAP",
    "SetRelP",
    "NumRet",
    "NumRel",
    "NumRelRet",
]


def _unjudged_case(seed: int) -> tuple[dict, dict]:
    """qrels and a run where many retrieved documents are unjudged (bpref and infAP tell
    them from judged non-relevant ones) and scores tie."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(15):
        qid = str(q + 1)
        docs = [f"d{i:03d}" for i in range(rng.randint(5, 60))]
        qrels[qid] = {d: rng.choice([0, 0, 1, 2, 3]) for d in rng.sample(docs, len(docs) // 3)}
        if q == 0:
            qrels[qid] = {d: 0 for d in qrels[qid]}  # no relevant document
        run[qid] = {
            d: float(rng.randint(0, 9)) for d in rng.sample(docs, rng.randint(1, len(docs)))
        }
    return qrels, run


def _assert_like_ir_measures(name: str, qrels: dict, run: dict, **kwargs: Any) -> int:
    """Per query, our value of ``name`` equals ir-measures' (pytrec_eval); returns how many
    values differ from 0 and 1 (so a test can check it is not degenerate)."""
    report = evaluate(run, qrels=qrels, metrics=[name], conventions="paper", **kwargs)
    ours = report.per_query[name]
    theirs = _ir_measures(name, qrels, run)
    assert set(theirs) == set(ours), name
    for qid, value in theirs.items():
        assert ours[qid] == pytest.approx(value, abs=1e-9), (qid, name)
    return sum(1 for v in ours.values() if v not in (0.0, 1.0))


@pytest.mark.parametrize("name", TREC_EVAL_NAMES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_trec_eval_measures_give_ir_measures_values(name: str, seed: int) -> None:
    # whatever the caller's preset ("paper" here), the name fixes trec_eval's conventions
    qrels, run = _unjudged_case(seed)
    _assert_like_ir_measures(name, qrels, run)


def test_trec_eval_measures_on_cranfield(shared_data: Path) -> None:
    """BM25 on Cranfield (depth 100; most retrieved documents unjudged), its qrels read as
    docs/retrieval.md's ``cranfield`` reading: every measure as ir-measures computes it."""
    from labeling.retrieval.bm25 import Bm25Index
    from labeling.retrieval.text import document_text
    from labeling.sources.smart import load_cranfield

    c = load_cranfield(shared_data / "cranfield")
    index = Bm25Index([(d.doc_id, document_text(d.title, d.text)) for d in c.documents])
    run = index.run({t.query_id: t.title for t in c.topics}, depth=100)
    qrels: dict[str, dict[str, int]] = {}
    for entry in c.qrels:  # grades 4 (complete answer) .. 1, code -1 not relevant (0)
        qrels.setdefault(entry.query_id, {})[entry.doc_id] = int(entry.grade)
    run = {q: {h.doc_id: float(h.score) for h in hits} for q, hits in run.items() if q in qrels}
    between = 0
    for name in ["Bpref", "infAP", "Rprec", "Success@1", "Success@10", "SetF", "Bpref(rel=3)"]:
        between += _assert_like_ir_measures(name, qrels, run)
    assert between > 100  # many queries with a value strictly between 0 and 1


def test_trec_eval_measures_on_mq2008(shared_data: Path) -> None:
    """LETOR 4.0 MQ2008 S1, ranked by one feature (BM25 of the whole document, feature 25:
    many ties at 0), the first 20 documents of each query: ir-measures' values."""
    from ranking.evaluate import qrels_from_letor, run_from_letor
    from ranking.io.letor import read_letor

    data = read_letor(shared_data / "letor4-mq2008" / "S1.txt")
    qrels = {q: {d: int(g) for d, g in docs.items()} for q, docs in qrels_from_letor(data).items()}
    full = run_from_letor(data, data.features[:, 24])
    run = {
        q: dict(sorted(docs.items(), key=lambda x: (-x[1], x[0]))[:20]) for q, docs in full.items()
    }
    between = 0
    for name in ["Bpref", "infAP", "Rprec", "Success@1", "Success@5", "SetP", "Rprec(rel=2)"]:
        between += _assert_like_ir_measures(name, qrels, run)
    assert between > 100


def test_trec_eval_measures_by_hand() -> None:
    # grades in rank order: a=1, b=0 (judged), u unjudged, c=2; z=1 judged, not retrieved;
    # R = 3 (a, c, z), N = 1 (b)
    qrels = {"q": {"a": 1, "b": 0, "c": 2, "z": 1}}
    run = {"q": {"a": 4.0, "b": 3.0, "u": 2.0, "c": 1.0}}
    names = ["bpref", "Rprec", "Success@1", "RBP(p=0.5)", "rbp", "unj_5", "SetP", "infAP"]
    got = evaluate(run, qrels=qrels, metrics=names).per_query
    # bpref: a has 0 non-relevant above (1), c has 1 of min(N, R) = 1 above (0); / R
    assert got["bpref"]["q"] == pytest.approx(1 / 3)
    assert got["Rprec"]["q"] == pytest.approx(1 / 3)  # 1 relevant in the top R = 3
    assert got["Success@1"]["q"] == 1.0
    # RBP (Moffat & Zobel 2008) = (1 − p) Σ_i rel_i p^(i−1); trec_eval's gain of grade g is
    # g / max grade: a = 1/2, c = 2/2 at rank 4
    assert got["RBP(p=0.5)"]["q"] == pytest.approx(0.5 * (0.5 + 1.0 * 0.5**3))
    assert got["rbp"]["q"] == pytest.approx(0.1 * (0.5 + 1.0 * 0.9**3))  # trec_eval's p = 0.9
    assert got["unj_5"]["q"] == pytest.approx(1 / 5)
    assert got["SetP"]["q"] == pytest.approx(2 / 4)
    # infAP (Yilmaz & Aslam 2006): a at rank 1 gives 1; c at 0-based j = 3 with r = 1
    # relevant, n = 1 non-relevant and u = 0 pooled-unjudged above it:
    # 1/4 + (3/4)·((1 + 1 + 0)/3)·((1 + ε)/(1 + 1 + 2ε)); divided by R = 3
    eps = 0.00001
    c_term = 1 / 4 + (3 / 4) * (2 / 3) * ((1 + eps) / (2 + 2 * eps))
    assert got["infAP"]["q"] == pytest.approx((1 + c_term) / 3)


def test_trec_eval_measures_in_evaluate_match_the_cli() -> None:
    """The values evaluate reports are trec_eval's -q lines (the same kernels)."""
    from tests.ranking.trec_eval_support import ours

    qrels, run = _unjudged_case(4)
    names = ["Bpref", "infAP", "IPrec@0.3", "11pt_avg", "map_cut_10", "RBP(p=0.7)", "ndcg_rel"]
    report = evaluate(run, qrels=qrels, metrics=names)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        qp, rp = Path(tmp) / "q", Path(tmp) / "r"
        qp.write_text(
            "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items())
        )
        rp.write_text(
            "".join(f"{q} Q0 {d} 0 {s} r\n" for q, docs in run.items() for d, s in docs.items())
        )
        args = ["-q", "-m", "bpref", "-m", "infAP", "-m", "iprec_at_recall.0.3", "-m", "11pt_avg"]
        args += ["-m", "map_cut.10", "-m", "rbp.p=0.7", "-m", "ndcg_rel", str(qp), str(rp)]
        status, out, err = ours(*args)
        # the command reads the files through the column readers (evaluate_columns)
        from typer.testing import CliRunner

        from app.cli import cli

        result = CliRunner().invoke(
            cli, ["evaluate", "--qrels", str(qp), "--run", str(rp), "--metrics", ",".join(names),
                  "--json"],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        from_files = json.loads(result.stdout.splitlines()[0])["metrics"]
    assert status == 0, err
    lines = {(n.strip(), q): float(v) for n, q, v in (x.split("\t") for x in out.splitlines())}
    printed = ["bpref", "infAP", "iprec_at_recall_0.30", "11pt_avg", "map_cut_10", "rbp_p=0.7"]
    value_names = dict(zip(names, [*printed, "ndcg_rel"], strict=True))
    for name, value_name in value_names.items():
        for qid, value in report.per_query[name].items():
            assert f"{value:.4f}" == f"{lines[(value_name, qid)]:.4f}", (name, qid)
        assert f"{report.metrics[name]:.4f}" == f"{lines[(value_name, 'all')]:.4f}", name
        assert from_files[name] == pytest.approx(report.metrics[name], abs=1e-12), name


def test_trec_eval_names_and_refusals() -> None:
    spec = M.parse_metric_spec("Success@5")
    assert (spec.family, spec.trec_eval, spec.value, spec.preset) == (
        "trec_eval",
        "success.5",
        "success_5",
        "trec_eval",
    )
    assert M.parse_metric_spec("RBP").trec_eval == "rbp.p=0.8"  # ir-measures' default p
    assert M.parse_metric_spec("rbp").trec_eval == "rbp"  # trec_eval's (p = 0.9)
    assert M.parse_metric_spec("iprec_at_recall_0.50").trec_eval == "iprec_at_recall.0.50"
    assert M.parse_metric_spec("IPrec@0.5").value == "iprec_at_recall_0.50"
    assert M.parse_metric_spec("Bpref(rel=2)").rel == 2.0
    assert M.parse_metric_spec("success@10") == M.parse_metric_spec("success_10")
    assert M.parse_metric_spec("INFAP").value == "infAP"  # heapjudge's names: any case
    assert M.parse_metric_spec("P_10").family == "p"  # heapjudge's own kernels stay
    for bad, message in [
        ("gm_map", "no per-query value"),
        ("prefs_simp", "preference or judgment-group"),
        ("P_avgjg_5", "preference or judgment-group"),
        ("success", "several values"),
        ("Success", "needs a cutoff"),
        ("Bpref@5", "takes no cutoff"),
        ("IPrec@2", "recall level"),
        ("Bpref(rel=x)", "integer grade"),
        ("RBP(p=2)", "persistence"),
    ]:
        with pytest.raises(ValueError, match=message):
            M.parse_metric_spec(bad)
    with pytest.raises(ValueError, match="integer grades"):
        evaluate({"q": {"a": 1.0}}, qrels={"q": {"a": 1.5}}, metrics=["Bpref"])
    with pytest.raises(ValueError, match="computed from the judgments"):
        M.compute("Bpref", [1.0], [1.0])
