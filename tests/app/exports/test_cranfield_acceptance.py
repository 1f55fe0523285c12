"""Acceptance on Cranfield with heapjudge commands and REST only: ``admin import-smart`` →
``admin bm25`` (its figures against the original qrels) → ``admin plan`` with BM25 pools of 30,
the BM25 prior and the tournament strategy → every task judged over the REST judging loop of a
real ``heapjudge serve`` by simulated assessors → ``heapjudge export`` in every registered
format → ``heapjudge evaluate`` on every export that is an evaluation input.

The expected figures are pytrec_eval's over qrels built here from the simulated assessors'
truth (the Cranfield grades, ties broken by document number), never from heapjudge's own code.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from app.cli import cli
from app.exports.service import FORMATS
from tests.conftest import oracle
from tests.e2e.web_support import heapjudge_serve

QUERIES = ("1", "2", "3", "4")
K = 10
POOL = 30
ASSESSORS = ("alice", "bob")
PASSWORD = "a long password"


def _grades(cranqrel: Path) -> dict[str, dict[str, int]]:
    """Cranfield codes read as in the data README: 1..4 → grades 4..1, −1 → 0."""
    out: dict[str, dict[str, int]] = {}
    for line in cranqrel.read_text().splitlines():
        if line.strip():
            qid, doc, code = line.split()
            out.setdefault(qid, {})[doc] = 0 if int(code) == -1 else 5 - int(code)
    return out


def _read_run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    return run


def _top_of_run(run: dict[str, float], n: int) -> list[str]:
    """trec_eval's order: score descending, ties by document id descending."""
    return sorted(run, key=lambda d: (run[d], d), reverse=True)[:n]


class Assessor:
    """A user's client: log in, list the own tasks, answer each until done. It answers from
    the Cranfield grades (unlisted documents: 0) and breaks ties by the lower document number,
    so its answers follow one total order and the protocol must return its top-k exactly."""

    def __init__(self, base: str, name: str, grades: dict[str, dict[str, int]]) -> None:
        r = httpx.post(f"{base}/api/v1/auth/token", data={"username": name, "password": PASSWORD})
        assert r.status_code == 200, r.text
        self.client = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {r.json()['access_token']}"}
        )
        self.grades = grades
        self.answered = 0

    def key(self, qid: str, doc: str) -> tuple[int, int]:
        return (-self.grades.get(qid, {}).get(doc, 0), int(doc))

    def judge_all(self) -> list[dict[str, Any]]:
        tasks = self.client.get("/api/v1/tasks").json()
        for task in tasks:
            self.judge(task["id"], task["query_id"])
        return tasks

    def judge(self, task_id: int, qid: str) -> None:
        body = self.client.get(f"/api/v1/tasks/{task_id}/next").json()
        while not body["done"]:
            if body.get("pair"):
                left = body["pair"]["left"]["doc_id"]
                right = body["pair"]["right"]["doc_id"]
                better = self.key(qid, left) < self.key(qid, right)
                answer = {"left": left, "right": right, "outcome": "left" if better else "right"}
            else:
                doc = body["document"]["doc_id"]
                answer = {"doc_id": doc, "grade": self.grades.get(qid, {}).get(doc, 0)}
            r = self.client.post(
                f"/api/v1/tasks/{task_id}/judgments",
                json={"seq": body["seq"], "active_ms": 1000, **answer},
            )
            assert r.status_code == 200, r.text
            body = r.json()
            self.answered += 1
            assert self.answered < 5000


def _pytrec(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict[str, float]:
    """MAP and NDCG@10 by pytrec_eval, averaged over the qrels' queries (as trec_eval)."""
    pytrec_eval = oracle("pytrec_eval", "pytrec_eval is the independent oracle")
    measures = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg_cut"}).evaluate(
        {q: run[q] for q in qrels}
    )
    n = len(measures)
    return {
        "map": sum(m["map"] for m in measures.values()) / n,
        "ndcg@10": sum(m["ndcg_cut_10"] for m in measures.values()) / n,
    }


