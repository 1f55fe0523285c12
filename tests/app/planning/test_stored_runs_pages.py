"""The planner page names a run stored on the collection (the select beside the run file
input): the tasks it creates have the pools and priors the same run uploaded as a file gives;
an unknown name, or a file and a name together, come back with the error and create nothing."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.kernel.models import Query, Task
from tests.app.web.support import hidden_csrf, login, trec_collection

# Query 1: d3 (3), d1 (2), d4 (1); query 2: d5. The top 2 of query 1 are d3 and d1.
RUN_A = b"1 Q0 d3 1 3 A\n1 Q0 d1 2 2 A\n1 Q0 d4 3 1 A\n2 Q0 d5 1 1 A\n"


def _collection_with_run(client: TestClient, csrf: str) -> int:
    cid = trec_collection(client, csrf, "planner-runs")
    r = client.post(
        f"/admin/collections/{cid}/runs",
        data={"csrf_token": csrf},
        files=[("run", ("A", RUN_A, "text/plain"))],
    )
    assert r.status_code == 200, r.text
    return cid


def _plan(csrf: str, assessors: list[str], name: str, **extra: str) -> dict[str, Any]:
    return {
        "csrf_token": csrf, "assessors": assessors, "scheme": "balanced", "per_topk": "1",
        "per_graded": "1", "k": "1", "pool_mode": "run", "run_depth": "2", "prior": "run",
        "seed": "1", "name": name, "create": "1", **extra,
    }  # fmt: skip


def _made(db: Any, cid: int, who: set[str]) -> dict[tuple[str, str], Any]:
    from app.kernel.models import User

    with db.read() as s:
        qids = dict(s.execute(select(Query.id, Query.external_id)).all())
        users = dict(s.execute(select(User.id, User.username)).all())
        tasks = s.scalars(select(Task).where(Task.collection_id == cid))
        return {
            (qids[t.query_id], t.method): (
                t.doc_ids,
                t.options.get("initial_order"),
                t.options.get("prior"),
            )
            for t in tasks
            if users[t.assessor_id] in who
        }


def test_planner_plans_from_a_stored_run_as_from_its_file(admin_site: dict[str, Any]) -> None:
    client: TestClient = admin_site["client"]
    login(client, "boss", "boss password 1")
    csrf = hidden_csrf(client.get("/admin").text)
    cid = _collection_with_run(client, csrf)
    page = client.get(f"/admin/collections/{cid}").text
    select_html = page.split('name="stored_run"')[1].split("</select>")[0]
    assert '<option value="A">A</option>' in select_html

    url = f"/admin/collections/{cid}/plan"
    preview = client.post(
        url, data={**_plan(csrf, ["cat", "dan"], "named", stored_run="A"), "create": ""}
    )
    assert preview.status_code == 200 and "Plan preview" in preview.text
    # Its "Create tasks" form carries the name over (no run text).
    assert 'name="stored_run" value="A"' in preview.text
    assert 'name="pool_run_text"' not in preview.text
    named = client.post(url, data=_plan(csrf, ["cat", "dan"], "named", stored_run="A"))
    assert "Created 4 tasks" in named.text, named.text[:2000]
    filed = client.post(
        url,
        data=_plan(csrf, ["ann", "ben"], "filed"),
        files={"pool_run": ("A.run", RUN_A, "text/plain")},
    )
    assert "Created 4 tasks" in filed.text, filed.text[:2000]
    by_name = _made(admin_site["db"], cid, {"cat", "dan"})
    by_file = _made(admin_site["db"], cid, {"ann", "ben"})
    assert by_name == by_file
    assert by_name["1", "topk"] == (["d3", "d1"], ["d3", "d1"], "run:A")
    assert by_name["2", "topk"] == (["d5"], ["d5"], "run:A")

    with admin_site["db"].read() as s:
        before = int(s.scalar(select(func.count()).select_from(Task)) or 0)
    unknown = client.post(url, data=_plan(csrf, ["ann", "ben"], "nope", stored_run="nope"))
    assert unknown.status_code == 422 and "&#39;nope&#39;" in unknown.text
    both = client.post(
        url,
        data=_plan(csrf, ["ann", "ben"], "both", stored_run="A"),
        files={"pool_run": ("A.run", RUN_A, "text/plain")},
    )
    assert both.status_code == 422 and "not both" in both.text
    with admin_site["db"].read() as s:
        assert int(s.scalar(select(func.count()).select_from(Task)) or 0) == before
