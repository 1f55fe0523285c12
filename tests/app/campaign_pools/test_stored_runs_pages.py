"""The runs page's "Pool these runs" form (TestClient, cookie session + CSRF forms): the ticked
stored runs become the pool the same files would give, and the pool's page is linked; an
unknown run or none ticked comes back with the error and nothing stored; no CSRF field and
assessors get 403; the allocation over the campaign (cal only) is posted, kept on a refusal and
shown on the pool's page."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func, select

from app.campaign_pools import service as pools
from app.kernel.models import CampaignPool, Document, PoolDocument
from tests.app.web.support import hidden_csrf, login, upload_runs


def _stored(db: Any) -> int:
    with db.read() as s:
        return int(s.scalar(select(func.count()).select_from(CampaignPool)) or 0) + int(
            s.scalar(select(func.count()).select_from(PoolDocument)) or 0
        )


def _rows(db: Any, pool_id: int) -> list[tuple[Any, ...]]:
    _view, rows = pools.get_pool(db=db, pool_id=pool_id)
    return [(r.query_id, r.doc_id, r.position, r.pick, r.fused, r.hits) for r in rows]


def test_pool_these_runs_equals_the_files_pool(campaign_site: dict[str, Any]) -> None:
    client, cid, db = campaign_site["client"], campaign_site["cid"], campaign_site["db"]
    login(client, "boss", "boss password 1")
    assert 'id="pool-runs-form"' not in client.get(f"/admin/collections/{cid}/runs").text
    csrf = upload_runs(client, cid, campaign_site["runs"])
    page = client.get(f"/admin/collections/{cid}/runs").text
    assert 'id="pool-runs-form"' in page
    assert '<option value="hedge">hedge: Hedge over the runs</option>' in page
    assert '<option value="cal">cal: continuous active learning (needs feature vectors)' in page
    ticked = re.findall(r'name="stored_runs" value="([^"]+)" checked', page)
    assert ticked == list(campaign_site["runs"])  # every stored run, ticked by default
    form = {
        "csrf_token": csrf,
        "stored_runs": ["weak", "strong"],
        "method": "mtf",
        "depth": "5",
        "budget": "4",
        "feedback": "1",
    }
    r = client.post(f"/admin/collections/{cid}/runs/pool", data=form, follow_redirects=False)
    assert r.status_code == 303, r.text
    pool_id = int(re.fullmatch(r"/admin/pools/(\d+)", r.headers["location"]).group(1))
    shown = client.get(r.headers["location"])
    assert "built from 2 stored runs" in shown.text and 'id="pool-documents"' in shown.text
    files = {name: campaign_site["runs"][name] for name in ("weak", "strong")}
    spec = pools.BuildSpec(
        collection_id=cid, runs=files, method="mtf", depth=5, budget=4, name="from files"
    )
    built = pools.build_pool(db=db, spec=spec)
    assert built.runs == ["weak", "strong"]
    assert _rows(db, pool_id) == _rows(db, built.id)
    assert len(_rows(db, pool_id)) > 6  # the queries' depth-5 pools, not one query's


def test_pool_these_runs_refusals_store_nothing(campaign_site: dict[str, Any]) -> None:
    client, cid, db = campaign_site["client"], campaign_site["cid"], campaign_site["db"]
    login(client, "boss", "boss password 1")
    csrf = upload_runs(client, cid, campaign_site["runs"])
    url = f"/admin/collections/{cid}/runs/pool"
    unknown = client.post(
        url, data={"csrf_token": csrf, "stored_runs": ["strong", "nope"], "budget": "3"}
    )
    assert unknown.status_code == 422
    assert "The pool was not built; nothing was stored." in unknown.text
    assert "no stored run &#39;nope&#39;" in unknown.text
    # the form keeps what was posted: strong ticked, fair not, the budget
    ticked = re.findall(r'name="stored_runs" value="([^"]+)" checked', unknown.text)
    assert ticked == ["strong"]
    assert (
        'id="pool-runs-budget" name="budget" type="number" min="1" class="num-input" value="3"'
        in (unknown.text)
    )
    none = client.post(url, data={"csrf_token": csrf, "method": "depth"})
    assert none.status_code == 422 and "tick at least one stored run" in none.text
    bad = client.post(url, data={"csrf_token": csrf, "stored_runs": ["strong"], "depth": "x"})
    assert bad.status_code == 422 and "depth must be an integer" in bad.text
    assert client.post(url, data={"stored_runs": ["strong"]}).status_code == 403
    assert _stored(db) == 0
    client.cookies.clear()
    login(client, "ann", "ann password 1")
    token = hidden_csrf(client.get("/tasks").text)
    refused = client.post(url, data={"csrf_token": token, "stored_runs": ["strong"]})
    assert refused.status_code == 403
    assert _stored(db) == 0


def _give_vectors(db: Any, cid: int) -> None:
    """A feature vector on every document of the collection (cal needs them)."""
    with db.write() as s:
        docs = s.scalars(
            select(Document).where(Document.collection_id == cid).order_by(Document.id)
        )
        for i, doc in enumerate(docs):
            doc.features = [float(i % 7), float(len(doc.external_id))]


def test_pool_these_runs_over_the_campaign(campaign_site: dict[str, Any]) -> None:
    client, cid, db = campaign_site["client"], campaign_site["cid"], campaign_site["db"]
    login(client, "boss", "boss password 1")
    csrf = upload_runs(client, cid, campaign_site["runs"])
    page = client.get(f"/admin/collections/{cid}/runs").text
    assert '<select id="pool-runs-allocation" name="allocation">' in page
    assert '<option value="query" selected>query: the budget per query</option>' in page
    url = f"/admin/collections/{cid}/runs/pool"
    form = {"csrf_token": csrf, "stored_runs": ["weak", "strong"], "method": "mtf",
            "depth": "5", "budget": "7", "allocation": "campaign"}  # fmt: skip
    refused = client.post(url, data=form)
    assert refused.status_code == 422 and "for method &#39;cal&#39;, not &#39;mtf&#39;" in (
        refused.text
    )
    # the form keeps the allocation posted
    assert '<option value="campaign" selected>' in refused.text
    assert _stored(db) == 0
    _give_vectors(db, cid)
    r = client.post(url, data={**form, "method": "cal"}, follow_redirects=False)
    assert r.status_code == 303, r.text
    shown = client.get(r.headers["location"]).text
    assert "budget 7 documents over all the queries (allocation campaign)" in shown
    assert "7 picked for judging" in shown
    with db.read() as s:
        assert s.scalars(select(CampaignPool.allocation)).all() == ["campaign"]
