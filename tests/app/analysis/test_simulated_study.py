"""The simulated user study, end to end through the service layer on a SQLite file, and the
internal consistency of its analysis (at reduced size 5 × 10 × 20)."""

from __future__ import annotations

import json
from collections import defaultdict
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binomtest, chi2_contingency
from sqlalchemy import select
from typer.testing import CliRunner

from app.analysis.service import collection_analysis
from app.analysis.study import StudyConfig, run_simulated_study
from app.cli import cli
from app.kernel.db import Database
from app.kernel.models import Judgment, Query, Task, User
from labeling.analysis.agreement import pair_key

CONFIG = StudyConfig(assessors=5, queries=10, docs=20, k=10, seed=3, undo_rate=0.02)


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import migrations

    path = tmp_path_factory.mktemp("study") / "study.db"
    url = f"sqlite:///{path}"
    migrations.upgrade(url)
    db = Database.from_url(url)
    summary = run_simulated_study(db=db, config=CONFIG)
    reports = {
        mode: collection_analysis(summary.collection_id, db=db, mode=mode)
        for mode in ("direct", "inferred")
    }
    yield {"db": db, "url": url, "summary": summary, "reports": reports}
    db.dispose()


def _log(db: Database) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with db.read() as s:
        tasks = s.execute(
            select(Task.id, User.username, Query.external_id, Task.method, Task.status)
            .join(User, Task.assessor_id == User.id)
            .join(Query, Task.query_id == Query.id)
        ).all()
        rows = s.execute(
            select(Judgment.task_id, Judgment.left_doc, Judgment.right_doc, Judgment.undone)
        ).all()
    return [tuple(t) for t in tasks], [tuple(r) for r in rows]


def test_design_is_the_paper_rotation(study: dict[str, Any]) -> None:
    tasks, _ = _log(study["db"])
    assert study["summary"].tasks == len(tasks) == 2 * 2 * CONFIG.queries
    methods_seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    per_query: dict[tuple[str, str], int] = defaultdict(int)
    for _id, assessor, query, method, status in tasks:
        methods_seen[(assessor, query)].add(method)
        per_query[(query, method)] += 1
        assert status == "done"
    assert all(len(m) == 1 for m in methods_seen.values())  # (b) never both tools on a query
    assert set(per_query.values()) == {2}  # two assessors per query and method
    by_assessor = defaultdict(set)
    for (assessor, _q), methods in methods_seen.items():
        by_assessor[assessor] |= methods
    assert all(m == {"topk", "graded"} for m in by_assessor.values())  # (c)


def test_table_one_is_consistent(study: dict[str, Any]) -> None:
    report = study["reports"]["direct"]
    summary = study["summary"]
    time = report["time"]
    assert time["topk"]["complexity"] == "O(n log k)" and time["graded"]["complexity"] == "O(n)"
    assert time["topk"]["tasks"] == time["graded"]["tasks"] == 2 * CONFIG.queries
    assert time["topk"]["judgments"] + time["graded"]["judgments"] == summary.judgments
    # The simulated study has no re-ask option: every live judgment is a protocol judgment.
    assert time["topk"]["reasks"] == time["graded"]["reasks"] == 0
    assert report["judgments"] == {
        "live": summary.judgments,
        "undone": summary.undone,
        "reasks": 0,
    }
    for row in time.values():
        jpq = row["judgments_per_query"]
        assert jpq["mean"] * row["tasks"] == pytest.approx(row["judgments"])
        tpq, tpj = row["time_per_query"], row["time_per_judgment"]
        assert tpq["mean"] * row["tasks"] == pytest.approx(tpj["mean"] * row["judgments"])
        assert tpj["q1"] <= tpj["median"] <= tpj["q3"]
    assert time["graded"]["judgments_per_query"]["min"] == CONFIG.docs
    assert time["graded"]["judgments_per_query"]["max"] == CONFIG.docs
    # Pairwise judgments are faster, as the simulated assessors (and the paper) have it.
    assert time["topk"]["time_per_judgment"]["mean"] < time["graded"]["time_per_judgment"]["mean"]
    hist = report["time_histogram"]["counts"]
    assert sum(hist["topk"]) == time["topk"]["judgments"]
    assert sum(hist["graded"]) == time["graded"]["judgments"]


