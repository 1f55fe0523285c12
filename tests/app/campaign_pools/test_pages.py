"""The collection page's "Pool from runs" form and a pool's page (TestClient, cookie session +
CSRF forms): upload runs → the pool's table (runs and ranks per document) → the plan form
plans from it; a bad file is listed with its line and nothing is stored; assessors get 403;
no CSRF field, 403; cal with one budget over the campaign (the allocation field)."""

from __future__ import annotations

import html
import re
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.kernel.models import CampaignPool, Document, PoolDocument, Query, Task
from tests.app.web.support import hidden_csrf, login, trec_collection

RUN_A = b"1 Q0 d3 1 3 A\n1 Q0 d1 2 2 A\n1 Q0 d4 3 1 A\n2 Q0 d5 1 1 A\n"
RUN_B = b"1 Q0 d1 1 9 B\n1 Q0 d0 2 8 B\n1 Q0 d9 3 7 B\n"


def _collection(client: TestClient, csrf: str) -> int:
    return trec_collection(client, csrf, "campaign")


def _stored(where: dict[str, Any]) -> int:
    with where["db"].read() as s:
        return int(s.scalar(select(func.count()).select_from(CampaignPool)) or 0) + int(
            s.scalar(select(func.count()).select_from(PoolDocument)) or 0
        )


def _rows(page: str) -> list[list[str]]:
    table = page.split('id="pool-documents"')[1].split("</table>")[0]
    return [
        [
            html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", row)
        ]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table.split("<tbody>")[1])
    ]


def test_pool_from_runs_in_pages(admin_site: dict[str, Any]) -> None:
    client: TestClient = admin_site["client"]
    login(client, "boss", "boss password 1")
    csrf = hidden_csrf(client.get("/admin").text)
    cid = _collection(client, csrf)
    page = client.get(f"/admin/collections/{cid}").text
    assert 'id="pools-form"' in page and 'name="runs" multiple' in page
    assert '<option value="runs"' in page  # the plan form's pool mode
    assert '<option value="hedge">hedge: Hedge over the runs</option>' in page
    assert '<option value="cal">cal: continuous active learning (needs feature vectors)' in page
    url = f"/admin/collections/{cid}/pools"
    form = {"csrf_token": csrf, "method": "mtf", "depth": "3", "budget": "2", "feedback": "1"}
    files = [("runs", ("A.run", RUN_A, "text/plain")), ("runs", ("B.run", RUN_B, "text/plain"))]
    built = client.post(url, data=form, files=files)
    assert built.status_code == 200, built.text
    assert "Pool &#39;mtf-3-b2&#39; built: 5 documents pooled, 3 picked." in built.text
    # Query 1: MTF takes A's d3, then B's d1 (no judgments: each pick counts as not relevant);
    # fused: d1 = 1/62 + 1/61, d3 = 1/61, d0 = 1/62 (B rank 2; ties by doc id), d4 = 1/63;
    # d9 is not a document of the collection (dropped).
    rows = _rows(built.text)
    assert rows[:4] == [
        ["1", "d1", "1", "2", "0.03252", "A (2), B (1)"],
        ["1", "d3", "2", "1", "0.01639", "A (1)"],
        ["1", "d0", "3", "—", "0.01613", "B (2)"],
        ["1", "d4", "4", "—", "0.01587", "A (3)"],
    ]
    assert rows[4] == ["2", "d5", "1", "1", "0.01639", "A (1)"]
    assert "1 pooled documents are not among their query" in built.text
    pool_id = int(
        re.search(r"/admin/pools/(\d+)", client.get(f"/admin/collections/{cid}").text).group(1)
    )
    only = client.get(f"/admin/pools/{pool_id}", params={"query_id": "2"})
    assert [r[1] for r in _rows(only.text)] == ["d5"]

    # The plan form plans from the pool: its picks, T1 in fused order.
    plan = {
        "csrf_token": csrf, "assessors": ["ann", "ben"], "scheme": "balanced",
        "per_topk": "1", "per_graded": "1", "k": "1", "pool_mode": "runs",
        "pool_id": str(pool_id), "run_order": "1", "seed": "1", "name": "pooled", "create": "1",
    }  # fmt: skip
    created = client.post(f"/admin/collections/{cid}/plan", data=plan)
    assert "Created 4 tasks" in created.text, created.text
    with admin_site["db"].read() as s:
        qids = dict(s.execute(select(Query.id, Query.external_id)).all())
        tasks = list(s.scalars(select(Task).where(Task.collection_id == cid)))
    assert {qids[t.query_id]: t.doc_ids for t in tasks} == {"1": ["d3", "d1"], "2": ["d5"]}
    topk = {qids[t.query_id]: t.options["initial_order"] for t in tasks if t.method == "topk"}
    assert topk == {"1": ["d1", "d3"], "2": ["d5"]}


