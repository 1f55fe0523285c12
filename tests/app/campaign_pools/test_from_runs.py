"""Pools from many runs through REST: upload runs → a stored pool with each document's runs
and ranks → a plan that judges it (its fused order as the prior); bad run files refused with
their line and nothing stored; relevance feedback from a finished task changes what MTF and
Hedge pick; assessors get 403."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from app.kernel.models import CampaignPool, PoolDocument, Query, Task
from tests.app.admin_support import judge_task, make_collection
from tests.app.conftest import Api

USERS = ["pool1", "pool2", "pool3", "pool4"]
# Query 101's documents d0..d7; make_collection's oracle scores (5d + 3) mod 8 give the graded
# oracle of judge_task (grade = min(4, score // 2)): relevant (grade ≥ 1) all but d1 and d6.
RUN_A = "101 Q0 d0 1 9 A\n101 Q0 d2 2 8 A\n101 Q0 d1 3 7 A\n101 Q0 d3 4 6 A\n102 Q0 d5 1 1 A\n"
RUN_B = "101 Q0 d6 1 9 B\n101 Q0 d4 2 8 B\n101 Q0 d5 3 7 B\n101 Q0 d7 4 6 B\n102 Q0 d5 1 5 B\n"
RUN_C = "101 Q0 d0 1 3 C\n101 Q0 zz 2 2 C\n999 Q0 d1 1 1 C\n"


@pytest.fixture(scope="module")
def campaign(api: Api) -> tuple[int, dict[str, dict[str, float]]]:
    for u in USERS:
        api.add_user(u)
    return make_collection(api, "pools", queries=2, docs=8, features=False)


def _files(*runs: tuple[str, str]) -> list[tuple[str, tuple[str, bytes, str]]]:
    return [("runs", (name, text.encode(), "text/plain")) for name, text in runs]


def _build(api: Api, cid: int, runs: list[tuple[str, str]], **params: Any) -> Any:
    return api.post(
        "admin", f"/api/v1/admin/collections/{cid}/pools", files=_files(*runs), params=params
    )


def _picks(api: Api, pool_id: int, query_id: str = "101") -> list[str]:
    r = api.get("admin", f"/api/v1/admin/pools/{pool_id}", params={"query_id": query_id})
    assert r.status_code == 200, r.text
    rows = [d for d in r.json()["documents_shown"] if d["pick"] is not None]
    return [d["doc_id"] for d in sorted(rows, key=lambda d: d["pick"])]


def _pool_rows(api: Api) -> int:
    with api.db.read() as s:
        return int(s.scalar(select(func.count()).select_from(CampaignPool)) or 0) + int(
            s.scalar(select(func.count()).select_from(PoolDocument)) or 0
        )


def test_upload_runs_pool_then_plan_judges_it(api: Api, campaign) -> None:
    cid, _ = campaign
    r = _build(api, cid, [("A.run", RUN_A), ("B.txt", RUN_B), ("C", RUN_C)], depth=2, name="union")
    assert r.status_code == 201, r.text
    pool = r.json()
    assert pool["runs"] == ["A", "B", "C"] and pool["method"] == "depth"
    assert pool["fusion"] == "rrf60" and pool["budget"] is None
    # depth 2: 101 → A d0 d2, B d6 d4, C d0 zz (zz is no document of 101: dropped);
    # 102 → A d5, B d5; query 999 is not in the collection.
    assert pool["summary"]["unknown_query_ids"] == ["999"]
    assert pool["summary"]["not_in_query"] == 1
    assert pool["documents"] == pool["picked"] == 5
    got = api.get("admin", f"/api/v1/admin/pools/{pool['id']}").json()["documents_shown"]
    by_doc = {(d["query_id"], d["doc_id"]): d for d in got}
    assert by_doc["101", "d0"]["hits"] == [{"run": "A", "rank": 1}, {"run": "C", "rank": 1}]
    assert by_doc["101", "d0"]["fused"] == pytest.approx(2 / 61)
    assert by_doc["101", "d4"]["hits"] == [{"run": "B", "rank": 2}]
    assert by_doc["102", "d5"]["hits"] == [{"run": "A", "rank": 1}, {"run": "B", "rank": 1}]
    # Fused order: d0 (2/61), d6 (1/61), d2 and d4 (1/62: best rank 2, then doc id).
    assert [d["doc_id"] for d in got if d["query_id"] == "101"] == ["d0", "d6", "d2", "d4"]
    listed = api.get("admin", f"/api/v1/admin/collections/{cid}/pools").json()
    assert [p["name"] for p in listed] == ["union"]

    plan = {
        "collection_id": cid,
        "assessors": USERS,
        "name": "pooled",
        "scheme": "balanced",
        "per_query": {"topk": 1, "graded": 1},
        "k": 2,
        "pool": {"mode": "runs", "pool_id": pool["id"], "run_order": True},
    }
    r = api.post("admin", "/api/v1/admin/plans/preview", json=plan)
    assert r.status_code == 200, r.text
    preview = r.json()
    assert preview["ok"], preview["violations"]
    assert preview["pool_sizes"] == {"101": 4, "102": 1}
    created = api.post("admin", "/api/v1/admin/plans", json=plan)
    assert created.status_code == 201, created.text
    with api.db.read() as s:
        rows = s.execute(
            select(Query.external_id, Task)
            .join(Query, Query.id == Task.query_id)
            .where(Task.id.in_(created.json()["task_ids"]))
        ).all()
    for qid, task in rows:
        assert task.doc_ids == (["d0", "d6", "d2", "d4"] if qid == "101" else ["d5"])
        if task.method == "topk":
            assert task.options["initial_order"] == task.doc_ids
            assert task.options["prior"] == f"run:pool{pool['id']}-rrf60"
    taken = _build(api, cid, [("A", RUN_A)], name="union")
    assert taken.status_code == 422 and "named 'union'" in taken.text


def test_bad_run_file_is_refused_with_its_line_and_nothing_is_stored(api: Api, campaign) -> None:
    cid, _ = campaign
    before = _pool_rows(api)
    bad = "101 Q0 d0 1 9 X\n101 Q0 d1 2 8\n101 Q0 d2 three 7 X\n"
    r = _build(api, cid, [("A.run", RUN_A), ("bad.run", bad)], name="broken")
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert [(d["file"], d["line"]) for d in detail] == [("bad.run", 2), ("bad.run", 3)]
    assert "expected 6 columns" in detail[0]["msg"] and "not an integer" in detail[1]["msg"]
    assert _pool_rows(api) == before
    nothing = _build(api, cid, [("other", "7 Q0 x 1 1 t\n")], name="outside")
    assert nothing.status_code == 422 and "no run ranks a document" in nothing.text
    assert _pool_rows(api) == before
    unknown = api.post(
        "admin",
        f"/api/v1/admin/collections/{cid}/pools",
        files=[("run", ("A", RUN_A.encode(), "text/plain"))],
    )
    assert unknown.status_code == 422 and "unexpected part 'run'" in unknown.text


def test_assessors_are_refused(api: Api, campaign) -> None:
    cid, _ = campaign
    r = api.post(USERS[0], f"/api/v1/admin/collections/{cid}/pools", files=_files(("A", RUN_A)))
    assert r.status_code == 403
    assert api.get(USERS[0], f"/api/v1/admin/collections/{cid}/pools").status_code == 403
    assert api.get(USERS[0], "/api/v1/admin/pools/1").status_code == 403


def test_mtf_takes_feedback_from_finished_tasks(api: Api, campaign) -> None:
    cid, scores = campaign
    runs = [("A", RUN_A), ("B", RUN_B)]
    # No judgments yet: every pick counts as not relevant, so MTF takes the runs in turns.
    blind = _build(api, cid, runs, method="mtf", budget=6, name="mtf-blind")
    assert blind.status_code == 201, blind.text
    assert _picks(api, blind.json()["id"]) == ["d0", "d6", "d2", "d4", "d1", "d5"]
    r = api.post(
        "admin",
        "/api/v1/tasks",
        json={"collection_id": cid, "query_id": "101", "assessor": USERS[0], "method": "graded"},
    )
    assert r.status_code == 201, r.text
    judge_task(api, USERS[0], r.json()["id"], scores["101"])
    # A finished graded task: d0 and d2 relevant keep MTF on A; d1 not (A −1); B's d6 not
    # (B −1); the tie goes to A: d3 relevant, A exhausted; B: d4.
    seen = _build(api, cid, runs, method="mtf", budget=6, name="mtf-feedback")
    assert _picks(api, seen.json()["id"]) == ["d0", "d2", "d1", "d6", "d3", "d4"]
    assert seen.json()["summary"]["picked_judged"] == 6  # 101's picks; 102's d5 is not judged
    off = _build(api, cid, runs, method="mtf", budget=6, name="mtf-off", feedback=False)
    assert _picks(api, off.json()["id"]) == _picks(api, blind.json()["id"])


def test_hedge_follows_the_run_that_gives_relevant_documents(api: Api, campaign) -> None:
    cid, _ = campaign
    # After test_mtf_takes_feedback_from_finished_tasks: a finished graded task on 101 says
    # d0, d2, d3, d4, d5, d7 relevant, d1 and d6 not. Hedge (rank values ℓ(1) = 1,
    # ℓ(2) = 2/3, ℓ(3) ≈ 0.47, ℓ(4) = 1/3 in a pool of 8): d0 (tie with d6, fused order)
    # relevant → A ≈ 0.89; d2 (0.60 against d6's 0.21) relevant → A ≈ 0.97; d1 (0.46) not
    # relevant → A ≈ 0.92; d3 (0.32 against d6's 0.17).
    runs = [("A", RUN_A), ("B", RUN_B)]
    seen = _build(api, cid, runs, method="hedge", budget=4, name="hedge-feedback")
    assert seen.status_code == 201, seen.text
    assert seen.json()["method"] == "hedge"
    assert _picks(api, seen.json()["id"]) == ["d0", "d2", "d1", "d3"]
    # Without feedback every pick counts as not relevant and the runs take turns.
    blind = _build(api, cid, runs, method="hedge", budget=4, name="hedge-off", feedback=False)
    assert _picks(api, blind.json()["id"]) == ["d0", "d6", "d2", "d4"]


def test_a_finished_topk_task_counts_its_top_as_relevant(api: Api, campaign) -> None:
    cid, scores = campaign
    # Query 102: oracle scores (5d + 6) mod 8, so a top-2 task's top is d5 (7), d0 (6).
    runs = [
        ("A2", "102 Q0 d2 1 3 A\n102 Q0 d5 2 2 A\n102 Q0 d1 3 1 A\n"),
        ("B2", "102 Q0 d0 1 2 B\n102 Q0 d7 2 1 B\n"),
    ]
    blind = _build(api, cid, runs, method="mtf", budget=3, name="topk-blind")
    # Nothing finished on 102: A d2 (A −1), B d0 (B −1), A d5.
    assert _picks(api, blind.json()["id"], "102") == ["d2", "d0", "d5"]
    api.add_user("pooltop")
    r = api.post(
        "admin",
        "/api/v1/tasks",
        json={
            "collection_id": cid,
            "query_id": "102",
            "assessor": "pooltop",
            "method": "topk",
            "k": 2,
        },
    )
    assert r.status_code == 201, r.text
    judge_task(api, "pooltop", r.json()["id"], scores["102"])
    seen = _build(api, cid, runs, method="mtf", budget=3, name="topk-seen")
    # The top (d5, d0) relevant, the rest of the task's pool not: A d2 (not: A −1); B d0
    # (relevant: stay on B) d7 (not).
    assert _picks(api, seen.json()["id"], "102") == ["d2", "d0", "d7"]


BAD_LINES = [
    "101 Q0 d\x002 2 8 A\n",  # a NUL in a document id
    "101 Q0 d2 2 1e999999 A\n",  # a score that reads as infinity
    "101 Q0 d2 2 -inf A\n",
    "101 Q0 d2 2 nan A\n",
    "101 Q0 d2 2 high A\n",
    "101 Q0 d2 two 8 A\n",
    "101 Q0 d2 2 8\n",
    "101 Q0 d0 2 8 A\n",  # d0 again
    "1\x0701 Q0 d2 2 8 A\n",  # a control character (BEL) in a query id
]


@pytest.mark.parametrize("bad", BAD_LINES)
def test_pool_and_run_uploads_refuse_the_same_lines_alike(api: Api, campaign, bad: str) -> None:
    """The two uploads of a run file (a pool's runs, a stored run) read it with one parser:
    the same bad line is refused by both, with the same line number and message, and neither
    stores anything."""
    cid, _ = campaign
    content = ("101 Q0 d0 1 9 A\n" + bad).encode()
    before = _pool_rows(api)
    pool = api.post(
        "admin",
        f"/api/v1/admin/collections/{cid}/pools",
        files=[("runs", ("bad.run", content, "text/plain"))],
        params={"name": "same-parser"},
    )
    run = api.post(
        "admin",
        f"/api/v1/admin/collections/{cid}/runs",
        files=[("run", ("bad.run", content, "text/plain"))],
    )
    assert pool.status_code == run.status_code == 422, (pool.text, run.text)
    as_pool = [(d["file"], d["line"], d["msg"]) for d in pool.json()["detail"]]
    as_run = [(d["file"], d["line"], d["msg"]) for d in run.json()["detail"]]
    assert as_pool == as_run and as_pool[0][:2] == ("bad.run", 2), (as_pool, as_run)
    assert _pool_rows(api) == before
    assert api.get("admin", f"/api/v1/admin/collections/{cid}/runs").json()["runs"] == []
