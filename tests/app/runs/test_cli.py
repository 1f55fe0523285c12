"""``heapjudge admin runs`` (SQLite and Postgres): upload, list, delete; a bad file is refused
with file:line and nothing stored; the leaderboard equals ``heapjudge evaluate``'s and the
agreement equals ``heapjudge compare --against``'s for the same files."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from app.cli import cli
from ranking.io.trec import write_qrels, write_run
from tests.app.runs.support import QUERIES, SKILLS, campaign_grades, campaign_runs


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def setup(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("cli-runs")
    grades = campaign_grades()
    rows = [
        {"query_id": q, "query": f"query {q}", "doc_id": d, "text": d, "grade": g}
        for q in QUERIES
        for d, g in grades[q].items()
    ]
    (folder / "c.ndjson").write_text("\n".join(json.dumps(r) for r in rows))
    res = invoke("import", "camp", folder / "c.ndjson", "--database-url", database_url)
    assert res.exit_code == 0, res.output
    write_qrels(folder / "qrels.txt", grades)
    # a second label set: the grades with every 2 lowered to 1 and every 1 to 0
    lowered = {
        q: {d: max(0, g - 1) if g < 3 else g for d, g in gs.items()} for q, gs in grades.items()
    }
    write_qrels(folder / "lowered.txt", lowered)
    runs_dir = folder / "runs"
    runs_dir.mkdir()
    for name, run in campaign_runs(grades).items():
        write_run(runs_dir / name, run, tag=name)
    return {"url": database_url, "dir": folder, "runs": runs_dir, "lowered": lowered}


def test_upload_list_delete(setup: dict[str, Any]) -> None:
    url, runs_dir = setup["url"], setup["runs"]
    files = [runs_dir / name for name in SKILLS]
    res = invoke("admin", "runs", "upload", "camp", *files, "--database-url", url)
    assert res.exit_code == 0, res.output
    assert "weak: 5 queries, 76 entries (tag weak)" in res.stdout
    res = invoke("admin", "runs", "list", "camp", "--json", "--database-url", url)
    assert [r["name"] for r in json.loads(res.stdout)] == list(SKILLS)
    res = invoke(
        "admin", "runs", "upload", "camp", files[0], "--name", "copy", "--database-url", url
    )
    assert res.exit_code == 0, res.output
    res = invoke("admin", "runs", "delete", "camp", "copy", "--database-url", url)
    assert res.exit_code == 0 and "deleted run copy" in res.stdout
    res = invoke("admin", "runs", "delete", "camp", "copy", "--database-url", url)
    assert res.exit_code == 1 and "no run 'copy'" in res.output


def test_a_bad_file_is_refused_with_its_line_and_nothing_stored(setup: dict[str, Any]) -> None:
    url = setup["url"]
    bad = setup["dir"] / "bad.txt"
    bad.write_text("q1 Q0 d00 1 0.9 t\nq1 Q0 d01 2 0.5 t\nq1 Q0 d02 x 0.4 t\n")
    good = setup["dir"] / "good.txt"
    good.write_text("q1 Q0 d00 1 0.9 t\n")
    res = invoke("admin", "runs", "upload", "camp", good, bad, "--database-url", url)
    assert res.exit_code == 1
    assert "bad.txt:3: rank 'x' is not an integer" in res.output
    assert "no run was stored" in res.output
    res = invoke("admin", "runs", "list", "camp", "--json", "--database-url", url)
    assert "good.txt" not in {r["name"] for r in json.loads(res.stdout)}


def test_leaderboard_and_agreement_equal_evaluate_and_compare(setup: dict[str, Any]) -> None:
    url, folder, runs_dir = setup["url"], setup["dir"], setup["runs"]
    res = invoke(
        "admin",
        "runs",
        "leaderboard",
        "camp",
        "qrels",
        "--metric",
        "AP",
        "--json",
        "--database-url",
        url,
    )
    assert res.exit_code == 0, res.output
    board = json.loads(res.stdout)
    res = invoke(
        "evaluate",
        "--qrels",
        folder / "qrels.txt",
        "--run",
        runs_dir,
        "--metrics",
        "AP",
        "--missing",
        "zero",
        "--json",
    )
    assert res.exit_code == 0, res.output
    expected = {r["run"]: r["metrics"]["AP"] for r in json.loads(res.stdout)["runs"]}
    for row in board["runs"]:
        assert row["mean"] == pytest.approx(expected[row["run"]]["mean"], abs=1e-12)
        assert row["low"] == pytest.approx(expected[row["run"]]["low"], abs=1e-12)
    # compare --against on the files, the stored runs against the imported grades and the
    # lowered ones (attached as grades: the 'qrels' label set of a second collection)
    res = invoke(
        "compare",
        "--qrels",
        folder / "qrels.txt",
        "--runs",
        runs_dir,
        "--metric",
        "ndcg@10",
        "--against",
        folder / "lowered.txt",
        "--json",
    )
    assert res.exit_code == 0, res.output
    from_files = json.loads(res.stdout)["against"]
    lowered_rows = [
        {"query_id": q, "query": q, "doc_id": d, "text": d, "grade": g}
        for q, gs in setup["lowered"].items()
        for d, g in gs.items()
    ]
    (folder / "l.ndjson").write_text("\n".join(json.dumps(r) for r in lowered_rows))
    assert invoke("import", "lowered", folder / "l.ndjson", "--database-url", url).exit_code == 0
    files = [runs_dir / name for name in SKILLS]
    assert (
        invoke("admin", "runs", "upload", "lowered", *files, "--database-url", url).exit_code == 0
    )
    res = invoke(
        "admin",
        "runs",
        "leaderboard",
        "lowered",
        "--metric",
        "ndcg@10",
        "--json",
        "--database-url",
        url,
    )
    means_b = {r["run"]: r["mean"] for r in json.loads(res.stdout)["runs"]}
    assert means_b == pytest.approx(from_files["means_against"])
    # the agreement of one collection's two label sets needs a second label set there: the
    # same-set agreement is perfect, and its text prints the three figures
    res = invoke("admin", "runs", "agreement", "camp", "qrels", "qrels", "--database-url", url)
    assert res.exit_code == 0, res.output
    assert "Kendall's τ = 1.0000, τ_AP = 1.0000, significant swaps: 0" in res.stdout
