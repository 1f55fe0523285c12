"""BM25 over a collection whose documents hold no indexable term ("the" is a stopword, "t"
and "!!" give no token): every score is 0, so the run is empty (BM25 lists only documents
sharing a term with the query), the prior order is the tie order (document id descending),
and a task with the BM25 prior starts (docs/retrieval.md). Over REST and the CLI, on SQLite and
Postgres."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from app.cli import cli
from tests.app.conftest import Api
from tests.app.judging.support import make_collection

NAME = "no-terms"


@pytest.fixture(scope="module")
def cid(api: Api) -> int:
    api.add_user("nia")
    # q1 has a term no document holds; q2 has no term at all.
    records: list[dict[str, Any]] = [
        {"query_id": qid, "query": query, "doc_id": doc_id, "text": text}
        for qid, query in (("q1", "the wing"), ("q2", "the"))
        for doc_id, text in (("d1", "the"), ("d2", "t"), ("d3", "!!"))
    ]
    return make_collection(api, NAME, records)


def test_rest_run_is_empty_and_order_is_the_tie_order(api: Api, cid: int) -> None:
    r = api.get("admin", f"/api/v1/admin/collections/{cid}/bm25", params={"format": "json"})
    assert r.status_code == 200, r.text
    run = r.json()
    assert (run["documents"], run["queries"], run["lines"]) == (3, 2, 0)
    assert run["hits"] == {"q1": [], "q2": []} and run["empty_queries"] == ["q1", "q2"]
    r = api.get("admin", f"/api/v1/admin/collections/{cid}/bm25")
    assert r.status_code == 200 and r.text == "", r.text  # a TREC run without lines
    for qid in ("q1", "q2"):
        path = f"/api/v1/admin/collections/{cid}/bm25/order"
        r = api.get("admin", path, params={"query_id": qid})
        assert r.status_code == 200, r.text
        assert r.json() == {"query_id": qid, "order": ["d3", "d2", "d1"]}


def test_task_with_bm25_prior_starts(api: Api, cid: int) -> None:
    body = {
        "collection_id": cid,
        "query_id": "q1",
        "assessor": "nia",
        "method": "topk",
        "k": 1,
        "prior": "bm25",
    }
    r = api.post("admin", "/api/v1/tasks", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["options"]["initial_order"] == ["d3", "d2", "d1"]
    q = api.get("nia", f"/api/v1/tasks/{r.json()['id']}/next")
    assert q.status_code == 200 and not q.json()["done"], q.text
    assert {q.json()["pair"]["left"]["doc_id"], q.json()["pair"]["right"]["doc_id"]} <= {
        "d1",
        "d2",
        "d3",
    }


def test_cli_prints_an_empty_run(api: Api, cid: int) -> None:
    r = CliRunner().invoke(
        cli, ["admin", "bm25", NAME, "--database-url", api.settings.database_url]
    )
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output and "error" not in r.output
    assert "0 lines" in r.output and "no term of queries q1, q2" in r.output, r.output
