"""An import with qrels and a pairing that pools fewer documents than the qrels judge keeps
every judgment (docs/data-formats.md#judgments-outside-the-pool): the judged documents outside
the BM25 pool are labels of the ``qrels`` label set, so the leaderboard's MAP of a run equals
trec_eval's (pytrec_eval, the oracle) on the original qrels file, over the same queries; the
import reports how many pairs were pooled, judged, and both; its notes never suggest the
pairing it was given.

Two collections: a small synthetic one whose judged documents share no word with their
query (BM25 cannot pool them), and Cranfield 1400 (skipped when the data is absent)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from app.cli import cli
from labeling.retrieval.bm25 import Bm25Index
from labeling.retrieval.text import document_text
from labeling.sources import parse_smart_docs, parse_smart_queries
from tests.conftest import oracle


def invoke(url: str, *args: str) -> str:
    result = CliRunner().invoke(cli, [*args, "--database-url", url])
    assert result.exit_code == 0, result.output
    return str(result.output)


def bm25_run(docs: Path, queries: Path, out: Path, depth: int = 100) -> dict[str, dict[str, float]]:
    """A BM25 run over every document of the files (not only the pool), as a TREC file and as
    pytrec_eval's mapping; ids as heapjudge's SMART parsers read them."""
    documents = parse_smart_docs(docs.read_text().splitlines(keepends=True), file=docs.name)
    topics = parse_smart_queries(queries.read_text().splitlines(keepends=True), file=queries.name)
    index = Bm25Index((d.doc_id, document_text(d.title, d.text, d.html)) for d in documents)
    run: dict[str, dict[str, float]] = {}
    lines = []
    for t in topics:
        hits = index.search(t.title, depth)
        # Scores strictly decreasing by rank, so that trec_eval's order (score, then doc id)
        # is the rank order heapjudge reads too.
        run[t.query_id] = {h.doc_id: float(len(hits) - i) for i, h in enumerate(hits)}
        lines += [
            f"{t.query_id} Q0 {d} {i + 1} {s} bm25\n"
            for i, (d, s) in enumerate(run[t.query_id].items())
        ]
    out.write_text("".join(lines))
    return run


def trec_map(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]
) -> tuple[float, int]:
    pytrec_eval = oracle("pytrec_eval", "pytrec_eval is the trec_eval oracle")
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"map"}).evaluate(run)
    return sum(v["map"] for v in per_query.values()) / len(per_query), len(per_query)


def leaderboard(url: str, collection: str) -> dict[str, Any]:
    out = invoke(
        url, "admin", "runs", "leaderboard", collection, "qrels", "--metric", "AP", "--json"
    )
    return dict(json.loads(out))


def synthetic(tmp: Path) -> tuple[Path, Path, Path, dict[str, dict[str, int]]]:
    """Eight documents, three queries. Each query's judged documents: two that hold its word
    (BM25 pools them at depth 2) and two that do not (outside the pool), one relevant."""
    words = ["apple", "pear", "plum"]
    texts = [
        "apple apple tree", "apple orchard", "pear pear tree", "pear garden",
        "plum plum tree", "plum jam", "stone wall", "river bank",
    ]  # fmt: skip
    docs = tmp / "docs.all"
    docs.write_text("".join(f".I {i + 1}\n.W\n{t}\n" for i, t in enumerate(texts)))
    queries = tmp / "q.qry"
    queries.write_text("".join(f".I {i + 1}\n.W\n{w}\n" for i, w in enumerate(words)))
    judged = {
        "1": {"1": 2, "2": 1, "7": 3, "5": 0},
        "2": {"3": 1, "4": 0, "8": 2, "1": 0},
        "3": {"5": 2, "6": 0, "7": 0, "8": 1},
    }
    qrels = tmp / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in judged.items() for d, g in ds.items()))
    return docs, queries, qrels, judged


def test_judged_documents_outside_the_bm25_pool_are_kept(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'syn.db'}"
    docs, queries, qrels, judged = synthetic(tmp_path)
    out = invoke(
        url, "admin", "import-smart", "syn", "--documents", str(docs), "--queries", str(queries),
        "--qrels", str(qrels), "--qrels-format", "trec", "--pairing", "bm25", "--run-depth", "2",
    )  # fmt: skip
    # 3 queries x 2 pooled; 12 judged pairs, 6 of them in the pool (the first two of each).
    assert "6 (query, document) pairs in the pool (6 new, 0 already there), 3 new queries" in out
    assert "judged: 12 (query, document) pairs, 6 of them in the pool, 6 outside it" in out
    assert "pairing 'bm25' or" not in out and "new documents" not in out
    run = bm25_run(docs, queries, tmp_path / "bm25.run")
    invoke(url, "admin", "runs", "upload", "syn", str(tmp_path / "bm25.run"))
    board = leaderboard(url, "syn")
    (row,) = board["runs"]
    expected, count = trec_map(judged, run)
    assert row["mean"] == pytest.approx(expected, abs=1e-12)
    assert row["queries_counted"] == count == 3
    # Importing the same files again changes nothing and says so.
    again = invoke(
        url, "admin", "import-smart", "syn", "--documents", str(docs), "--queries", str(queries),
        "--qrels", str(qrels), "--qrels-format", "trec", "--pairing", "bm25", "--run-depth", "2",
    )  # fmt: skip
    assert "(0 new, 6 already there), 0 new queries" in again
    assert leaderboard(url, "syn")["runs"][0]["mean"] == pytest.approx(expected, abs=1e-12)


def test_cranfield_bm25_pool_leaderboard_map_is_trec_eval_s(
    shared_data: Path, tmp_path: Path
) -> None:
    folder = shared_data / "cranfield"
    if not (folder / "cranqrel").exists():
        pytest.skip("Cranfield is not in the shared data")
    url = f"sqlite:///{tmp_path / 'cran.db'}"
    docs, queries = folder / "cran.all.1400", folder / "cran.qry"
    out = invoke(
        url, "admin", "import-smart", "cran", "--documents", str(docs), "--queries", str(queries),
        "--qrels", str(folder / "cranqrel"), "--pairing", "bm25",
    )  # fmt: skip
    # The original file, read independently: "query doc code", code -1 not relevant, 1..4
    # relevant (the README's codes); trec_eval's binary MAP needs no more.
    judged: dict[str, dict[str, int]] = {}
    for line in (folder / "cranqrel").read_text().splitlines():
        q, d, code = line.split()
        judged.setdefault(q, {})[d] = 0 if int(code) == -1 else 1
    pairs = sum(len(v) for v in judged.values())
    assert f"judged: {pairs} (query, document) pairs" in out
    run = bm25_run(docs, queries, tmp_path / "bm25.run")
    invoke(url, "admin", "runs", "upload", "cran", str(tmp_path / "bm25.run"))
    board = leaderboard(url, "cran")
    (row,) = board["runs"]
    expected, count = trec_map(judged, run)
    assert row["mean"] == pytest.approx(expected, abs=1e-12)
    assert row["queries_counted"] == count
