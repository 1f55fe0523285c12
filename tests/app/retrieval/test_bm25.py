"""BM25 over a collection: service, REST, CLI, bm25 pools with honest previews, import notes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from app.cli import cli
from app.collections.imports import import_files
from app.collections.service import create_collection
from app.collections.uploads import UploadedFile
from app.kernel.models import Document, Query
from app.planning import service as planning
from app.planning.spec import PlanSpec, PoolSpec
from app.retrieval import service as retrieval
from tests.app.admin_support import make_collection
from tests.app.conftest import Api


@pytest.fixture(scope="module")
def cran(api: Api, shared_data: Path) -> tuple[int, Path]:
    """Cranfield imported the default way: only the judged documents under each query."""
    d = shared_data / "cranfield"
    cid = create_collection(db=api.db, name="cran-bm25").id
    report = import_files(
        db=api.db,
        collection_id=cid,
        kind="smart",
        files={
            "documents": UploadedFile("cran.all.1400", d / "cran.all.1400"),
            "queries": UploadedFile("cran.qry", d / "cran.qry"),
            "qrels": UploadedFile("cranqrel", d / "cranqrel"),
        },
        max_bytes=0,
    )
    assert report.qrels is not None and "Cranfield codes" in report.qrels
    assert "detected: 3 columns" in report.qrels
    assert any("476 of the 1400 documents" in n for n in report.notes), report.notes
    return cid, d


def test_run_names_the_collections_ids(api: Api, cran: tuple[int, Path]) -> None:
    cid, _ = cran
    run = retrieval.bm25_run(db=api.db, collection_id=cid, depth=20)
    assert run.documents == 924  # the distinct judged documents
    assert list(run.hits) == [str(i) for i in range(1, 226)]  # qrels numbering
    assert all(1 <= len(h) <= 20 for h in run.hits.values())
    first = run.trec().splitlines()[0].split()
    assert first[:2] == ["1", "Q0"] and first[3] == "1" and first[5] == "heapjudge-bm25"
    # The prior order of a query's documents is its documents' slice of the full ranking,
    # then those sharing no term with the query.
    order = retrieval.bm25_order(db=api.db, collection_id=cid, query_id="2")
    full = retrieval.bm25_run(db=api.db, collection_id=cid, depth=924, query_ids=["2"])
    own = set(order)
    matched = [h.doc_id for h in full.hits["2"] if h.doc_id in own]
    assert len(order) == len(own) and order[: len(matched)] == matched


def test_bm25_pool_preview_says_what_it_lost(api: Api, cran: tuple[int, Path]) -> None:
    cid, _ = cran
    api.add_user("bm25a")
    api.add_user("bm25b")
    spec = PlanSpec(
        collection_id=cid,
        assessors=["bm25a", "bm25b"],
        query_ids=["1", "2", "3"],
        scheme="balanced",
        per_query={"topk": 1, "graded": 1},
        k=3,
        pool=PoolSpec(mode="bm25", n=40),
    )
    preview = planning.preview_plan(db=api.db, spec=spec)
    assert preview.ok
    hits = retrieval.bm25_run(db=api.db, collection_id=cid, depth=40, query_ids=["1", "2", "3"])
    with api.db.read() as s:
        own = {
            q: set(
                s.scalars(
                    select(Document.external_id)
                    .join(Query, Query.id == Document.query_id)
                    .where(Query.collection_id == cid, Query.external_id == q)
                )
            )
            for q in ("1", "2", "3")
        }
    for q in ("1", "2", "3"):
        top = [h.doc_id for h in hits.hits[q]]
        lost = sum(1 for d in top if d not in own[q])
        assert lost > 0  # only judged documents were imported
        assert preview.pool_lost[q] == {
            "considered": len(top),
            "not_in_collection": 0,
            "not_in_query": lost,
        }
        assert preview.pool_sizes[q] == min(40, len(own[q]))
    warnings = [v for v in preview.violations if v["code"] == "pool_lost_documents"]
    assert [w["query_id"] for w in warnings] == ["1", "2", "3"]
    assert "not among this query's documents" in warnings[0]["message"]
    assert "pairing 'bm25' or 'all'" in warnings[0]["message"]
    # A run pool: documents that are not in the collection at all are named as such.
    run = "1 Q0 184 1 3 t\n1 Q0 99999 2 2 t\n1 Q0 88888 3 1 t\n"
    spec_run = PlanSpec(
        collection_id=cid,
        assessors=["bm25a", "bm25b"],
        query_ids=["1"],
        scheme="balanced",
        per_query={"topk": 1, "graded": 1},
        k=1,
        pool=PoolSpec(mode="run", n=3, run=run),
    )
    p = planning.preview_plan(db=api.db, spec=spec_run)
    assert p.pool_lost["1"] == {"considered": 3, "not_in_collection": 2, "not_in_query": 0}
    assert p.pool_sizes["1"] == 1


def test_rest_endpoints(api: Api) -> None:
    cid, _ = make_collection(api, "bm25-rest", queries=2, docs=4, features=False)
    r = api.get("admin", f"/api/v1/admin/collections/{cid}/bm25?depth=3&format=json")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["documents"] == 4 and body["queries"] == 2 and body["k1"] == 1.2
    # "query 101" shares only the (stemmed) word "queri"... with no document: no hits.
    assert body["empty_queries"] == ["101", "102"] and body["lines"] == 0
    trec = api.get("admin", f"/api/v1/admin/collections/{cid}/bm25")
    assert trec.status_code == 200 and "attachment" in trec.headers["content-disposition"]
    order = api.get("admin", f"/api/v1/admin/collections/{cid}/bm25/order?query_id=101")
    assert order.status_code == 200 and sorted(order.json()["order"]) == ["d0", "d1", "d2", "d3"]
    assert api.get("admin", f"/api/v1/admin/collections/{cid}/bm25?b=2").status_code == 422
    missing = api.get("admin", f"/api/v1/admin/collections/{cid}/bm25/order?query_id=nope")
    assert missing.status_code == 422 and "nope" in missing.text
    api.add_user("bm25assessor")
    assert api.get("bm25assessor", f"/api/v1/admin/collections/{cid}/bm25").status_code == 403


def test_smart_rel_import_suggests_a_pairing(api: Api, tmp_path: Path) -> None:
    docs = ".I 1\n.T\nwing flutter\n.W\nflutter of wings\n.I 2\n.T\nheat\n.W\nheat transfer\n"
    docs += ".I 3\n.T\nboundary\n.W\nboundary layer flutter\n"
    queries = ".I 1\n.W\nwing flutter\n.I 2\n.W\nheat\n"
    rel = "1 1 0 0.000000\n1 3 0 0.000000\n2 2 0 0.000000\n"
    cid = create_collection(db=api.db, name="smart-rel").id
    files = {
        "documents": UploadedFile("X.ALL", docs.encode()),
        "queries": UploadedFile("X.QRY", queries.encode()),
        "qrels": UploadedFile("X.REL", rel.encode()),
    }
    report = import_files(db=api.db, collection_id=cid, kind="smart", files=files)
    assert report.qrels is not None and "SMART .REL" in report.qrels
    assert any("--pairing bm25 --unjudged-grade 0" in n for n in report.notes), report.notes
    cid2 = create_collection(db=api.db, name="smart-rel-bm25").id
    report = import_files(
        db=api.db,
        collection_id=cid2,
        kind="smart",
        files=files,
        pairing="bm25",
        run_depth=2,
        unjudged_grade=0,
    )
    # query 1 "wing flutter": docs 1 and 3 share terms; query 2 "heat": doc 2 only.
    assert report.rows == 3


def test_cli_bm25_then_evaluate(api: Api, cran: tuple[int, Path], tmp_path: Path) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from ranking.io.trec import parse_grade_map, read_qrels, read_run

    _, d = cran
    out = tmp_path / "run.txt"
    runner = CliRunner()
    r = runner.invoke(
        cli,
        [
            "admin",
            "bm25",
            "cran-bm25",
            "--depth",
            "100",
            "-o",
            str(out),
            "--database-url",
            api.settings.database_url,
        ],
    )
    assert r.exit_code == 0, r.output
    assert "225 queries over 924 documents" in r.output
    e = runner.invoke(
        cli,
        [
            "evaluate",
            "--qrels",
            str(d / "cranqrel"),
            "--grade-map",
            "cranfield",
            "--run",
            str(out),
            "--metrics",
            "map,ndcg@10",
            "--preset",
            "trec_eval",
            "--json",
        ],
    )
    assert e.exit_code == 0, e.output
    got = json.loads(e.stdout)["metrics"]
    qrels = read_qrels(d / "cranqrel", grade_map=parse_grade_map("cranfield"))
    oracle = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg_cut.10"}).evaluate(read_run(out))
    assert got["map"] == pytest.approx(
        sum(v["map"] for v in oracle.values()) / len(oracle), abs=1e-6
    )
    assert got["ndcg@10"] == pytest.approx(
        sum(v["ndcg_cut_10"] for v in oracle.values()) / len(oracle), abs=1e-6
    )
    bad = runner.invoke(
        cli, ["admin", "bm25", "cran-bm25", "--b", "3", "--database-url", api.settings.database_url]
    )
    assert bad.exit_code == 1 and "b must be in [0, 1]" in bad.output