@pytest.mark.slow
def test_cranfield_from_files_to_evaluated_exports(shared_data: Path, tmp_path: Path) -> None:
    data = shared_data / "cranfield"
    url = f"sqlite:///{tmp_path / 'cran.db'}"
    runner = CliRunner()

    def run(*args: str, stdin: str | None = None, status: int = 0) -> str:
        result = runner.invoke(cli, list(args), input=stdin)
        assert result.exit_code == status, result.output
        return result.output

    # 1. Import the SMART files: every query with its top 100 documents by BM25.
    out = run(
        "admin", "import-smart", "cran", "--documents", str(data / "cran.all.1400"),
        "--queries", str(data / "cran.qry"), "--qrels", str(data / "cranqrel"),
        "--pairing", "bm25", "--database-url", url,
    )  # fmt: skip
    assert "225 new queries" in out
    for name in ASSESSORS:
        run("create-user", name, "--password-stdin", "--database-url", url, stdin=PASSWORD + "\n")
    run("create-user", "admin", "--role", "admin", "--password-stdin", "--database-url", url,
        stdin=PASSWORD + "\n")  # fmt: skip

    # 2. The built-in BM25 run, scored against the original qrels as docs/retrieval.md does.
    run_file = tmp_path / "run.txt"
    run("admin", "bm25", "cran", "--depth", "100", "-o", str(run_file), "--database-url", url)
    bm25 = _read_run(run_file)
    assert len(bm25) == 225
    grades = _grades(data / "cranqrel")
    report = json.loads(
        run(
            "evaluate", "--qrels", str(data / "cranqrel"), "--grade-map", "cranfield",
            "--run", str(run_file), "--metrics", "map,ndcg@10", "--preset", "trec_eval", "--json",
        ).splitlines()[0]
    )  # fmt: skip
    expected = _pytrec(grades, bm25)
    assert report["n_queries"] == 225
    assert report["metrics"] == pytest.approx(expected, abs=1e-4)
    # Cross-check with the figures docs/retrieval.md publishes.
    assert round(report["metrics"]["map"], 4) == 0.2995
    assert round(report["metrics"]["ndcg@10"], 4) == 0.3694

    # 3. A plan: per query one topk task (tournament, BM25 prior) and one graded task,
    # pools of the top 30 by BM25.
    out = run(
        "admin", "plan", "cran", "--assessors", ",".join(ASSESSORS),
        "--query-ids", ",".join(QUERIES), "--shifts", "0", "--k", str(K),
        "--pool", "bm25", "--pool-n", str(POOL), "--prior", "bm25", "--strategy", "tournament",
        "--create", "--database-url", url,
    )  # fmt: skip
    assert f"created {2 * len(QUERIES)} tasks" in out

    # 4. Judging over REST against a real server.
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEAPJUDGE_")}
    env.update({"HEAPJUDGE_DEV": "1", "HEAPJUDGE_DATABASE_URL": url})
    with heapjudge_serve(tmp_path, env) as base:
        assessors = [Assessor(base, name, grades) for name in ASSESSORS]
        tasks = [(a, t) for a in assessors for t in a.judge_all()]
        results = {
            t["id"]: a.client.get(f"/api/v1/tasks/{t['id']}/result").json() for a, t in tasks
        }
        for a in assessors:
            a.client.close()
    topk = {t["query_id"]: t for _, t in tasks if t["method"] == "topk"}
    graded = {t["query_id"]: t for _, t in tasks if t["method"] == "graded"}
    assert sorted(topk) == sorted(graded) == sorted(QUERIES)
    assert {t["options"].get("strategy") for t in topk.values()} == {"tournament"}

    # The simulated truth: each query's pool (BM25's top 30, read from the run file) in the
    # assessors' order; the protocol must return exactly its top k.
    pools = {q: _top_of_run(bm25[q], POOL) for q in QUERIES}
    truth = {q: sorted(pools[q], key=lambda d, q=q: assessors[0].key(q, d)) for q in QUERIES}
    for q in QUERIES:
        assert results[topk[q]["id"]]["top"] == truth[q][:K]
        assert sorted(results[graded[q]["id"]]["grades"]) == sorted(pools[q])
    kappa_qrels = {q: {d: max(0, K - i) for i, d in enumerate(truth[q])} for q in QUERIES}
    grade_qrels = {q: {d: grades.get(q, {}).get(d, 0) for d in pools[q]} for q in QUERIES}
    pair_judgments = sum(a.answered for a in assessors) - len(QUERIES) * POOL

    # 5. Every export format, and 6. evaluate on those that are evaluation inputs.
    def export(fmt: str, *args: str, status: int = 0) -> tuple[Path, str]:
        path = tmp_path / f"export-{fmt}"
        out = run("export", "cran", "-f", fmt, *args, "-o", str(path), "--database-url", url,
                  status=status)  # fmt: skip
        return path, out

    def evaluate(flag: str, path: Path, metrics: str, *extra: str) -> dict[str, Any]:
        out = run(
            "evaluate", flag, str(path), "--run", str(run_file), "--metrics", metrics,
            "--preset", "trec_eval", *extra, "--json",
        )  # fmt: skip
        report = json.loads(out.splitlines()[0])
        assert report["n_queries"] == len(QUERIES)
        return report["metrics"]

    checked = set()
    for fmt in FORMATS:
        if fmt == "qrels":
            path, _ = export(fmt)
            assert evaluate("--qrels", path, "map,ndcg@10") == pytest.approx(
                _pytrec(kappa_qrels, bm25), abs=1e-9
            )
        elif fmt == "grades-qrels":
            path, _ = export(fmt)
            expected = _pytrec(grade_qrels, bm25)
            assert evaluate("--qrels", path, "map,ndcg@10") == pytest.approx(expected, abs=1e-9)
            # The same grades through the qrels format's --labels option.
            same, _ = export("qrels", "--labels", "grades")
            assert same.read_text() == path.read_text()
        elif fmt == "topk-jsonl":
            path, _ = export(fmt)
            lines = [json.loads(x) for x in path.read_text().splitlines()]
            assert {x["query_id"]: x["top"] for x in lines} == {q: truth[q][:K] for q in QUERIES}
            got = evaluate("--topk", path, "kappa-ndcg@10,map", "--kappa-gain", "linear")
            expected = _pytrec(kappa_qrels, bm25)
            assert got == pytest.approx(
                {"kappa-ndcg@10": expected["ndcg@10"], "map": expected["map"]}, abs=1e-9
            )
        elif fmt in ("letor", "svmlight", "group", "letor-parquet"):
            # Cranfield has no feature vectors: a clear refusal, and no file.
            path, out = export(fmt, status=1)
            assert "feature" in out and not path.exists(), out
        elif fmt in ("pairs-jsonl", "pairs-csv"):
            _check_pairs(fmt, export(fmt)[0], assessors[0].key, pair_judgments)
        elif fmt.endswith("-parquet"):
            _check_parquet(fmt, export, {q: truth[q][:K] for q in QUERIES}, pair_judgments)
        elif fmt in ("trec-prefs", "qrels-jg"):
            _check_trec_eval_files(fmt, export(fmt)[0], run_file, truth, grade_qrels, bm25)
        else:
            pytest.fail(f"format {fmt!r} is not covered by this walkthrough")
        checked.add(fmt)
    assert checked == set(FORMATS)


