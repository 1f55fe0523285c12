"""Pools by continuous active learning (``cal``) through REST: refused (422, nothing stored)
when pooled documents lack feature vectors; without feedback the fused order (the model needs
a relevant and a non-relevant judgment); with a finished task's labels the picks are the
core's: one model fitted on every query's labels (:func:`labeling.study.cal_pool.shared_scores`
over the stored vectors), fixed for the build."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from app.kernel.models import CampaignPool
from labeling.study.cal_pool import ActiveLearning, shared_scores
from labeling.study.campaign_pools import select_pool
from tests.app.admin_support import judge_task, make_collection, stored_vectors
from tests.app.conftest import Api

USER = "calpool1"
# Query 101's documents d0..d7, relevant (grade ≥ 1 from the oracle) all but d1 and d6.
RUN_A = "101 Q0 d0 1 9 A\n101 Q0 d2 2 8 A\n101 Q0 d1 3 7 A\n101 Q0 d3 4 6 A\n102 Q0 d5 1 1 A\n"
RUN_B = "101 Q0 d6 1 9 B\n101 Q0 d4 2 8 B\n101 Q0 d5 3 7 B\n101 Q0 d7 4 6 B\n102 Q0 d5 1 5 B\n"
RANKINGS = {"A": ["d0", "d2", "d1", "d3"], "B": ["d6", "d4", "d5", "d7"]}


@pytest.fixture(scope="module")
def collections(api: Api) -> dict[str, Any]:
    api.add_user(USER)
    plain, _ = make_collection(api, "cal-plain", queries=2, docs=8, features=False)
    cid, scores = make_collection(api, "cal-vectors", queries=2, docs=8, features=True)
    return {"plain": plain, "vectors": cid, "scores": scores}


def _build(api: Api, cid: int, **params: Any) -> Any:
    files = [
        ("runs", (name, text.encode(), "text/plain")) for name, text in (("A", RUN_A), ("B", RUN_B))
    ]
    return api.post("admin", f"/api/v1/admin/collections/{cid}/pools", files=files, params=params)


def _picks(api: Api, pool_id: int) -> list[str]:
    r = api.get("admin", f"/api/v1/admin/pools/{pool_id}", params={"query_id": "101"})
    assert r.status_code == 200, r.text
    rows = [d for d in r.json()["documents_shown"] if d["pick"] is not None]
    return [d["doc_id"] for d in sorted(rows, key=lambda d: d["pick"])]


def test_cal_without_vectors_is_refused_and_nothing_is_stored(api: Api, collections) -> None:
    r = _build(api, collections["plain"], method="cal", budget=4)
    assert r.status_code == 422, r.text
    assert "feature vector for every pooled document; 9 have none" in r.text
    with api.db.read() as s:
        stored = s.scalar(
            select(func.count())
            .select_from(CampaignPool)
            .where(CampaignPool.collection_id == collections["plain"])
        )
    assert stored == 0


def test_cal_picks_follow_the_model_over_the_stored_vectors(api: Api, collections) -> None:
    cid = collections["vectors"]
    # No judgments: every pick counts as not relevant, one class, so no model: fused order.
    blind = _build(api, cid, method="cal", budget=4, name="cal-blind")
    assert blind.status_code == 201, blind.text
    assert blind.json()["method"] == "cal"
    assert _picks(api, blind.json()["id"]) == ["d0", "d6", "d2", "d4"]
    r = api.post(
        "admin",
        "/api/v1/tasks",
        json={"collection_id": cid, "query_id": "101", "assessor": USER, "method": "graded"},
    )
    assert r.status_code == 201, r.text
    judge_task(api, USER, r.json()["id"], collections["scores"]["101"])
    seen = _build(api, cid, method="cal", budget=5, name="cal-feedback")
    assert seen.status_code == 201, seen.text
    vectors = stored_vectors(api, cid)
    relevant = {d: d not in ("d1", "d6") for d in vectors["101"]}
    # One model for the build, fitted on every query's labels (here 101's), then fixed.
    rankings = {"101": RANKINGS, "102": {"A": ["d5"], "B": ["d5"]}}
    scores = shared_scores(rankings, vectors, {"101": relevant})
    assert scores is not None
    expected = select_pool(
        RANKINGS,
        "cal",
        None,
        5,
        relevant,
        pooler=ActiveLearning(RANKINGS, vectors["101"], scores=scores["101"]),
    )
    # the documents by the model's log-odds, highest first
    assert list(expected.picks) == sorted(scores["101"], key=lambda d: -scores["101"][d])[:5]
    assert _picks(api, seen.json()["id"]) == list(expected.picks)
    assert expected.known == 5
