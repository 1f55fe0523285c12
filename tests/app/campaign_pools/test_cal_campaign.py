"""Pools by continuous active learning with one budget over the campaign (``allocation``
``campaign``) through REST, on SQLite and Postgres: the first build is the seed (the queries in
turn); a plan judges its picks; the next build, with a larger budget, keeps the judged picks and
tops the pool up with the documents the model fitted on those labels finds most likely relevant
over all the queries (:func:`labeling.study.cal_build.cal_campaign_build` over the stored
vectors); the allocation is stored and shown; methods other than ``cal``, a missing budget or
an unknown allocation are a 422 and nothing is stored."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from app.kernel.models import CampaignPool, Query, Task
from labeling.study.cal_build import cal_campaign_build
from tests.app.admin_support import judge_task, make_collection, stored_vectors
from tests.app.conftest import Api

USER = "calcamp1"
QUERIES = ("101", "102", "103")
# Per query, run A ranks d0..d3 and run B d4..d7: the fused order is d0, d4, d1, d5, ...
RUN_A = "".join(f"{q} Q0 d{d} {d + 1} {9 - d} A\n" for q in QUERIES for d in range(4))
RUN_B = "".join(f"{q} Q0 d{d} {d - 3} {9 - d} B\n" for q in QUERIES for d in range(4, 8))
RANKINGS = {"A": ["d0", "d1", "d2", "d3"], "B": ["d4", "d5", "d6", "d7"]}


@pytest.fixture(scope="module")
def campaign(api: Api) -> tuple[int, dict[str, dict[str, float]]]:
    api.add_user(USER)
    return make_collection(api, "cal-campaign", queries=3, docs=8, features=True)


def _build(api: Api, cid: int, **params: Any) -> Any:
    files = [("runs", (n, t.encode(), "text/plain")) for n, t in (("A", RUN_A), ("B", RUN_B))]
    return api.post("admin", f"/api/v1/admin/collections/{cid}/pools", files=files, params=params)


def _picks(api: Api, pool_id: int) -> dict[str, list[str]]:
    r = api.get("admin", f"/api/v1/admin/pools/{pool_id}")
    assert r.status_code == 200, r.text
    assert r.json()["allocation"] == "campaign"
    rows = sorted(
        (d for d in r.json()["documents_shown"] if d["pick"] is not None),
        key=lambda d: (d["query_id"], d["pick"]),
    )
    out: dict[str, list[str]] = {}
    for d in rows:
        out.setdefault(d["query_id"], []).append(d["doc_id"])
    return out


def _judge(api: Api, cid: int, pool_id: int, scores: dict[str, dict[str, float]]) -> None:
    """A plan of one graded task per query over the pool's picks, every task judged."""
    plan = {
        "collection_id": cid,
        "assessors": [USER],
        "name": f"judge-pool{pool_id}",
        "scheme": "balanced",
        "per_query": {"graded": 1},
        "pool": {"mode": "runs", "pool_id": pool_id},
    }
    created = api.post("admin", "/api/v1/admin/plans", json=plan)
    assert created.status_code == 201, created.text
    with api.db.read() as s:
        tasks = s.execute(
            select(Task.id, Query.external_id)
            .join(Query, Query.id == Task.query_id)
            .where(Task.id.in_(created.json()["task_ids"]))
        ).all()
    for task_id, qid in tasks:
        judge_task(api, USER, task_id, scores[qid])


def test_campaign_cal_seeds_then_tops_up_by_the_model(api: Api, campaign) -> None:
    cid, scores = campaign
    seed = _build(api, cid, method="cal", budget=6, allocation="campaign")
    assert seed.status_code == 201, seed.text
    pool = seed.json()
    assert pool["allocation"] == "campaign" and pool["budget"] == 6
    assert pool["name"] == "cal-100-b6-campaign" and pool["picked"] == 6
    # No labels: the seed, every query's first fused document, then the second of each.
    assert _picks(api, pool["id"]) == {q: ["d0", "d4"] for q in QUERIES}
    listed = api.get("admin", f"/api/v1/admin/collections/{cid}/pools").json()
    assert [(p["name"], p["allocation"]) for p in listed] == [("cal-100-b6-campaign", "campaign")]

    _judge(api, cid, pool["id"], scores)
    # The graded oracle: relevant when grade = score // 2 ≥ 1 (score ≥ 2).
    labels = {q: {d: scores[q][d] >= 2 for d in ("d0", "d4")} for q in QUERIES}
    assert {v for known in labels.values() for v in known.values()} == {True, False}
    more = _build(api, cid, method="cal", budget=12, allocation="campaign", name="round-2")
    assert more.status_code == 201, more.text
    assert more.json()["summary"]["picked_judged"] == 6 and more.json()["picked"] == 12
    got = _picks(api, more.json()["id"])
    rankings = {q: RANKINGS for q in QUERIES}
    expected = cal_campaign_build(rankings, stored_vectors(api, cid), labels, 12)
    assert expected.fitted and expected.judged == 6
    assert got == {q: list(expected.picks[q]) for q in QUERIES if expected.picks[q]}
    # the documents picked (and judged) before stay, first
    assert all(got[q][:2] == ["d0", "d4"] for q in QUERIES)
    # the feedback changed the build: without it, the seed goes on in turns
    blind = _build(
        api, cid, method="cal", budget=12, allocation="campaign", name="blind", feedback=False
    )
    assert _picks(api, blind.json()["id"]) == {q: ["d0", "d4", "d1", "d5"] for q in QUERIES}
    assert got != _picks(api, blind.json()["id"])
    # a budget below the judged documents keeps them and picks nothing
    few = _build(api, cid, method="cal", budget=2, allocation="campaign", name="few")
    assert few.status_code == 201, few.text
    assert _picks(api, few.json()["id"]) == {q: ["d0", "d4"] for q in QUERIES}


def _stored(api: Api, cid: int) -> int:
    with api.db.read() as s:
        return int(
            s.scalar(
                select(func.count())
                .select_from(CampaignPool)
                .where(CampaignPool.collection_id == cid)
            )
            or 0
        )


def test_campaign_allocation_needs_cal_and_a_budget(api: Api, campaign) -> None:
    cid, _ = campaign
    before = _stored(api, cid)
    mtf = _build(api, cid, method="mtf", budget=6, allocation="campaign", name="no-1")
    assert mtf.status_code == 422
    assert "allocation 'campaign'" in mtf.text and "for method 'cal', not 'mtf'" in mtf.text
    whole = _build(api, cid, method="cal", allocation="campaign", name="no-2")
    assert whole.status_code == 422 and "needs a budget" in whole.text
    odd = _build(api, cid, method="cal", budget=6, allocation="everywhere", name="no-3")
    assert odd.status_code == 422
    body = {"stored_runs": "all", "method": "depth", "budget": 5, "allocation": "campaign"}
    stored = api.post("admin", f"/api/v1/admin/collections/{cid}/pools", json=body)
    assert stored.status_code == 422 and "for method 'cal', not 'depth'" in stored.text
    assert _stored(api, cid) == before
    # the default stays a budget per query
    per_query = _build(api, cid, method="cal", budget=1, name="per-query")
    assert per_query.status_code == 201 and per_query.json()["allocation"] == "query"
    assert per_query.json()["picked"] == 3
