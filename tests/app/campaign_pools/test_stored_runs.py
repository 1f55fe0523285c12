"""Pools from runs stored on the collection (REST JSON body, and ``heapjudge admin pool
--stored-runs``): the same pool as from the same files uploaded with the request (documents,
runs and ranks, fused order, picks); unknown stored runs are a 422 naming them and nothing is
stored; assessors get 403."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from app.kernel.models import CampaignPool, PoolDocument
from tests.app.admin_support import make_collection
from tests.app.conftest import Api

USER = "storedpool1"
# Ties in score (d2 and d1 in A; d7 and d4 in B) are broken as trec_eval breaks them, by doc id
# descending, whatever the rank column or the file order says; d9 is no document of 101.
RUN_A = (
    "101 Q0 d0 1 9 A\n101 Q0 d1 2 8 A\n101 Q0 d2 3 8 A\n101 Q0 d3 4 6 A\n101 Q0 d9 5 5 A\n"
    "102 Q0 d5 1 1 A\n"
)
RUN_B = "101 Q0 d4 1 8 B\n101 Q0 d7 2 8 B\n101 Q0 d5 3 7 B\n101 Q0 d0 4 6 B\n102 Q0 d6 1 5 B\n"
RUN_C = "102 Q0 d5 2 3 C\n102 Q0 d1 1 4 C\n101 Q0 d3 1 2 C\n"
RUNS = {"A": RUN_A, "B": RUN_B, "C": RUN_C}


@pytest.fixture(scope="module")
def stored(api: Api) -> int:
    """A collection with the runs A, B and C stored on it (in that upload order)."""
    api.add_user(USER)
    cid, _ = make_collection(api, "stored-pools", queries=2, docs=8, features=False)
    parts = [("run", (name, text.encode(), "text/plain")) for name, text in RUNS.items()]
    r = api.post("admin", f"/api/v1/admin/collections/{cid}/runs", files=parts)
    assert r.status_code == 201, r.text
    return int(cid)


def _ids(api: Api, cid: int) -> dict[str, int]:
    listed = api.get("admin", f"/api/v1/admin/collections/{cid}/runs").json()["runs"]
    return {r["name"]: r["id"] for r in listed}


def _from_files(api: Api, cid: int, names: list[str], **params: Any) -> Any:
    parts = [("runs", (f"{n}.run", RUNS[n].encode(), "text/plain")) for n in names]
    return api.post("admin", f"/api/v1/admin/collections/{cid}/pools", files=parts, params=params)


def _from_stored(api: Api, cid: int, body: dict[str, Any], **kw: Any) -> Any:
    return api.post("admin", f"/api/v1/admin/collections/{cid}/pools", json=body, **kw)


def _documents(api: Api, pool_id: int) -> list[dict[str, Any]]:
    r = api.get("admin", f"/api/v1/admin/pools/{pool_id}")
    assert r.status_code == 200, r.text
    return list(r.json()["documents_shown"])


def _pool_rows(api: Api) -> int:
    with api.db.read() as s:
        return int(s.scalar(select(func.count()).select_from(CampaignPool)) or 0) + int(
            s.scalar(select(func.count()).select_from(PoolDocument)) or 0
        )


@pytest.mark.parametrize(
    ("method", "depth", "budget", "order"),
    [
        ("depth", 3, None, ["A", "B", "C"]),
        ("mtf", 4, 3, ["B", "A"]),
        ("maxmean", 5, 4, ["C", "A", "B"]),
    ],
)
def test_stored_runs_pool_equals_the_files_pool(
    api: Api, stored: int, method: str, depth: int, budget: int | None, order: list[str]
) -> None:
    settings = {"method": method, "depth": depth} | ({"budget": budget} if budget else {})
    tag = f"{method}{depth}"
    files = _from_files(api, stored, order, name=f"files-{tag}", **settings)
    assert files.status_code == 201, files.text
    ids = _ids(api, stored)
    # The runs by name, the first by id: the run order is the order given.
    chosen: list[str | int] = [ids[order[0]], *order[1:]]
    body = {"stored_runs": chosen, "name": f"stored-{tag}", **settings}
    from_stored = _from_stored(api, stored, body)
    assert from_stored.status_code == 201, from_stored.text
    a, b = files.json(), from_stored.json()
    assert b["runs"] == a["runs"] == order
    assert b["summary"]["source"] == "stored" and a["summary"]["source"] == "files"
    for key in ("documents", "picked", "method", "depth", "budget", "fusion"):
        assert b[key] == a[key], key
    for key in ("queries", "not_in_query", "unknown_queries"):
        assert b["summary"][key] == a["summary"][key], key
    assert _documents(api, b["id"]) == _documents(api, a["id"])


def test_stored_pool_by_hand_and_all(api: Api, stored: int) -> None:
    """Depth 2 of all stored runs, hand-traced: the ties ranked by doc id descending."""
    r = _from_stored(api, stored, {"stored_runs": "all", "depth": 2, "name": "all-2"})
    assert r.status_code == 201, r.text
    pool = r.json()
    assert pool["runs"] == ["A", "B", "C"]  # upload order
    got = {(d["query_id"], d["doc_id"]): d for d in _documents(api, pool["id"])}
    # 101: A d0 (9), d2 (8, tie with d1: d2 first); B d7, d4 (both 8: d7 first); C d3.
    # 102: A d5; B d6; C d1 (4), d5 (3).
    assert got["101", "d2"]["hits"] == [{"run": "A", "rank": 2}]
    assert got["101", "d7"]["hits"] == [{"run": "B", "rank": 1}]
    assert got["101", "d4"]["hits"] == [{"run": "B", "rank": 2}]
    assert ("101", "d1") not in got
    assert got["102", "d5"]["hits"] == [{"run": "A", "rank": 1}, {"run": "C", "rank": 2}]
    assert got["102", "d5"]["fused"] == pytest.approx(1 / 61 + 1 / 62)
    q101 = [d["doc_id"] for d in _documents(api, pool["id"]) if d["query_id"] == "101"]
    assert q101 == ["d0", "d3", "d7", "d2", "d4"]  # 1/61 each by doc id, then 1/62 each
    assert pool["documents"] == pool["picked"] == 8


def test_unknown_stored_runs_are_named_and_nothing_is_stored(api: Api, stored: int) -> None:
    before = _pool_rows(api)
    r = _from_stored(api, stored, {"stored_runs": ["A", "nope", 987654, "zz"]})
    assert r.status_code == 422, r.text
    assert r.json()["unknown_runs"] == ["nope", "987654", "zz"]
    assert "'nope', '987654', 'zz'" in r.json()["detail"]
    bad: list[tuple[dict[str, Any], str]] = [
        ({"stored_runs": []}, "stored_runs"),
        ({"stored_runs": "some"}, "stored_runs"),
        ({"stored_runs": ["A"], "method": "bm25"}, "method"),
        ({"stored_runs": ["A"], "depth": 0}, "depth"),
        ({"stored_runs": ["A"], "extra": 1}, "extra"),
        ({"runs": ["A"]}, "stored_runs"),
    ]
    for body, where in bad:
        got = _from_stored(api, stored, body)
        assert got.status_code == 422, (body, got.text)
        assert where in got.text, (body, got.text)
    query = _from_stored(api, stored, {"stored_runs": ["A"]}, params={"method": "mtf"})
    assert query.status_code == 422 and "not the query: method" in query.text
    broken = api.post(
        "admin",
        f"/api/v1/admin/collections/{stored}/pools",
        content=b'{"stored_runs": [',
        headers={"content-type": "application/json"},
    )
    assert broken.status_code == 422, broken.text
    missing = _from_stored(api, 999_999, {"stored_runs": "all"})
    assert missing.status_code == 404
    assert _pool_rows(api) == before


def test_assessors_cannot_pool_stored_runs(api: Api, stored: int) -> None:
    before = _pool_rows(api)
    r = api.post(USER, f"/api/v1/admin/collections/{stored}/pools", json={"stored_runs": "all"})
    assert r.status_code == 403
    assert _pool_rows(api) == before


def test_cli_stored_runs_equal_the_files(tmp_path: Path) -> None:
    """``heapjudge admin pool --stored-runs`` and ``--all-stored-runs`` print the pool that
    ``--runs`` prints for the same files (JSON: documents, runs and ranks, fused order)."""
    import json

    from typer.testing import CliRunner

    from app.cli import cli

    url = f"sqlite:///{tmp_path / 'stored.db'}"
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        out = runner.invoke(cli, [*args, "--database-url", url])
        return out

    (tmp_path / "docs.all").write_text("".join(f".I {i}\n.W\ndocument {i}\n" for i in range(1, 9)))
    (tmp_path / "q.qry").write_text("".join(f".I {i}\n.W\nquery {i}\n" for i in range(1, 3)))
    runs = {
        "A": "1 Q0 1 1 3 A\n1 Q0 2 2 3 A\n1 Q0 3 3 1 A\n2 Q0 5 1 3 A\n2 Q0 99 2 2 A\n",
        "B": "1 Q0 4 1 3 B\n1 Q0 1 2 2 B\n1 Q0 5 3 2 B\n2 Q0 6 1 1 B\n",
    }
    for name, text in runs.items():
        (tmp_path / name).write_text(text)
    made = invoke(
        "admin", "import-smart", "tiny", "--documents", str(tmp_path / "docs.all"),
        "--queries", str(tmp_path / "q.qry"), "--pairing", "all",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    up = invoke("admin", "runs", "upload", "tiny", str(tmp_path / "A"), str(tmp_path / "B"))
    assert up.exit_code == 0, up.output

    def pool(*args: str) -> dict[str, Any]:
        out = invoke("admin", "pool", "tiny", "--method", "mtf", "--budget", "3", "--json", *args)
        assert out.exit_code == 0, out.output
        got: dict[str, Any] = json.loads(out.output)
        return got

    files = pool("--runs", str(tmp_path / "B"), "--runs", str(tmp_path / "A"), "--pool-name", "f")
    named = pool("--stored-runs", "B,A", "--pool-name", "s")
    assert named["runs"] == files["runs"] == ["B", "A"]
    assert named["pool"] == files["pool"]
    assert named["summary"]["source"] == "stored"
    everything = pool("--all-stored-runs", "--pool-name", "all")
    assert everything["runs"] == ["A", "B"]
    by_doc = {(d["query_id"], d["doc_id"]): d["hits"] for d in everything["pool"]}
    # Query 1: A ranks 1 and 2 (tied at 3) as 2, 1, B ranks 5 and 1 (tied at 2) as 5, 1
    # (doc id descending).
    assert by_doc["1", "2"] == [{"run": "A", "rank": 1}]
    assert by_doc["1", "1"] == [{"run": "A", "rank": 2}, {"run": "B", "rank": 3}]

    (tmp_path / "qrels").write_text("1 0 1 1\n1 0 4 1\n2 0 5 1\n")
    simulated = []
    for source in (
        ["--runs", str(tmp_path / "A"), "--runs", str(tmp_path / "B")],
        ["--stored-runs", "A,B"],
    ):
        sim = invoke(
            "admin", "pool", "tiny", *source, "--method", "mtf", "--simulate",
            "--qrels", str(tmp_path / "qrels"), "--budgets", "1,2", "--json",
        )  # fmt: skip
        assert sim.exit_code == 0, sim.output
        simulated.append(json.loads(sim.output))
    # MTF over A, B: query 1 takes A's 2 (not relevant), then B's 4 (relevant); query 2 A's 5.
    assert [r["relevant_found"] for r in simulated[0]] == [1, 2]
    assert simulated[1] == simulated[0]

    unknown = invoke("admin", "pool", "tiny", "--stored-runs", "A,nope", "--pool-name", "u")
    assert unknown.exit_code != 0 and "'nope'" in unknown.output
    both = invoke("admin", "pool", "tiny", "--runs", str(tmp_path / "A"), "--all-stored-runs")
    assert both.exit_code != 0 and "one of --runs" in both.output
    listed = invoke("admin", "runs", "list", "tiny")
    assert listed.exit_code == 0
    pools = invoke("admin", "pool", "tiny", "--all-stored-runs", "--pool-name", "all", "--json")
    assert pools.exit_code != 0 and "named 'all'" in pools.output
