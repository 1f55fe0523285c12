"""Exports that round-trip: ``heapjudge export`` → ``heapjudge evaluate`` for every format the
evaluator reads, with each label source, on a rotation where every assessor covers only some
queries. The expected figures come from ``ranking.evaluate.evaluate`` over truths built here
from the simulated assessors' own orderings (not from the export code).

Also: the one endpoint and its deprecated aliases give the same bytes, and the registry says
for every format whether (and why not) ``heapjudge evaluate`` reads it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from app.cli import cli as app_cli
from app.exports.service import FORMATS
from labeling.analysis.aggregate import borda
from ranking.evaluate import evaluate
from ranking.io.letor import read_letor
from ranking.io.topk import TopKTruth
from ranking.io.trec import write_run
from tests.app.admin_support import judged_plans, make_collection, oracle_top
from tests.app.conftest import Api

K = 3
DOCS = 7
# Topk: t2 (who orders by the reversed score) judges first, then t1 and t3 (the score's
# order); graded: g2 (grades twice as high, capped) first, then g1. Each covers 2 of 3 queries.
TOPK_PLAN = [("t2", "102"), ("t2", "103"), ("t1", "101"), ("t1", "102"), ("t3", "103")]
TOPK_PLAN += [("t3", "101")]
GRADED_PLAN = [("g2", "102"), ("g2", "103"), ("g1", "101"), ("g1", "102")]
REVERSED = {"t2"}
#: Per query, the first finished task's assessor (the judging order above).
FIRST_TOPK = {"101": "t1", "102": "t2", "103": "t2"}
FIRST_GRADED = {"101": "g1", "102": "g2", "103": "g2"}


def _view(user: str, scores: dict[str, float]) -> dict[str, float]:
    """The latent scores as ``user`` judges them."""
    if user in REVERSED:
        return {d: -s for d, s in scores.items()}
    if user == "g2":
        return {d: 2 * s for d, s in scores.items()}
    return scores


def _grade(user: str, score: float) -> int:
    """The grade judge_task gives: min(4, int(score) // 2) of the user's view."""
    return min(4, int(_view(user, {"d": score})["d"]) // 2)


@pytest.fixture(scope="module")
def study(api: Api, database_url: str) -> dict[str, Any]:
    for name in ("t1", "t2", "t3", "g1", "g2"):
        api.add_user(name)
    cid, scores = make_collection(api, "roundtrip", queries=3, docs=DOCS)
    plans = {"topk": TOPK_PLAN, "graded": GRADED_PLAN}
    by_key = judged_plans(api, cid, scores, plans, k=K, name="rt", view=_view)
    # An imperfect system: ranks by document number, d0 first.
    run = {q: {d: -float(d[1:]) for d in docs} for q, docs in scores.items()}
    return {"cid": cid, "scores": scores, "run": run, "url": database_url, "tasks": by_key}


def _cli(*args: str) -> Any:
    result = CliRunner().invoke(app_cli, list(args), catch_exceptions=False)
    return result


def _export(study: dict[str, Any], path: Path, *args: str) -> Path:
    r = _cli("export", str(study["cid"]), *args, "-o", str(path), "--database-url", study["url"])
    assert r.exit_code == 0, r.output
    return path


def _evaluate(*args: str) -> dict[str, Any]:
    r = _cli("evaluate", *args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout.splitlines()[0])


def _kappa_truth(study: dict[str, Any], who: dict[str, list[str]]) -> list[TopKTruth]:
    """Per query, the top-k of the given assessors' view (Borda over them when several)."""
    truths = []
    for qid, users in who.items():
        scores = study["scores"][qid]
        tops = [oracle_top(_view(u, scores), K) for u in users]
        top = tops[0] if len(tops) == 1 else borda(tops, k=K, universe=list(scores)).top(K)[0]
        truths.append(TopKTruth(qid, K, tuple(top), tuple(d for d in scores if d not in top)))
    return truths


def _qrels_of(truths: list[TopKTruth]) -> dict[str, dict[str, int]]:
    return {t.query_id: t.kappa_labels() for t in truths}


def _grades(study: dict[str, Any], who: dict[str, list[str]]) -> dict[str, dict[str, int]]:
    """Per query, the grades of one assessor, or their mean rounded half up."""
    out = {}
    for qid, users in who.items():
        scores = study["scores"][qid]
        out[qid] = {
            d: int(sum(_grade(u, s) for u in users) / len(users) + 0.5) for d, s in scores.items()
        }
    return out


def _expected(
    study: dict[str, Any], metrics: list[str], conventions: str | None = None, **truth: Any
) -> dict[str, float]:
    return dict(evaluate(study["run"], metrics=metrics, conventions=conventions, **truth).metrics)


TOPK_SOURCES = {
    "first": {q: [u] for q, u in FIRST_TOPK.items()},
    "borda": {
        q: [u for u, qq in TOPK_PLAN if qq == q] for q in ("101", "102", "103")
    },  # every task of the query, in task order
}
GRADE_SOURCES = {
    "first": {q: [u] for q, u in FIRST_GRADED.items()},
    "mean": {q: [u for u, qq in GRADED_PLAN if qq == q] for q in ("101", "102", "103")},
}

#: (format, export options, which truth) for every evaluable format.
CASES = [
    ("qrels", ("--source", "first"), "kappa-first"),
    ("qrels", ("--source", "borda"), "kappa-borda"),
    ("qrels", ("--source", "assessor", "--assessor", "t1"), "kappa-t1"),
    ("qrels", ("--labels", "grades", "--source", "mean"), "grades-mean"),
    ("grades-qrels", (), "grades-first"),
    ("grades-qrels", ("--source", "mean"), "grades-mean"),
    ("topk-jsonl", (), "kappa-first"),
    ("topk-jsonl", ("--source", "borda"), "kappa-borda"),
    ("topk-jsonl", ("--assessor", "t1"), "kappa-t1"),
    ("letor", (), "kappa-first"),
    ("letor", ("--labels", "grades", "--source", "mean"), "grades-mean"),
]


def _truth(study: dict[str, Any], name: str) -> tuple[str, Any]:
    """("qrels" | "topk", the expected truth) for a case."""
    kind, source = name.split("-")
    if kind == "grades":
        return "qrels", _grades(study, GRADE_SOURCES[source])
    if source == "t1":
        truths = _kappa_truth(study, {"101": ["t1"], "102": ["t1"]})
    else:
        truths = _kappa_truth(study, TOPK_SOURCES[source])
    return "topk", truths


@pytest.mark.parametrize(("fmt", "options", "truth"), CASES, ids=lambda v: str(v))
def test_export_then_evaluate(
    study: dict[str, Any], tmp_path: Path, fmt: str, options: tuple[str, ...], truth: str
) -> None:
    exported = _export(study, tmp_path / f"export-{fmt}", "-f", fmt, *options)
    kind, expected_truth = _truth(study, truth)
    if kind == "topk" and fmt != "topk-jsonl":
        expected_truth = _qrels_of(expected_truth)
        kind = "qrels"
    metrics = ["ndcg@5", "err", "map"] if kind == "qrels" else ["kappa-ndcg@3", "kappa-err"]
    # `heapjudge evaluate` picks trec_eval's conventions for a TREC run with qrels, the
    # paper's for a LETOR file or a top-k truth (docs/metrics.md#presets)
    trec = kind == "qrels" and fmt != "letor"
    expected = _expected(study, metrics, "trec_eval" if trec else None, **{kind: expected_truth})
    names = ",".join(metrics)
    if fmt == "letor":
        data = read_letor(exported)
        scores = tmp_path / "scores.txt"
        rows = zip(data.qids.tolist(), data.docids.tolist(), strict=True)
        scores.write_text("".join(f"{study['run'][q][d]!r}\n" for q, d in rows))
        report = _evaluate("--letor", str(exported), "--scores", str(scores), "--metrics", names)
    else:
        run = tmp_path / "run.txt"
        write_run(run, study["run"])
        flag = "--topk" if fmt == "topk-jsonl" else "--qrels"
        report = _evaluate(flag, str(exported), "--run", str(run), "--metrics", names)
    assert report["n_queries"] == len(expected_truth)
    assert report["metrics"] == pytest.approx(expected, abs=1e-12)
    # The figures are not degenerate: the run is imperfect for some truth.
    assert any(0 < v < 1 for v in report["metrics"].values())


def test_every_format_is_an_evaluation_input_or_says_why_not() -> None:
    evaluated = {fmt for fmt, _, _ in CASES}
    for spec in FORMATS.values():
        assert (spec.evaluate is not None) == (spec.name in evaluated), spec.name
        assert spec.evaluate or spec.not_evaluable, spec.name


def test_topk_jsonl_one_line_per_query_and_all_tasks(study: dict[str, Any], tmp_path: Path) -> None:
    """Default: the first finished task per query (the bug: one line per task, which the
    evaluator refused). --all-tasks: one line per task, each naming its assessor, which the
    evaluator refuses as documented (several truths per query)."""
    one = _export(study, tmp_path / "one.jsonl", "-f", "topk-jsonl")
    lines = [json.loads(x) for x in one.read_text().splitlines()]
    tasks = study["tasks"]
    assert [(x["query_id"], x["assessor"], x["task_id"]) for x in lines] == [
        (q, u, tasks[u, q, "topk"]) for q, u in FIRST_TOPK.items()
    ]
    every = _export(study, tmp_path / "all.jsonl", "-f", "topk-jsonl", "--all-tasks")
    rows = [json.loads(x) for x in every.read_text().splitlines()]
    assert sorted((x["assessor"], x["query_id"]) for x in rows) == sorted(TOPK_PLAN)
    for x in rows:
        expected = oracle_top(_view(x["assessor"], study["scores"][x["query_id"]]), K)
        assert x["top"] == expected
    run = tmp_path / "run.txt"
    write_run(run, study["run"])
    r = _cli("evaluate", "--topk", str(every), "--run", str(run))
    assert r.exit_code == 1 and "keep one per query" in r.output
    r = _cli("export", str(study["cid"]), "--all-tasks", "--source", "borda")
    assert r.exit_code == 2 and "--all-tasks is --source all" in r.output


def test_qrels_all_tasks_names_the_task(study: dict[str, Any], tmp_path: Path) -> None:
    path = _export(study, tmp_path / "all.qrels", "-f", "qrels", "--all-tasks")
    lines = [ln.split() for ln in path.read_text().splitlines()]
    assert len(lines) == len(TOPK_PLAN) * DOCS
    ids = {int(it) for _, it, _, _ in lines}
    assert ids == {study["tasks"][u, q, "topk"] for u, q in TOPK_PLAN}


def test_export_lists_its_formats(api: Api, study: dict[str, Any]) -> None:
    """The one export endpoint and the one command list every registered format; neither has
    a deprecated alias left."""
    cid = study["cid"]
    paths = api.client.get("/openapi.json").json()["paths"]
    assert not any(p.endswith("/export-extra") for p in paths)
    assert not paths["/api/v1/collections/{collection_id}/export"]["get"].get("deprecated")
    listed = paths["/api/v1/collections/{collection_id}/export"]["get"]["parameters"]
    fmt = next(p for p in listed if p["name"] == "format")
    assert fmt["schema"]["enum"] == list(FORMATS)
    assert _cli("admin", "export", str(cid), "--database-url", study["url"]).exit_code == 2
    listed_cli = _cli("export", "--help").output
    assert all(name in listed_cli for name in FORMATS)


def test_export_errors_change_nothing(study: dict[str, Any], tmp_path: Path) -> None:
    """A refused export exits 1 with the reason and leaves the output file untouched."""
    out = tmp_path / "keep.txt"
    out.write_text("previous")
    cases = [
        (("-f", "xml"), "unknown export format 'xml'"),
        (("-f", "letor", "--source", "all"), "does not take source 'all'"),
        (("-f", "grades-qrels", "--labels", "kappa"), "carries labels grades"),
        (("--assessor", "nobody"), "no user named 'nobody'"),
    ]
    for args, message in cases:
        r = _cli("export", str(study["cid"]), *args, "-o", str(out), "--database-url", study["url"])
        assert r.exit_code == 1 and message in r.output, r.output
        assert out.read_text() == "previous"
