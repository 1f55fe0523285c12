"""``heapjudge evaluate`` conventions that fit the input (a TREC run with SMART .REL qrels gives
trec_eval's MAP by default, checked with pytrec_eval; a LETOR file keeps the paper's), several
runs in one table with t intervals (checked with scipy), and ``heapjudge compare``: p-values
against scipy and the pure functions, orderings under two label sets, and its errors."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from app.cli import cli
from ranking.compare.correlation import kendall_tau_b, tau_ap
from ranking.compare.significance import holm
from ranking.evaluate import evaluate
from ranking.io.trec import write_run

pytrec_eval = pytest.importorskip("pytrec_eval")


def invoke(*args: str) -> object:
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture()
def campaign(tmp_path: Path) -> dict[str, object]:
    """SMART .REL qrels (every listed pair relevant) for 8 queries, and three runs of depth
    30 over 60 documents: a good one, a middling one and a poor one."""
    rng = random.Random(7)
    relevant = {str(q): rng.sample(range(60), 6) for q in range(1, 9)}
    rel = tmp_path / "COLL.REL"
    rel.write_text(
        "".join(f"{q} {d} 0 0.000000\n" for q, docs in relevant.items() for d in sorted(docs))
    )
    runs: dict[str, dict[str, dict[str, float]]] = {}
    folder = tmp_path / "runs"
    folder.mkdir()
    for name, skill in (("good", 0.8), ("middling", 0.5), ("poor", 0.2)):
        run = {}
        for q, docs in relevant.items():
            weight = {d: rng.random() + (skill if d in docs else 0.0) for d in range(60)}
            top = sorted(weight, key=lambda d: -weight[d])[:30]
            run[q] = {str(d): round(weight[d], 6) for d in top}
        runs[name] = run
        write_run(folder / f"{name}.txt", run)
    qrels = {q: {str(d): 1 for d in docs} for q, docs in relevant.items()}
    return {"rel": rel, "folder": folder, "runs": runs, "qrels": qrels, "dir": tmp_path}


def _pytrec(qrels: dict, run: dict, measure: str) -> dict[str, float]:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {measure})
    return {q: v[measure] for q, v in evaluator.evaluate(run).items()}


def test_smart_rel_and_trec_run_give_trec_evals_map_by_default(campaign: dict) -> None:
    run_file = campaign["folder"] / "good.txt"
    res = invoke(
        "evaluate", "--qrels", campaign["rel"], "--run", run_file, "--metrics", "map", "--json"
    )
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    expected = _pytrec(campaign["qrels"], campaign["runs"]["good"], "map")
    assert obj["metrics"]["map"] == pytest.approx(np.mean(list(expected.values())), abs=1e-6)
    assert obj["preset"] == "trec_eval" and "TREC run" in obj["preset_reason"]
    assert obj["trec_eval_differs"] == {}
    # the paper's preset, asked for, takes R from the list: the poor run, which misses
    # relevant documents, gets a larger MAP than trec_eval's, and a note says so
    poor = campaign["folder"] / "poor.txt"
    res = invoke(
        "evaluate",
        "--qrels",
        campaign["rel"],
        "--run",
        poor,
        "--metrics",
        "map",
        "--preset",
        "paper",
    )
    assert res.exit_code == 0, res.output
    note = next(line for line in res.stdout.splitlines() if line.startswith("note: map"))
    assert "trec_eval would print" in note and "ideal=list vs qrels" in note
    assert "preset chosen because" not in res.stdout


def test_a_letor_file_keeps_the_papers_figures(tmp_path: Path) -> None:
    letor = tmp_path / "l.txt"
    letor.write_text("2 qid:1 1:0.1 #docid = a\n0 qid:1 1:0.2 #docid = b\n1 qid:1 1:0 #docid = c\n")
    scores = tmp_path / "pred.txt"
    scores.write_text("0.1\n0.9\n0.5\n")
    res = invoke("evaluate", "--letor", letor, "--scores", scores, "--metrics", "ndcg@10", "--json")
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert obj["preset"] == "paper" and "LETOR" in obj["preset_reason"]
    # ranking b (0), c (1), a (2); exp gain: DCG = 1/log2(3) + 3/2, ideal 3 + 1/log2(3)
    dcg = 1 / math.log2(3) + 3 / 2
    assert obj["metrics"]["ndcg@10"] == pytest.approx(dcg / (3 + 1 / math.log2(3)))
    # trec_eval's linear gain would print another figure: said in one line
    assert "ndcg@10" in obj["trec_eval_differs"]


def test_several_runs_one_table_with_t_intervals(campaign: dict) -> None:
    args = [
        "evaluate",
        "--qrels",
        campaign["rel"],
        "--run",
        campaign["folder"],
        "--metrics",
        "AP,ndcg@10",
    ]
    res = invoke(*args)
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["run", "AP", "ndcg@10"]
    assert [line.split()[0] for line in lines[1:4]] == ["good.txt", "middling.txt", "poor.txt"]
    assert "Student t" in res.stdout and "preset trec_eval" in res.stdout
    obj = json.loads(invoke(*args, "--json").stdout)
    good = obj["runs"][0]
    single = evaluate(campaign["runs"]["good"], qrels=campaign["qrels"], metrics=["AP"])
    values = np.array(list(single.per_query["AP"].values()))
    low, high = stats.t.interval(0.95, values.size - 1, values.mean(), stats.sem(values))
    assert good["metrics"]["AP"]["mean"] == pytest.approx(values.mean())
    assert good["metrics"]["AP"]["low"] == pytest.approx(low)
    assert good["metrics"]["AP"]["high"] == pytest.approx(high)
    assert obj["interval"] == {"method": "t", "confidence": 0.95}
    boot = json.loads(invoke(*args, "--interval", "bootstrap", "--json").stdout)
    b = boot["runs"][0]["metrics"]["AP"]
    assert b["low"] < b["mean"] < b["high"] and b["low"] != pytest.approx(low)
    # --run repeated is the same table
    files = [campaign["folder"] / f"{n}.txt" for n in ("good", "middling", "poor")]
    repeated = invoke(
        "evaluate",
        "--qrels",
        campaign["rel"],
        "--run",
        files[0],
        "--run",
        files[1],
        "--run",
        files[2],
        "--metrics",
        "AP,ndcg@10",
        "--json",
    )
    assert json.loads(repeated.stdout)["runs"] == obj["runs"]


def test_compare_pairs_against_scipy_and_holm(campaign: dict) -> None:
    res = invoke(
        "compare",
        "--qrels",
        campaign["rel"],
        "--runs",
        campaign["folder"],
        "--metric",
        "AP",
        "--json",
    )
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    values = {
        name: [v for _, v in sorted(_pytrec(campaign["qrels"], run, "map").items())]
        for name, run in (
            ("good", campaign["runs"]["good"]),
            ("middling", campaign["runs"]["middling"]),
            ("poor", campaign["runs"]["poor"]),
        )
    }
    pairs = [("good", "middling"), ("good", "poor"), ("middling", "poor")]
    p = [stats.ttest_rel(values[a], values[b]).pvalue for a, b in pairs]
    adjusted = holm(p)
    assert [x["p_value"] for x in obj["pairs"]] == pytest.approx(p)
    assert [x["p_adjusted"] for x in obj["pairs"]] == pytest.approx(adjusted)
    for got, (a, b), adj in zip(obj["pairs"], pairs, adjusted, strict=True):
        assert got["system_a"] == f"{a}.txt" and got["system_b"] == f"{b}.txt"
        assert got["difference"] == pytest.approx(np.mean(values[a]) - np.mean(values[b]))
        assert got["significant"] == bool(adj <= 0.05)
    text = invoke(
        "compare",
        "--qrels",
        campaign["rel"],
        "--runs",
        campaign["folder"],
        "--metric",
        "AP",
        "--correction",
        "none",
    )
    assert "paired t-test" in text.stdout and "correction none" in text.stdout
    marks = [line for line in text.stdout.splitlines() if line.endswith(" *")]
    assert len(marks) == sum(x < 0.05 for x in p)


def test_compare_randomization_is_exact_on_8_queries(campaign: dict) -> None:
    res = invoke(
        "compare",
        "--qrels",
        campaign["rel"],
        "--runs",
        campaign["folder"],
        "--metric",
        "P@10",
        "--test",
        "randomization",
        "--json",
    )
    obj = json.loads(res.stdout)
    assert obj["exact"] is True and obj["n_resamples"] is None
    good = evaluate(campaign["runs"]["good"], qrels=campaign["qrels"], metrics=["P@10"])
    poor = evaluate(campaign["runs"]["poor"], qrels=campaign["qrels"], metrics=["P@10"])
    d = np.array(list(good.per_query["P@10"].values())) - np.array(
        list(poor.per_query["P@10"].values())
    )
    signs = np.array(np.meshgrid(*[[1, -1]] * d.size)).reshape(d.size, -1).T
    exact = np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-9)
    assert obj["pairs"][1]["p_value"] == pytest.approx(exact)


def test_compare_against_a_second_label_set(campaign: dict) -> None:
    # B: the qrels with two relevant documents of each query dropped
    rel_b = campaign["dir"] / "B.REL"
    kept = {q: sorted(docs)[2:] for q, docs in campaign["qrels"].items()}
    rel_b.write_text("".join(f"{q} {d} 0 0.000000\n" for q, docs in kept.items() for d in docs))
    res = invoke(
        "compare",
        "--qrels",
        campaign["rel"],
        "--runs",
        campaign["folder"],
        "--metric",
        "AP",
        "--against",
        rel_b,
        "--json",
    )
    assert res.exit_code == 0, res.output
    against = json.loads(res.stdout)["against"]
    means_a = {r["run"]: r["mean"] for r in json.loads(res.stdout)["runs"]}
    mean_a = list(means_a.values())
    mean_b = [against["means_against"][n] for n in means_a]
    assert against["kendall_tau"] == pytest.approx(stats.kendalltau(mean_a, mean_b)[0])
    assert against["kendall_tau"] == pytest.approx(kendall_tau_b(mean_a, mean_b))
    assert against["tau_ap"] == pytest.approx(tau_ap(mean_a, mean_b))
    assert against["ordering"][0] == "good.txt"
    assert 0 <= against["significant_swaps"] <= against["significant_in_truth"]
    text = invoke(
        "compare", "--qrels", campaign["rel"], "--runs", campaign["folder"], "--against", rel_b
    )
    assert "Kendall's τ" in text.stdout and "significant swaps" in text.stdout


def test_compare_errors(campaign: dict) -> None:
    bad = campaign["dir"] / "bad.txt"
    bad.write_text("1 Q0 7 1 0.5 t\n1 Q0 8 2 high t\n")
    good = campaign["folder"] / "good.txt"
    res = invoke("compare", "--qrels", campaign["rel"], "--runs", good, "--runs", bad)
    assert res.exit_code == 1 and f"{bad}:2:" in res.output
    res = invoke("evaluate", "--qrels", campaign["rel"], "--run", good, "--run", bad)
    assert res.exit_code == 1 and f"{bad}:2:" in res.output
    for args, message in [
        (["--runs", good], "at least 2 runs"),
        (["--runs", good, "--runs", good], "named 'good.txt'"),
        (["--runs", campaign["folder"], "--test", "z"], "--test must be one of"),
        (["--runs", campaign["folder"], "--correction", "fdr"], "--correction must be"),
        (["--runs", campaign["folder"], "--alpha", "2"], "--alpha must be in (0, 1)"),
        (["--runs", campaign["folder"], "--metric", "ndcg@x"], "bad cutoff"),
    ]:
        res = invoke("compare", "--qrels", campaign["rel"], *args)
        assert res.exit_code in (1, 2) and message in res.output, (args, res.output)
    res = invoke("compare", "--runs", good, "--runs", campaign["folder"] / "poor.txt")
    assert res.exit_code == 2 and "exactly one truth" in res.output


def test_ir_measures_names_on_the_command_line(campaign: dict) -> None:
    run_file = campaign["folder"] / "middling.txt"
    names = "P(rel=1)@10,AP,R@20,nDCG@10"
    res = invoke(
        "evaluate",
        "--qrels",
        campaign["rel"],
        "--run",
        run_file,
        "--metrics",
        names,
        "--preset",
        "paper",
        "--json",
    )
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert list(obj["metrics"]) == names.split(",")
    run = campaign["runs"]["middling"]
    for name, measure in [
        ("AP", "map"),
        ("R@20", "recall_20"),
        ("nDCG@10", "ndcg_cut_10"),
        ("P(rel=1)@10", "P_10"),
    ]:
        expected = np.mean(list(_pytrec(campaign["qrels"], run, measure).values()))
        assert obj["metrics"][name] == pytest.approx(expected, abs=1e-6), name
        assert "ir-measures name" in obj["metric_conventions"][name]
