"""``heapjudge admin pool`` on small files: the pooled documents with the runs and ranks that
retrieved them, the simulation over qrels (found-relevant per budget, hand-counted), a bad
run file (its line, nothing stored), and a plan judging the pool."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from app.cli import cli

RUN_A = "1 Q0 1 1 3 A\n1 Q0 2 2 2 A\n1 Q0 3 3 1 A\n2 Q0 5 1 3 A\n2 Q0 99 2 2 A\n"
RUN_B = "1 Q0 4 1 3 B\n1 Q0 1 2 2 B\n1 Q0 5 3 1 B\n3 Q0 1 1 1 B\n"
QRELS = "1 0 1 1\n1 0 2 1\n1 0 4 1\n2 0 5 1\n"


def _setup(tmp_path: Path) -> tuple[Any, list[str]]:
    url = f"sqlite:///{tmp_path / 'pools.db'}"
    runner = CliRunner()

    def invoke(*args: str, stdin: str | None = None) -> Any:
        return runner.invoke(cli, [*args, "--database-url", url], input=stdin)

    (tmp_path / "docs.all").write_text("".join(f".I {i}\n.W\ndocument {i}\n" for i in range(1, 9)))
    (tmp_path / "q.qry").write_text("".join(f".I {i}\n.W\nquery {i}\n" for i in range(1, 3)))
    (tmp_path / "A.run").write_text(RUN_A)
    (tmp_path / "B.run").write_text(RUN_B)
    (tmp_path / "qrels").write_text(QRELS)
    made = invoke(
        "admin", "import-smart", "tiny", "--documents", str(tmp_path / "docs.all"),
        "--queries", str(tmp_path / "q.qry"), "--pairing", "all",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    return invoke, ["--runs", str(tmp_path / "A.run"), "--runs", str(tmp_path / "B.run")]


def test_pool_prints_runs_and_ranks_and_plans(tmp_path: Path) -> None:
    invoke, runs = _setup(tmp_path)
    out = invoke("admin", "pool", "tiny", *runs, "--method", "mtf", "--budget", "3")
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert "6 pooled documents, 4 picked for judging" in lines[0]
    assert "skipped 1 queries the collection lacks" in out.output  # query 3
    assert "dropped 1 pooled documents" in out.output  # 99 is no document of query 2
    table = {tuple(line.split()[:2]): line.split()[2:] for line in lines if line[:10].strip()}
    # No judgments yet: MTF takes A (1), B (4), A (2); fused = Σ 1/(60 + rank).
    assert table["1", "1"] == ["1", "0.03252", "A@1", "B@2"]  # 1/61 + 1/62
    assert table["1", "4"] == ["2", "0.01639", "B@1"]
    assert table["1", "2"] == ["3", "0.01613", "A@2"]
    assert table["1", "3"] == ["-", "0.01587", "A@3"]
    assert table["1", "5"] == ["-", "0.01587", "B@3"]
    assert table["2", "5"] == ["1", "0.01639", "A@1"]

    js = invoke("admin", "pool", "tiny", *runs, "--depth", "1", "--json")
    assert js.exit_code == 0, js.output
    pool = json.loads(js.output)
    assert pool["name"] == "depth-1" and pool["runs"] == ["A", "B"]
    assert [(d["query_id"], d["doc_id"], d["hits"]) for d in pool["pool"]] == [
        ("1", "1", [{"run": "A", "rank": 1}]),
        ("1", "4", [{"run": "B", "rank": 1}]),
        ("2", "5", [{"run": "A", "rank": 1}]),
    ]
    for name in ("u1", "u2", "u3", "u4"):
        assert (
            invoke("create-user", name, "--password-stdin", stdin="pool cli pass 1\n").exit_code
            == 0
        )
    plan = invoke(
        "admin", "plan", "tiny", "--assessors", "u1,u2", "--scheme", "balanced",
        "--topk-per-query", "1", "--graded-per-query", "1", "--k", "1",
        "--pool", "runs", "--pool-id", str(pool["id"]), "--create",
    )  # fmt: skip
    assert plan.exit_code == 0, plan.output
    with sqlite3.connect(tmp_path / "pools.db") as con:
        pools = {json.dumps(json.loads(d)) for (d,) in con.execute("SELECT doc_ids FROM task")}
    assert pools == {'["1", "4"]', '["5"]'}


def test_simulation_prints_found_relevant_per_budget(tmp_path: Path) -> None:
    invoke, runs = _setup(tmp_path)
    qrels = str(tmp_path / "qrels")
    args = ("admin", "pool", "tiny", *runs, "--method", "maxmean", "--simulate", "--qrels", qrels)
    out = invoke(*args, "--budgets", "1,2,3", "--json")
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    # Queries 1 and 2 (3 has no qrels); pools {1..5} and {5, 99}: 7 documents, 4 relevant.
    # Budget 1: A's 1 (q1), A's 5 (q2): both relevant. 2: A at 2/3 gives 2 (relevant) and
    # 99 (not). 3: A at 3/4 gives 3 (not); q2 is exhausted.
    assert [(r["judged"], r["relevant_found"]) for r in rows] == [(2, 2), (4, 3), (5, 3)]
    assert {(r["pool_size"], r["relevant_in_pool"]) for r in rows} == {(7, 4)}
    text = invoke(*args)
    assert text.exit_code == 0, text.output
    assert "    100%        7   100.0%    4/4     100.0%" in text.output
    # One budget over the campaign: q1 (earlier query) A: 1 (relevant, A 2/3), 2 (relevant,
    # 3/4), 3 (not; A is exhausted); q1's B (1/2) ties q2's 1/2: q1 first, 4 (relevant).
    over = invoke(*args, "--allocation", "campaign", "--budgets", "1,2,3,4", "--json")
    assert over.exit_code == 0, over.output
    assert [r["relevant_found"] for r in json.loads(over.output)] == [1, 2, 2, 3]
    hedge = [a if a != "maxmean" else "hedge" for a in args]
    over = invoke(*hedge, "--allocation", "campaign", "--budgets", "1,7", "--json")
    assert over.exit_code == 0, over.output
    # Hedge over the campaign: q1 (earlier query) gives its first fused document, 1, relevant.
    assert [r["relevant_found"] for r in json.loads(over.output)] == [1, 4]
    cal = [a if a != "maxmean" else "cal" for a in args]
    refused = invoke(*cal, "--allocation", "campaign")
    assert refused.exit_code != 0 and "needs the documents' feature" in refused.output
    wrong = invoke("admin", "pool", "tiny", *runs, "--budgets", "3")
    assert wrong.exit_code == 2 and "go with --simulate" in wrong.output
    missing = invoke("admin", "pool", "tiny", *runs, "--simulate")
    assert missing.exit_code == 2 and "--simulate needs --qrels" in missing.output


def test_cal_needs_feature_vectors_then_pools(tmp_path: Path) -> None:
    invoke, runs = _setup(tmp_path)
    refused = invoke("admin", "pool", "tiny", *runs, "--method", "cal", "--budget", "3")
    assert refused.exit_code == 1
    assert "feature vector for every pooled document; 6 have none" in refused.output
    with sqlite3.connect(tmp_path / "pools.db") as con:
        assert con.execute("SELECT count(*) FROM pool").fetchone() == (0,)
    computed = invoke("admin", "features", "tiny")
    assert computed.exit_code == 0, computed.output
    out = invoke("admin", "pool", "tiny", *runs, "--method", "cal", "--budget", "3")
    assert out.exit_code == 0, out.output
    assert "6 pooled documents, 4 picked for judging" in out.output.splitlines()[0]


def test_bad_run_file_names_its_line_and_stores_nothing(tmp_path: Path) -> None:
    invoke, runs = _setup(tmp_path)
    bad = tmp_path / "bad.run"
    bad.write_text("1 Q0 1 1 3 X\n1 Q0 2 2 nan X\n")
    out = invoke("admin", "pool", "tiny", *runs, "--runs", str(bad))
    assert out.exit_code == 1
    assert f"{bad}:2: score is NaN" in out.output
    with sqlite3.connect(tmp_path / "pools.db") as con:
        assert con.execute("SELECT count(*) FROM pool").fetchone() == (0,)
        assert con.execute("SELECT count(*) FROM pool_document").fetchone() == (0,)


def test_cal_with_one_budget_over_the_campaign(tmp_path: Path) -> None:
    invoke, runs = _setup(tmp_path)
    assert invoke("admin", "features", "tiny").exit_code == 0
    cal = ("admin", "pool", "tiny", *runs, "--method", "cal")
    out = invoke(*cal, "--budget", "3", "--allocation", "campaign")
    assert out.exit_code == 0, out.output
    first = out.output.splitlines()[0]
    assert "budget 3 over all the queries (allocation campaign)" in first
    assert "6 pooled documents, 3 picked for judging" in first
    js = invoke(*cal, "--budget", "4", "--allocation", "campaign", "--json")
    assert js.exit_code == 0, js.output
    pool = json.loads(js.output)
    assert pool["allocation"] == "campaign" and pool["name"] == "cal-100-b4-campaign"
    picks = sorted(
        (r["query_id"], r["pick"], r["doc_id"]) for r in pool["pool"] if r["pick"] is not None
    )
    # No labels: the seed, query 1's first fused document 1, query 2's 5, then query 1's 4 and
    # 2 (query 2 has no other); the picks are numbered per query.
    assert [(q, d) for q, _, d in picks] == [("1", "1"), ("1", "4"), ("1", "2"), ("2", "5")]
    refused = invoke("admin", "pool", "tiny", *runs, "--method", "mtf", "--budget", "3",
                     "--allocation", "campaign")  # fmt: skip
    assert refused.exit_code == 1 and "for method 'cal', not 'mtf'" in refused.output
    whole = invoke(*cal, "--allocation", "campaign")
    assert whole.exit_code == 1 and "needs a budget" in whole.output
    with sqlite3.connect(tmp_path / "pools.db") as con:
        assert con.execute("SELECT allocation FROM pool").fetchall() == [("campaign",)] * 2