def _check_table(t: dict[str, Any]) -> None:
    counts, sym = t["counts"], t["symmetric"]
    assert sum(map(sum, counts)) == t["instances"]
    assert sum(map(sum, sym)) == 2 * t["instances"]
    for i in range(3):
        for j in range(3):
            assert sym[i][j] == counts[i][j] + counts[j][i]
    for row, cond in zip(sym, t["conditional"], strict=True):
        if sum(row):
            assert sum(cond) == pytest.approx(1.0)
            assert cond == pytest.approx([x / sum(row) for x in row])
    assert t["agreed"] == sum(counts[i][i] for i in range(3))
    assert t["agreement"] == pytest.approx(t["agreed"] / t["instances"])
    assert t["instances_no_tie"] == sum(counts[i][j] for i in range(2) for j in range(2))


@pytest.mark.parametrize("mode", ["direct", "inferred"])
def test_agreement_tables_are_consistent(study: dict[str, Any], mode: str) -> None:
    report = study["reports"][mode]
    pairs_per_query = CONFIG.docs * (CONFIG.docs - 1) // 2
    for method in ("topk", "graded"):
        block = report["agreement"][method]
        pooled = block["pooled"]
        _check_table(pooled)
        for table in [*block["per_query"].values(), *block["per_assessor_pair"]]:
            _check_table(table)
        for key in ("counts", "symmetric"):
            for part in ("per_query", "per_assessor_pair"):
                tables = block[part].values() if part == "per_query" else block["per_assessor_pair"]
                summed = [[sum(t[key][i][j] for t in tables) for j in range(3)] for i in range(3)]
                assert summed == pooled[key]
    # Every pair of a graded pool is co-judged by the query's two T2 assessors; the same for
    # the top-k ground truths in inferred mode.
    assert report["agreement"]["graded"]["pooled"]["instances"] == CONFIG.queries * pairs_per_query
    if mode == "inferred":
        assert report["agreement"]["topk"]["pooled"]["instances"] == (
            CONFIG.queries * pairs_per_query
        )


def test_direct_instances_equal_pairs_both_assessors_compared(study: dict[str, Any]) -> None:
    tasks, rows = _log(study["db"])
    info = {t[0]: t for t in tasks}
    compared: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for task_id, left, right, undone in rows:
        _id, assessor, query, method, _status = info[task_id]
        if method == "topk" and not undone:
            compared[(query, assessor)].add(pair_key(left, right))
    by_query: dict[str, list[set[tuple[str, str]]]] = defaultdict(list)
    for (query, _assessor), pairs in compared.items():
        by_query[query].append(pairs)
    expected = sum(len(a & b) for sets in by_query.values() for a, b in combinations(sets, 2))
    pooled = study["reports"]["direct"]["agreement"]["topk"]["pooled"]
    assert pooled["instances"] == expected > 0
    assert pooled["symmetric"][2] == [0, 0, 0]  # ties are off: no ∼ in direct judgments


def test_chi2_matches_the_tables_and_scipy(study: dict[str, Any]) -> None:
    report = study["reports"]["direct"]
    t, g = report["agreement"]["topk"]["pooled"], report["agreement"]["graded"]["pooled"]
    for variant, correction in (("pearson", False), ("yates", True)):
        overall = report["chi2"][variant]["overall"]
        table = [
            [t["agreed"], t["instances"] - t["agreed"]],
            [g["agreed"], g["instances"] - g["agreed"]],
        ]
        assert overall["table"] == table
        stat, p, _dof, _ = chi2_contingency(table, correction=correction)
        assert overall["statistic"] == pytest.approx(stat, rel=1e-9)
        assert overall["p_value"] == pytest.approx(p, rel=1e-6, abs=1e-300)
        no_tie = report["chi2"][variant]["no_tie"]
        assert no_tie["table"] == [
            [t["agreed_no_tie"], t["instances_no_tie"] - t["agreed_no_tie"]],
            [g["agreed_no_tie"], g["instances_no_tie"] - g["agreed_no_tie"]],
        ]


def test_assessor_checks(study: dict[str, Any]) -> None:
    report = study["reports"]["direct"]
    names = {f"assessor{i + 1}" for i in range(CONFIG.assessors)}
    assert {b["assessor"] for b in report["position_bias"]} == names
    live_pairs = report["time"]["topk"]["judgments"]
    assert sum(b["left"] + b["right"] + b["ties"] for b in report["position_bias"]) == live_pairs
    for b in report["position_bias"]:
        # Two-sided exact binomial test of left vs right wins (ties excluded) against 1/2.
        n = b["left"] + b["right"]
        oracle = binomtest(b["left"], n, 0.5).pvalue if n else 1.0
        assert b["p_value"] == pytest.approx(oracle, rel=1e-9), b
    # Pair cache off (the paper's protocol): the heap re-asks pairs, so repeats exist, and
    # every slip that was undone shows up as an inconsistent "undo" repeat.
    sc = report["self_consistency"]
    assert sum(c["live_repeats"] for c in sc) > 0
    assert all(c["undo_consistent"] == 0 for c in sc)
    for t in report["transitivity"]:
        assert 0 <= t["intransitive"] <= t["triples"]
    for overlap in report["topk_overlap"]:
        assert 0 <= overlap["common"] <= CONFIG.k
    assert report["warnings"] == []