def test_bad_run_file_is_listed_with_its_line_and_nothing_is_stored(
    admin_site: dict[str, Any],
) -> None:
    client: TestClient = admin_site["client"]
    login(client, "boss", "boss password 1")
    csrf = hidden_csrf(client.get("/admin").text)
    cid = _collection(client, csrf)
    url = f"/admin/collections/{cid}/pools"
    bad = b"1 Q0 d1 1 2 X\n1 Q0 d2 2\n"
    files = [("runs", ("A.run", RUN_A, "text/plain")), ("runs", ("bad.run", bad, "text/plain"))]
    r = client.post(url, data={"csrf_token": csrf, "method": "depth", "depth": "5"}, files=files)
    assert r.status_code == 422
    assert "The pool was not built; nothing was stored." in r.text
    assert "<li>bad.run, line 2: expected 6 columns" in r.text
    assert "Choose again: <strong>TREC runs: A.run</strong>" in r.text
    assert _stored(admin_site) == 0
    nothing = client.post(url, data={"csrf_token": csrf, "method": "depth"})
    assert nothing.status_code == 422 and "choose at least one TREC run file" in nothing.text
    assert client.post(url, data={"method": "depth"}, files=files).status_code == 403
    assert _stored(admin_site) == 0
    client.cookies.clear()
    login(client, "ann", "ann password 1")
    token = hidden_csrf(client.get("/tasks").text)
    assert client.post(url, data={"csrf_token": token}, files=files).status_code == 403
    assert client.get("/admin/pools/1").status_code == 403


def test_pool_from_runs_over_the_campaign(admin_site: dict[str, Any]) -> None:
    client: TestClient = admin_site["client"]
    login(client, "boss", "boss password 1")
    csrf = hidden_csrf(client.get("/admin").text)
    cid = _collection(client, csrf)
    page = client.get(f"/admin/collections/{cid}").text
    assert '<select id="pool-allocation" name="allocation">' in page
    assert '<option value="campaign">campaign: one budget over all the queries (cal only)' in page
    url = f"/admin/collections/{cid}/pools"
    files = [("runs", ("A.run", RUN_A, "text/plain")), ("runs", ("B.run", RUN_B, "text/plain"))]
    form = {"csrf_token": csrf, "method": "cal", "depth": "3", "allocation": "campaign"}
    whole = client.post(url, data=form, files=files)
    assert whole.status_code == 422 and "needs a budget" in whole.text
    assert '<option value="campaign" selected>' in whole.text
    assert _stored(admin_site) == 0
    with admin_site["db"].write() as s:
        docs = s.scalars(select(Document).where(Document.collection_id == cid))
        for i, doc in enumerate(sorted(docs, key=lambda d: d.id)):
            doc.features = [float(i % 5)]
    built = client.post(url, data={**form, "budget": "3"}, files=files)
    assert built.status_code == 200, built.text
    assert "Pool &#39;cal-3-b3-campaign&#39; built: 5 documents pooled, 3 picked." in built.text
    assert "budget 3 documents over all the queries (allocation campaign)" in built.text
    # No labels: the seed — query 1's first fused document d1, query 2's d5, query 1's d3.
    picked = [(r[0], r[1]) for r in _rows(built.text) if r[3] != "—"]
    assert picked == [("1", "d1"), ("1", "d3"), ("2", "d5")]
    listed = client.get(f"/admin/collections/{cid}").text.split('id="pools-list"')[1]
    assert '<td class="num">3 in all</td>' in listed


def test_a_pool_being_written_is_shown_as_such_and_not_offered_to_plans(
    admin_site: dict[str, Any],
) -> None:
    """The collection page lists a ``building`` pool with its status and leaves it out of the
    plan form's pools; its page says it is being written and shows no documents."""
    from datetime import timedelta

    from app.campaign_pools import repository
    from app.campaign_pools import service as pools
    from app.kernel.models import utcnow

    client: TestClient = admin_site["client"]
    login(client, "boss", "boss password 1")
    csrf = hidden_csrf(client.get("/admin").text)
    cid = _collection(client, csrf)
    for name, age in (("half", timedelta(seconds=1)), ("dead", timedelta(hours=1))):
        with admin_site["db"].write() as s:
            pool = CampaignPool(
                collection_id=cid,
                name=name,
                pool_method="depth",
                depth=3,
                fusion=pools.FUSION,
                runs=["A"],
                summary={},
                created_at=utcnow() - age,
            )
            pool_id = repository.add_building_pool(s, pool)
            query = s.scalars(select(Query).where(Query.collection_id == cid)).first()
            assert query is not None
            repository.insert_pool_rows(s, pool_id, [(query.id, "d1", 0, 0, 1 / 61, "[]")])
        shown = client.get(f"/admin/pools/{pool_id}").text
        status = "building" if name == "half" else "failed"
        assert f'data-testid="pool-status"><strong>{status}</strong>' in shown
        assert "0 documents pooled, 0 picked" in shown
    page = client.get(f"/admin/collections/{cid}").text
    assert '<strong data-testid="pool-status">building</strong>' in page
    assert '<strong data-testid="pool-status">failed</strong>' in page
    plan_pools = page.split('id="plan-pool-id"')[1].split("</select>")[0]
    assert "half" not in plan_pools and "dead" not in plan_pools
