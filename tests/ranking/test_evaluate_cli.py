"""ranking.evaluate and `heapjudge evaluate` (docs/metrics.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from app.cli import cli
from ranking.evaluate import evaluate
from ranking.io.topk import TopKTruth, write_topk_jsonl
from ranking.io.trec import write_qrels, write_run

QRELS = {"q1": {"d1": 0, "d2": 1, "d3": 0}, "q2": {"d2": 1, "d3": 1}, "q3": {"z": 2}}
RUN = {
    "q1": {"d1": 1.0, "d2": 0.0, "d3": 1.5},
    "q2": {"d1": 1.5, "d2": 0.2, "d3": 0.5},
    "q9": {"d1": 1.0},
}


def test_report_unknown_and_missing_queries() -> None:
    r = evaluate(RUN, qrels=QRELS, metrics=["ndcg", "map"], conventions="trec_eval")
    assert r.queries == ["q1", "q2"]
    assert r.unknown_queries == ["q9"] and r.missing_queries == ["q3"]
    assert r.per_query["ndcg"]["q2"] == pytest.approx(0.6934264036172708, abs=1e-12)
    assert r.metrics["ndcg"] == pytest.approx((0.5 + 0.6934264036172708) / 2, abs=1e-12)
    assert r.conventions["ties"] == "docid" and r.preset == "trec_eval"
    text = r.format_text()
    assert "q9" in text and "conventions:" in text and "ties=docid" in text
    # trec_eval -c: missing queries count as empty rankings
    c = evaluate(RUN, qrels=QRELS, metrics=["ndcg"], conventions="trec_eval", missing="zero")
    assert c.queries == ["q1", "q2", "q3"] and c.per_query["ndcg"]["q3"] == 0.0


@pytest.mark.parametrize("conventions", ["paper", "lightgbm", "gdeval", "letor4"])
def test_missing_zero_scores_unanswered_queries_zero(conventions: str) -> None:
    # A truth query with a relevant document that the run does not answer scores 0 under
    # missing="zero" whatever the conventions; with an ideal taken from the (empty) list the
    # empty-query policy would otherwise give it 1 (lightgbm) or skip it (gdeval).
    qrels = {"1": {"a": 1}, "2": {"b": 2}, "3": {"c": 0}}
    run = {"1": {"a": 1.0}}
    names = ["ndcg@10", "err", "map", "mrr", "p@1"]
    r = evaluate(run, qrels=qrels, metrics=names, conventions=conventions, missing="zero")
    for name in names:
        assert r.per_query[name]["2"] == 0.0, name
    assert r.per_query["mrr"]["1"] == 1.0
    # query 3 has no relevant document: the empty-query policy still decides
    empty = r.per_query["ndcg@10"]["3"]
    assert math.isnan(empty) if conventions == "gdeval" else empty == (conventions == "lightgbm")


def test_ideal_from_qrels_vs_list() -> None:
    qrels = {"q": {"a": 2, "b": 1, "unretrieved": 2}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    from_list = evaluate(run, qrels=qrels, metrics=["ndcg@2"]).metrics["ndcg@2"]
    from_qrels = evaluate(run, qrels=qrels, metrics=["ndcg@2"], conventions="gdeval").metrics[
        "ndcg@2"
    ]
    assert from_list == pytest.approx(1.0)
    assert from_qrels == pytest.approx((3 + 1 / math.log2(3)) / (3 + 3 / math.log2(3)))


def test_err_r_max_is_the_highest_judgment_of_the_query() -> None:
    # docs/metrics.md#err: r_max is "the highest relevance label in this query", a property of
    # the query's judgments, not of what a run retrieved. With the paper's conventions
    # (ideal from the list) a run that omits the grade-2 document must still use r_max = 2:
    # R = (2^1 - 1)/4 for b and c, ERR = 1/4 + (3/4)(1/4)/2 = 11/32. Taking r_max from the
    # list (1) would give R = 1/2 and ERR = 5/8, more than the run [b, a, c] that does
    # retrieve the best document (0.546875): dropping it must not pay.
    qrels = {"q": {"a": 2, "b": 1, "c": 1}}
    omits = evaluate({"q": {"b": 2.0, "c": 1.0}}, qrels=qrels, metrics=["err"])
    assert omits.metrics["err"] == pytest.approx(11 / 32, abs=1e-12)
    full = evaluate({"q": {"b": 3.0, "a": 2.0, "c": 1.0}}, qrels=qrels, metrics=["err"])
    assert full.metrics["err"] == pytest.approx(
        1 / 4 + (3 / 4) * (3 / 4) / 2 + (3 / 4) * (1 / 4) * (1 / 4) / 3, abs=1e-12
    )
    assert full.metrics["err"] > omits.metrics["err"]


def test_gdeval_skips_queries_without_positive_judgment() -> None:
    qrels = {"1": {"a": 1}, "2": {"b": 0}}
    run = {"1": {"a": 1.0}, "2": {"b": 1.0}}
    r = evaluate(run, qrels=qrels, metrics=["ndcg@20", "err@20"], conventions="gdeval")
    assert r.counted == {"ndcg@20": 1, "err@20": 1}
    assert math.isnan(r.per_query["ndcg@20"]["2"])
    assert r.metrics["err@20"] == pytest.approx(1 / 16)
    assert r.to_dict()["per_query"]["2"]["ndcg@20"] is None


def test_topk_truth_and_kappa_k_per_query() -> None:
    truths = [
        TopKTruth("a", 3, ("d1", "d2", "d3"), ("d4", "d5")),
        TopKTruth("b", 10, tuple(f"t{i}" for i in range(10)), tuple(f"f{i}" for i in range(40))),
    ]
    run = {
        "a": {"d2": 5, "d1": 4, "d4": 3, "d3": 2, "d5": 1},
        "b": {f"t{i}": 100.0 - i for i in range(10)} | {f"f{i}": -float(i) for i in range(40)},
    }
    r = evaluate(run, topk=truths, metrics=["kappa-ndcg@2", "kappa-err"])
    assert r.per_query["kappa-ndcg@2"]["a"] == pytest.approx(0.833991, abs=1e-6)
    assert r.per_query["kappa-err"]["a"] == pytest.approx(1333 / 2048, abs=1e-12)
    assert r.per_query["kappa-err"]["b"] == pytest.approx(0.9993255681, abs=1e-10)
    # a run that omits the true #1 still uses N^κ of the whole truth
    partial = evaluate({"a": {"d2": 2.0, "d3": 1.0}}, topk=truths[:1], metrics=["kappa-ndcg@2"])
    assert partial.metrics["kappa-ndcg@2"] == pytest.approx(
        (3 + 1 / math.log2(3)) / (7 + 3 / math.log2(3))
    )
    with pytest.raises(ValueError, match="top-k ground truth"):
        evaluate(RUN, qrels=QRELS, metrics=["kappa-err"])


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    write_qrels(tmp_path / "qrels.txt", QRELS)
    write_run(tmp_path / "run.txt", RUN)
    write_topk_jsonl(
        tmp_path / "truth.jsonl",
        [TopKTruth("q1", 2, ("d2", "d3"), ("d1",), {"assessor": "ann"})],
    )
    return {
        "qrels": tmp_path / "qrels.txt",
        "run": tmp_path / "run.txt",
        "topk": tmp_path / "truth.jsonl",
        "dir": tmp_path,
    }


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["evaluate", *args])


def test_cli_json_metric_names_exactly_as_given(files: dict[str, Path]) -> None:
    names = "ndcg@5,NDCG@10,err,map,P@2,mrr"
    res = invoke(
        "--qrels",
        str(files["qrels"]),
        "--run",
        str(files["run"]),
        "--metrics",
        names,
        "--preset",
        "trec_eval",
        "--json",
    )
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert list(obj["metrics"]) == names.split(",")
    assert obj["metrics"]["map"] == pytest.approx((1 / 3 + 7 / 12) / 2)
    assert obj["unknown_queries"] == ["q9"]
    assert obj["conventions"]["gain"] == "linear"
    assert set(obj["per_query"]) == {"q1", "q2"}


def test_cli_topk_and_overrides(files: dict[str, Path]) -> None:
    # q1: truth T = (d2, d3), F = {d1}, k = 2 -> κ-labels d2 = 2, d3 = 1, d1 = 0. The run ranks
    # (d3, d1, d2): labels [1, 0, 2].
    args = ["--topk", str(files["topk"]), "--run", str(files["run"])]
    args += ["--metrics", "kappa-ndcg@2,kappa-err", "--kappa-gain", "linear"]
    res = invoke(*args, "--per-query")
    assert res.exit_code == 0, res.output
    assert "kappa_gain=linear" in res.stdout and "q1" in res.stdout
    assert "modified" in res.stdout
    obj = json.loads(invoke(*args, "--json").stdout)
    # linear gain: DCG@2 = 1, N^κ_2 = 2 + 1/log2(3)
    assert obj["metrics"]["kappa-ndcg@2"] == pytest.approx(1 / (2 + 1 / math.log2(3)), abs=1e-12)
    # R = (2^y - 1)/2^k with k = 2: 1/4, 0, 3/4 -> 1/4 + (3/4)(3/4)/3
    assert obj["metrics"]["kappa-err"] == pytest.approx(0.4375, abs=1e-12)
    assert obj["unknown_queries"] == ["q2", "q9"]
    assert obj["conventions"]["kappa_gain"] == "linear" and obj["preset"] == "paper (modified)"


def test_cli_score_precision(files: dict[str, Path]) -> None:
    # scores equal in single precision tie under trec_eval, then docno descending puts b first
    write_qrels(files["dir"] / "q.txt", {"q": {"a": 0, "b": 1}})
    write_run(files["dir"] / "r.txt", {"q": {"a": 0.5 + 1e-9, "b": 0.5}})
    args = ["--qrels", str(files["dir"] / "q.txt"), "--run", str(files["dir"] / "r.txt")]
    args += ["--metrics", "ndcg", "--preset", "trec_eval", "--json"]
    single = json.loads(invoke(*args).stdout)
    assert single["metrics"]["ndcg"] == pytest.approx(1.0, abs=1e-12)
    assert single["conventions"]["score_precision"] == "single"
    double = json.loads(invoke(*args, "--score-precision", "double").stdout)
    assert double["metrics"]["ndcg"] == pytest.approx(1 / math.log2(3), abs=1e-12)
    bad = invoke(*args, "--score-precision", "half")
    assert bad.exit_code == 2 and "score_precision must be one of" in bad.output


def test_cli_letor_with_scores(files: dict[str, Path]) -> None:
    letor = files["dir"] / "l.txt"
    letor.write_text(
        "2 qid:1 1:0.1 #docid = a\n0 qid:1 1:0.2 #docid = b\n1 qid:2 1:0.3 #docid = c\n"
    )
    scores = files["dir"] / "pred.txt"
    scores.write_text("0.9\n0.1\n0.5\n")
    res = invoke("--letor", str(letor), "--scores", str(scores), "--metrics", "ndcg@10", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["metrics"]["ndcg@10"] == pytest.approx(1.0)
    # scores in the wrong order: query 1 ranks b (0) above a (2)
    scores.write_text("0.1\n0.9\n0.5\n")
    res = invoke("--letor", str(letor), "--scores", str(scores), "--metrics", "ndcg@10", "--json")
    # DCG = (2^2 - 1)/log2(3) (a at rank 2), ideal 3: NDCG = 1/log2(3)
    assert json.loads(res.stdout)["per_query"]["1"]["ndcg@10"] == pytest.approx(1 / math.log2(3))
    scores.write_text("0.1\n0.9\n")
    res = invoke("--letor", str(letor), "--scores", str(scores))
    assert res.exit_code == 1 and "2 scores for 3 rows" in res.output
    scores.write_text("0.1\n\n0.9 x\n")
    res = invoke("--letor", str(letor), "--scores", str(scores))
    assert res.exit_code == 1 and f"{scores}:3: score" in res.output
    scores.write_bytes(b"0.1\n\xff\n")
    res = invoke("--letor", str(letor), "--scores", str(scores))
    assert res.exit_code == 1 and "not UTF-8" in res.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--metrics", "ndcg@x"], "bad cutoff"),
        (["--metrics", "kappa-err"], "top-k ground truth"),
        (["--preset", "nope"], "unknown preset"),
        (["--ties", "random"], "ties must be one of"),
        (["--empty", "2"], "--empty must be"),
    ],
)
def test_cli_errors(files: dict[str, Path], args: list[str], message: str) -> None:
    res = invoke("--qrels", str(files["qrels"]), "--run", str(files["run"]), *args)
    assert res.exit_code == 2
    assert message in res.output


def test_cli_bad_file_line(files: dict[str, Path]) -> None:
    bad = files["dir"] / "bad_run.txt"
    bad.write_text("q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 oops t\n")
    res = invoke("--qrels", str(files["qrels"]), "--run", str(bad))
    assert res.exit_code == 1 and f"{bad}:2:" in res.output
