"""The built-in BM25 on Cranfield under the two readings of its qrels (docs/retrieval.md).

The figures in docs/retrieval.md come from this run: BM25 over title + text of all 1,400
documents, depth 100, evaluated by `heapjudge evaluate --preset trec_eval` (the columnar path)
with pytrec_eval as the oracle. The only difference between the two readings is whether the one
code -1 entry per query counts as relevant.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from app.cli import cli
from labeling.retrieval.bm25 import Bm25Index, write_trec_run
from labeling.retrieval.text import document_text
from labeling.sources.smart import load_cranfield
from tests.conftest import oracle

READINGS = {
    # cranqrel.readme's codes, -1 not relevant (heapjudge's `--grade-map cranfield`)
    "cranfield": (lambda code: 0 if code == -1 else 5 - code, 0.2995, 0.3694),
    # every listed pair relevant, as in the CRAN.REL query-document list of the SMART tradition
    "1:1,2:1,3:1,4:1,-1:1": (lambda code: 1, 0.4147, 0.5188),
}


@pytest.fixture(scope="module")
def cranfield_run(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    c = load_cranfield(shared_data / "cranfield")
    index = Bm25Index([(d.doc_id, document_text(d.title, d.text)) for d in c.documents])
    run = index.run({t.query_id: t.title for t in c.topics}, depth=100)
    path = tmp_path_factory.mktemp("bm25") / "run.txt"
    path.write_text(write_trec_run(run), encoding="utf-8")
    return path


@pytest.mark.parametrize("grade_map", list(READINGS))
def test_bm25_figures_under_each_qrels_reading(
    shared_data: Path, cranfield_run: Path, grade_map: str
) -> None:
    pytrec_eval = oracle("pytrec_eval", "pytrec_eval is the oracle here")
    qrels_path = shared_data / "cranfield" / "cranqrel"
    result = CliRunner().invoke(
        cli,
        [
            "evaluate",
            "--qrels",
            str(qrels_path),
            "--run",
            str(cranfield_run),
            "--grade-map",
            grade_map,
            "--preset",
            "trec_eval",
            "--metrics",
            "map,ndcg@10",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    ours = json.loads(result.stdout.splitlines()[0])["metrics"]
    grade_of, doc_map, doc_ndcg = READINGS[grade_map]
    qrels: dict[str, dict[str, int]] = {}
    for line in qrels_path.read_text().splitlines():
        q, d, code = line.split()
        qrels.setdefault(q, {})[d] = grade_of(int(code))
    run: dict[str, dict[str, float]] = {}
    for line in cranfield_run.read_text().splitlines():
        q, _, d, _, score, _ = line.split()
        run.setdefault(q, {})[d] = float(score)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg_cut.10"}).evaluate(run)
    expected_map = np.mean([v["map"] for v in per_query.values()])
    expected_ndcg = np.mean([v["ndcg_cut_10"] for v in per_query.values()])
    assert ours["map"] == pytest.approx(expected_map, abs=1e-9)
    assert ours["ndcg@10"] == pytest.approx(expected_ndcg, abs=1e-9)
    assert round(ours["map"], 4) == doc_map and round(ours["ndcg@10"], 4) == doc_ndcg