def _check_parquet(fmt: str, export: Any, tops: dict[str, list[str]], pair_judgments: int) -> None:
    """A Parquet export has the rows of its text form (docs/exports.md#parquet)."""
    path, _ = export(fmt)
    rows = pq.read_table(path).to_pylist()
    if fmt in ("qrels-parquet", "grades-qrels-parquet"):
        text, _ = export(fmt.removesuffix("-parquet"))
        assert [
            f"{r['query_id']} {r['iteration']} {r['doc_id']} {r['label']}" for r in rows
        ] == text.read_text().splitlines()
    elif fmt == "topk-parquet":
        assert {r["query_id"]: r["top"] for r in rows} == tops
    else:
        assert fmt == "pairs-parquet" and len(rows) == pair_judgments


def _check_trec_eval_files(
    fmt: str,
    path: Path,
    run_file: Path,
    truth: dict[str, list[str]],
    grade_qrels: dict[str, dict[str, int]],
    bm25: dict[str, dict[str, float]],
) -> None:
    """trec_eval's judgment files (docs/trec-eval.md#prefs): every preference of trec-prefs
    agrees with the assessors' order (one group per task, as consistent as the assessor) and
    ``trec-eval -R prefs`` evaluates the BM25 run on every judged query; qrels-jg holds the
    one graded task of each query, so its map_avgjg is trec_eval's map of those grades."""
    import io

    from ranking.trec_eval.cli import run as trec_eval

    lines = [x.split() for x in path.read_text().splitlines()]
    out, err = io.StringIO(), io.StringIO()
    if fmt == "trec-prefs":
        for qid, jg, jsg, doc, level in lines:
            partner = next(
                d for q, g, s, d, lv in lines if (q, g, s) == (qid, jg, jsg) and lv != level
            )
            winner, loser = (doc, partner) if level == "2" else (partner, doc)
            assert truth[qid].index(winner) < truth[qid].index(loser)
        assert len({jg for _, jg, _, _, _ in lines}) == len(QUERIES)  # one topk task each
        status = trec_eval(["-m", "all_prefs", "-R", "prefs", str(path), str(run_file)], out, err)
        assert status == 0, err.getvalue()
        assert f"num_q                 \tall\t{len(QUERIES)}" in out.getvalue()
        return
    assert {(q, d): int(g) for q, _, d, g in lines} == {
        (q, d): g for q, docs in grade_qrels.items() for d, g in docs.items()
    }
    status = trec_eval(["-m", "map_avgjg", "-R", "qrels_jg", str(path), str(run_file)], out, err)
    assert status == 0, err.getvalue()
    expected = _pytrec({q: grade_qrels[q] for q in QUERIES}, bm25)["map"]
    assert out.getvalue() == f"map_avgjg             \tall\t{expected:.4f}\n"


def _check_pairs(fmt: str, path: Path, key: Any, pair_judgments: int) -> None:
    """The judgment formats: one row per pair judgment, each answered by the assessor's key."""
    if fmt == "pairs-csv":
        lines = path.read_text().splitlines()
        assert lines[0].startswith("query_id,assessor,task_id,seq,left,right,outcome,winner")
        assert len(lines) == 1 + pair_judgments
        return
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(rows) == pair_judgments
    for row in rows:
        a, b = (key(row["query_id"], row[s]) for s in ("left", "right"))
        assert row["outcome"] == ("left" if a < b else "right")
