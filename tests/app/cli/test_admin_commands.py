"""``heapjudge admin ...``: the same services from the command line."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from app.cli import cli


def test_cli_import_plan_progress_export(shared_data: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    runner = CliRunner()

    def run(*args: str, stdin: str | None = None) -> str:
        result = runner.invoke(cli, [*args, "--database-url", url], input=stdin)
        assert result.exit_code == 0, result.output
        return result.output

    out = run("admin", "import-cranfield", "cran", str(shared_data / "cranfield"))
    assert "1837 (query, document) pairs in the pool (1837 new, 0 already there), 225 new" in out
    for name in ("u1", "u2", "u3", "u4"):
        run("create-user", name, "--password-stdin", stdin="admin cli passphrase\n")
    out = run(
        "admin", "plan", "cran", "--assessors", "u1,u2,u3,u4", "--query-ids", "1,2,3,4", "--k", "3"
    )
    assert "16 tasks; plan is valid" in out and "created" not in out
    out = run(
        "admin", "plan", "cran", "--assessors", "u1,u2,u3,u4", "--query-ids", "1,2,3,4", "--create"
    )
    assert "created 16 tasks" in out
    report = json.loads(run("admin", "progress", "cran", "--json"))
    assert report["totals"]["tasks"]["pending"] == 16
    csv_out = tmp_path / "pairs.csv"
    # Nothing judged yet: the export says so and writes no file (docs/exports.md#empty-exports).
    empty = runner.invoke(
        cli, ["export", "cran", "-f", "pairs-csv", "-o", str(csv_out), "--database-url", url]
    )
    assert empty.exit_code == 1 and "nothing to export: no top-k judgments yet" in empty.output
    assert not csv_out.exists()
    # A corrupted file: the error names the file and line, and the command fails.
    bad = tmp_path / "bad.qry"
    bad.write_text(".I 1\n.W\nfirst query\n.I x\n.W\nsecond\n")
    result = runner.invoke(
        cli,
        [
            "admin",
            "import-smart",
            "other",
            "--documents",
            str(shared_data / "cranfield" / "cran.all.1400"),
            "--queries",
            str(bad),
            "--pairing",
            "all",
            "--database-url",
            url,
        ],
    )
    assert result.exit_code == 1
    assert "bad.qry:4:" in result.output
    missing = runner.invoke(cli, ["admin", "progress", "other", "--database-url", url])
    assert missing.exit_code == 1 and "no collection" in missing.output


def test_cli_plan_strategy_defaults_to_the_options(tmp_path: Path) -> None:
    """Without --strategy, --options' topk.strategy names the judging strategy; a --strategy
    given on the command line that contradicts it is an error, not silently preferred."""
    url = f"sqlite:///{tmp_path / 'strategy.db'}"
    runner = CliRunner()

    def invoke(*args: str, stdin: str | None = None) -> Any:
        return runner.invoke(cli, [*args, "--database-url", url], input=stdin)

    docs = tmp_path / "docs.all"
    docs.write_text("".join(f".I {i}\n.W\ndocument number {i}\n" for i in range(1, 6)))
    queries = tmp_path / "queries.qry"
    queries.write_text("".join(f".I {i}\n.W\nquery number {i}\n" for i in range(1, 5)))
    imported = invoke(
        "admin", "import-smart", "tiny", "--documents", str(docs), "--queries", str(queries),
        "--pairing", "all",
    )  # fmt: skip
    assert imported.exit_code == 0, imported.output
    for name in ("u1", "u2", "u3", "u4"):
        made = invoke("create-user", name, "--password-stdin", stdin="admin cli passphrase\n")
        assert made.exit_code == 0, made.output
    plan = ("admin", "plan", "tiny", "--assessors", "u1,u2,u3,u4", "--query-ids", "1,2,3,4")
    options = json.dumps({"topk": {"strategy": "tournament"}})

    clash = invoke(*plan, "--options", options, "--strategy", "insertion")
    assert clash.exit_code == 1
    assert "'insertion' and options.topk.strategy 'tournament' disagree" in clash.output

    created = invoke(*plan, "--k", "3", "--options", options, "--create")
    assert created.exit_code == 0, created.output
    assert "created 16 tasks" in created.output
    with sqlite3.connect(tmp_path / "strategy.db") as con:
        rows = con.execute("SELECT method, options FROM task").fetchall()
    strategies = {json.loads(opts).get("strategy") for method, opts in rows if method == "topk"}
    assert len(rows) == 16 and strategies == {"tournament"}


def test_cli_plan_machine_gives_the_topk_tasks_a_judge(tmp_path: Path) -> None:
    """``admin plan --machine bm25`` with a +assist strategy: every top-k task records the
    machine and its judge; without +assist, or with a training run that does not exist, it is
    refused naming the option."""
    url = f"sqlite:///{tmp_path / 'machine.db'}"
    runner = CliRunner()

    def invoke(*args: str, stdin: str | None = None) -> Any:
        return runner.invoke(cli, [*args, "--database-url", url], input=stdin)

    docs = tmp_path / "docs.all"
    docs.write_text("".join(f".I {i}\n.W\ndocument number {i}\n" for i in range(1, 6)))
    queries = tmp_path / "queries.qry"
    queries.write_text("".join(f".I {i}\n.W\nquery number {i}\n" for i in range(1, 5)))
    imported = invoke(
        "admin", "import-smart", "tiny", "--documents", str(docs), "--queries", str(queries),
        "--pairing", "all",
    )  # fmt: skip
    assert imported.exit_code == 0, imported.output
    for name in ("u1", "u2", "u3", "u4"):
        made = invoke("create-user", name, "--password-stdin", stdin="admin cli passphrase\n")
        assert made.exit_code == 0, made.output
    plan = ("admin", "plan", "tiny", "--assessors", "u1,u2,u3,u4", "--query-ids", "1,2,3,4")
    plain = invoke(*plan, "--machine", "bm25")
    assert plain.exit_code == 1 and "+assist" in plain.output
    missing = invoke(*plan, "--strategy", "insertion+assist", "--machine", "model:77")
    assert missing.exit_code == 1 and "options.machine.source" in missing.output
    # The preview: the chosen strategy with the machine, a cold start's range (no measured
    # calibration), the expected loss against the stated max loss.
    shown = invoke(
        *plan, "--k", "3", "--strategy", "insertion+assist", "--machine", "bm25",
        "--max-loss", "0.05",
    )  # fmt: skip
    assert shown.exit_code == 0, shown.output
    line = next(x for x in shown.output.splitlines() if "with the machine" in x)
    assert "no measured calibration on this collection yet, 0 of 50 answers" in line
    assert "expected loss" in line and "(max loss 0.05)" in line
    given = invoke(
        *plan, "--k", "3", "--strategy", "insertion+assist", "--machine", "bm25",
        "--machine-accuracy", "0.9",
    )  # fmt: skip
    line = next(x for x in given.output.splitlines() if "with the machine" in x)
    assert "machine accuracy 0.9, given" in line and "(max loss 0.01)" in line
    created = invoke(
        *plan, "--k", "3", "--strategy", "insertion+assist", "--machine", "bm25", "--create"
    )
    assert created.exit_code == 0, created.output
    with sqlite3.connect(tmp_path / "machine.db") as con:
        rows = con.execute("SELECT method, options FROM task").fetchall()
        judges = con.execute("SELECT judge FROM task_machine").fetchall()
    machines = [json.loads(opts).get("machine") for method, opts in rows if method == "topk"]
    assert machines and all(m["source"] == "bm25" for m in machines)
    assert len(judges) == len(machines)