def test_cli_analyze(study: dict[str, Any]) -> None:
    runner = CliRunner()
    url = study["url"]
    out = runner.invoke(cli, ["analyze", "simulated-study", "--database-url", url])
    assert out.exit_code == 0, out.output
    for phrase in ("Table 1", "Table 2", "Table 3", "O(n log k)", "The overall agreement is"):
        assert phrase in out.output
    as_json = runner.invoke(
        cli, ["analyze", "simulated-study", "--database-url", url, "--json", "--mode", "inferred"]
    )
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.output)
    assert data["mode"] == "inferred"
    assert data["agreement"] == json.loads(json.dumps(study["reports"]["inferred"]["agreement"]))
    missing = runner.invoke(cli, ["analyze", "no-such-collection", "--database-url", url])
    assert missing.exit_code == 1 and "not found" in missing.output
    bad = runner.invoke(cli, ["analyze", "simulated-study", "--database-url", url, "--mode", "x"])
    assert bad.exit_code == 2
    empty = url.replace("study.db", "empty.db")  # a file that was never migrated
    unmigrated = runner.invoke(cli, ["analyze", "x", "--database-url", empty])
    assert unmigrated.exit_code == 1 and "db upgrade" in unmigrated.output


def test_cli_simulate_study_small(tmp_path: Path) -> None:
    runner = CliRunner()
    target = tmp_path / "tiny.db"
    args = ["simulate-study", "--n-assessors", "4", "--n-queries", "4", "--n", "6", "--k", "3"]
    out = runner.invoke(cli, [*args, "--database", str(target), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output[out.output.index("{") :])
    assert data["simulation"]["tasks"] == 16
    assert data["agreement"]["graded"]["pooled"]["instances"] == 4 * 15
    assert target.exists()
    again = runner.invoke(cli, [*args, "--database", str(target)])
    assert again.exit_code == 2  # refuses to overwrite an existing database


def test_simulated_study_on_cranfield(shared_data: Path, tmp_path: Path) -> None:
    import migrations

    url = f"sqlite:///{tmp_path / 'cran.db'}"
    migrations.upgrade(url)
    db = Database.from_url(url)
    try:
        config = StudyConfig(
            assessors=4, queries=4, docs=8, k=3, seed=5, corpus=str(shared_data / "cranfield")
        )
        summary = run_simulated_study(db=db, config=config)
        report = collection_analysis(summary.collection_id, db=db)
        with db.read() as s:
            queries = sorted(s.scalars(select(Query.external_id)))
    finally:
        db.dispose()
    # Cranfield's qrels number the queries 1..225 in file order; the first four have judgments.
    assert queries == ["1", "2", "3", "4"]
    assert report["agreement"]["graded"]["pooled"]["instances"] == 4 * 28
    assert report["time"]["graded"]["judgments_per_query"]["mean"] == 8


def test_simulated_study_with_reasks_reports_them_apart(tmp_path: Path) -> None:
    """Re-asks stored through the real service layer are found again by replaying each task's
    stored config, counted apart in Table 1, kept out of the direct agreement, and printed."""
    runner = CliRunner()
    args = ["simulate-study", "--n-assessors", "4", "--n-queries", "4", "--n", "12", "--k", "4"]
    out = runner.invoke(cli, [*args, "--reask-fraction", "0.3", "--undo-rate", "0", "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output[out.output.index("{") :])
    assert report["warnings"] == []
    topk, graded = report["time"]["topk"], report["time"]["graded"]
    reasks = report["judgments"]["reasks"]
    assert topk["reasks"] == reasks > 0 and graded["reasks"] == 0
    assert topk["judgments"] + reasks + graded["judgments"] == report["simulation"]["judgments"]
    assert topk["reasks_per_query"]["mean"] * topk["tasks"] == pytest.approx(reasks)
    assert sum(c["reask_repeats"] for c in report["self_consistency"]) == reasks
    text = runner.invoke(cli, [*args, "--reask-fraction", "0.3", "--undo-rate", "0"])
    assert text.exit_code == 0 and "re-asks (not in the figures above)" in text.output
    assert f"re-asks {report['self_consistency'][0]['reask_consistent']}/" in text.output
