"""The guard against circular evaluation (ranking.compare.circular and `heapjudge evaluate`
with labels a machine helped make), on small hand-made files (docs/metrics.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy.stats import kendalltau
from typer.testing import CliRunner

from app.cli import cli
from ranking.compare.circular import human_decided_truth, judge_correlation, topk_provenance
from ranking.io.topk import TopKTruth, write_topk_jsonl
from ranking.io.trec import write_qrels, write_run

MACHINE = {
    "machine_answers": 4,
    "judge": "bm25/k1=0.9/b=0.4/scale=1",
    "human_decided": ["a", "c", "d", "e"],
}
TRUTH = [
    TopKTruth("q1", 3, ("a", "b", "c"), ("d", "e", "f"), MACHINE),
    TopKTruth(
        "q2",
        3,
        ("x", "y", "z"),
        ("w",),
        {"machine_answers": 0, "judge": None, "human_decided": ["x", "y", "z", "w"]},
    ),
]
RUN = {
    "q1": {"b": 6.0, "a": 5.0, "f": 4.0, "c": 3.0, "d": 2.0, "e": 1.0},
    "q2": {"x": 4.0, "w": 3.0, "y": 2.0, "z": 1.0},
}
#: The judge agrees with the run but for one adjacent swap in q1 (d/e): τ 13/15 there, 1 in q2.
JUDGE = {
    "q1": {"b": 60.0, "a": 50.0, "f": 40.0, "c": 30.0, "d": 10.0, "e": 20.0},
    "q2": {"x": 0.9, "w": 0.8, "y": 0.7, "z": 0.6, "outside": 5.0},
}


def test_the_human_decided_part_keeps_peoples_documents_in_order() -> None:
    part = human_decided_truth(TRUTH[0])
    assert (part.top, part.rest, part.k) == (("a", "c"), ("d", "e"), 3)
    assert part.kappa_labels() == {"a": 3, "c": 2, "d": 0, "e": 0}  # b, f: unjudged
    assert human_decided_truth(TRUTH[1]) is TRUTH[1]
    prov = topk_provenance(TRUTH)
    assert (prov.queries, prov.machine_answers, prov.machine_queries) == (2, 4, 1)
    assert prov.judges == ("bm25/k1=0.9/b=0.4/scale=1",) and prov.machine_helped
    assert not topk_provenance([TopKTruth("q", 1, ("a",), ())]).machine_helped


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"machine_answers": -1}, "non-negative integer"),
        ({"machine_answers": True}, "non-negative integer"),
        ({"machine_answers": 2}, 'no "human_decided" list'),
        ({"machine_answers": 2, "human_decided": "a"}, "list of document ids"),
        ({"machine_answers": 2, "human_decided": [], "judge": 3}, '"judge" must be'),
    ],
)
def test_malformed_provenance_names_the_query(extra: dict, message: str) -> None:
    with pytest.raises(ValueError, match=f"query q7: .*{message}"):
        topk_provenance([TopKTruth("q7", 1, ("a",), (), extra)])


def test_judge_correlation_is_kendall_tau_per_query() -> None:
    corr = judge_correlation(RUN, JUDGE)
    assert corr.per_query["q1"] == pytest.approx(13 / 15)
    assert corr.per_query["q1"] == pytest.approx(
        kendalltau([6, 5, 4, 3, 2, 1], [60, 50, 40, 30, 10, 20])[0]
    )
    assert corr.per_query["q2"] == pytest.approx(1.0)
    assert corr.mean_tau == pytest.approx((13 / 15 + 1) / 2) and corr.run_may_be_the_judge
    assert not judge_correlation(RUN, JUDGE, threshold=0.95).run_may_be_the_judge
    # restricted to the truth's documents of q1 without d: no swap left
    only = judge_correlation(RUN, JUDGE, documents={"q1": ["a", "b", "c", "e", "f"]})
    assert only.per_query["q1"] == pytest.approx(1.0)
    reversed_run = {q: {d: -s for d, s in docs.items()} for q, docs in RUN.items()}
    assert judge_correlation(reversed_run, JUDGE).mean_tau == pytest.approx(-(13 / 15 + 1) / 2)
    assert math.isnan(judge_correlation(RUN, {"q3": {"a": 1.0}}).mean_tau)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {name: tmp_path / name for name in ("truth.jsonl", "run.txt", "judge.txt")}
    write_topk_jsonl(out["truth.jsonl"], TRUTH)
    write_run(out["run.txt"], RUN)
    write_run(out["judge.txt"], JUDGE, tag="bm25")
    return out


def run_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["evaluate", *args])
    return result.exit_code, result.stdout, result.stderr


def test_evaluate_reports_the_human_decided_part_and_warns(files: dict[str, Path]) -> None:
    """P@2 by hand: q1's run starts b, a: hybrid 2/2 (both in the top 3), human-decided 1/2
    (b was placed by the machine, so unjudged); q2 starts x, w: 1/2 in both."""
    base = ["--topk", str(files["truth.jsonl"]), "--run", str(files["run.txt"]), "--metrics", "p@2"]
    code, out, err = run_cli(*base, "--json", "--judge-scores", str(files["judge.txt"]))
    assert code == 0, out + err
    data = json.loads(out)
    assert data["metrics"]["p@2"] == pytest.approx(0.75)
    guard = data["machine_guard"]
    assert guard["provenance"]["machine_answers"] == 4
    assert guard["human_decided"]["metrics"]["p@2"] == pytest.approx(0.5)
    assert guard["human_decided"]["per_query"] == {"q1": {"p@2": 0.5}, "q2": {"p@2": 0.5}}
    corr = guard["judge_correlation"]
    assert corr["mean_tau"] == pytest.approx((13 / 15 + 1) / 2) and corr["run_may_be_the_judge"]
    assert "labels a machine helped make: 4 machine answers in 1 of 2 queries" in err
    assert "the run may be the judge" in err
    code, text, _ = run_cli(
        *base, "--judge-scores", str(files["judge.txt"]), "--judge-tau-threshold", "0.95"
    )
    assert code == 0
    assert "WARNING: labels a machine helped make" in text and "may be the judge" not in text
    assert "human-decided part" in text and "p@2     0.5000  (over 2 queries)" in text
    assert "mean Kendall tau 0.933 over 2 queries (threshold 0.95)" in text


def test_evaluate_without_machine_answers_is_unchanged(
    files: dict[str, Path], tmp_path: Path
) -> None:
    human = tmp_path / "human.jsonl"
    write_topk_jsonl(human, [TopKTruth(t.query_id, t.k, t.top, t.rest) for t in TRUTH])
    code, out, err = run_cli(
        "--topk", str(human), "--run", str(files["run.txt"]), "--metrics", "p@2", "--json"
    )
    assert code == 0 and err == ""
    guard = json.loads(out)["machine_guard"]
    assert guard == {
        "provenance": {"queries": 2, "machine_answers": 0, "machine_queries": 0, "judges": []}
    }


def test_evaluate_puts_human_only_qrels_beside(files: dict[str, Path], tmp_path: Path) -> None:
    hybrid, human = tmp_path / "hybrid.qrels", tmp_path / "human.qrels"
    write_qrels(hybrid, {"q1": {"a": 1, "b": 1}})
    write_qrels(human, {"q1": {"a": 1}})
    args = ["--qrels", str(hybrid), "--run", str(files["run.txt"]), "--metrics", "P@2"]
    code, out, err = run_cli(*args, "--human-qrels", str(human), "--json")
    assert code == 0, out + err
    data = json.loads(out)
    assert data["metrics"]["P@2"] == pytest.approx(1.0)
    assert data["machine_guard"]["human_only"]["metrics"]["P@2"] == pytest.approx(0.5)
    code, _, err = run_cli(
        "--topk",
        str(files["truth.jsonl"]),
        "--run",
        str(files["run.txt"]),
        "--human-qrels",
        str(human),
    )
    assert code == 2 and "--human-qrels goes with --qrels" in err
    code, _, err = run_cli(
        *args, "--run", str(files["run.txt"]), "--judge-scores", str(files["judge.txt"])
    )
    assert code == 2 and "one run at a time" in err


def test_a_malformed_provenance_fails_with_the_query(
    tmp_path: Path, files: dict[str, Path]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"query_id": "q1", "k": 1, "top": ["a"], "rest": [], "machine_answers": 3})
        + "\n"
    )
    code, _, err = run_cli("--topk", str(bad), "--run", str(files["run.txt"]), "--metrics", "p@1")
    assert code == 1 and 'query q1: 3 machine answers but no "human_decided" list' in err


def test_several_runs_against_a_machine_assisted_truth_are_warned(
    files: dict[str, Path], tmp_path: Path
) -> None:
    other = tmp_path / "other.txt"
    write_run(other, {q: {d: -s for d, s in docs.items()} for q, docs in RUN.items()})
    args = [
        "--topk",
        str(files["truth.jsonl"]),
        "--run",
        str(files["run.txt"]),
        "--run",
        str(other),
    ]
    code, out, _ = run_cli(*args, "--metrics", "p@2")
    assert code == 0 and "WARNING: labels a machine helped make: 4 machine answers" in out
    assert "score one run at a time for the human-decided part" in out
    code, out, err = run_cli(*args, "--metrics", "p@2", "--json")
    assert code == 0 and "warning: labels a machine helped make" in err
    assert json.loads(out)  # the table alone on stdout
