"""Study plans through REST (preview, constraints, create) and live progress."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.kernel.models import Query, Task
from tests.app.admin_support import judge_task, make_collection
from tests.app.conftest import Api

USERS = [f"plan{i}" for i in range(1, 6)]


@pytest.fixture(scope="module")
def study(api: Api) -> tuple[int, dict[str, dict[str, float]]]:
    for u in USERS:
        api.add_user(u)
    return make_collection(api, "planning", queries=10, docs=12, features=False)


def _plan(cid: int, **kw) -> dict:
    return {"collection_id": cid, "assessors": USERS, "name": "study", "k": 3, **kw}


def test_rotation_preview_then_create(api: Api, study) -> None:
    cid, _ = study
    body = _plan(cid, pool={"mode": "sample", "n": 8, "seed": 3})
    r = api.post("admin", "/api/v1/admin/plans/preview", json=body)
    assert r.status_code == 200, r.text
    preview = r.json()
    assert preview["ok"] and preview["violations"] == []
    assert len(preview["tasks"]) == 40  # 10 queries x 2 methods x 2 assessors
    assert set(preview["pool_sizes"].values()) == {8}
    # Grid: every assessor sees 8 of the 10 queries (4 folds of 2), never one under both tools.
    for row in preview["grid"].values():
        assert len(row) == 8 and set(row.values()) <= {"topk", "graded"}
    assert preview["csv"].startswith("assessor,query_id,method,label\n")
    with api.db.read() as s:
        before = len(list(s.scalars(select(Task.id).where(Task.collection_id == cid))))
    assert before == 0  # the preview writes nothing

    r = api.post("admin", "/api/v1/admin/plans", json=body)
    assert r.status_code == 201, r.text
    ids = r.json()["task_ids"]
    assert len(ids) == 40
    with api.db.read() as s:
        tasks = list(s.scalars(select(Task).where(Task.id.in_(ids))))
        qids = dict(s.execute(select(Query.id, Query.external_id)).all())
    assert {t.plan for t in tasks} == {"study:A1", "study:A2"}
    # Assessors of one query share one pool (agreement needs the same documents).
    pools: dict[str, set[tuple[str, ...]]] = {}
    for t in tasks:
        pools.setdefault(qids[t.query_id], set()).add(tuple(t.doc_ids))
        assert t.k == 3 and len(t.doc_ids) == 8
    assert all(len(p) == 1 for p in pools.values())
    # Planning the same again collides with the existing tasks.
    again = api.post("admin", "/api/v1/admin/plans", json=body)
    assert again.status_code == 422
    assert {v["code"] for v in again.json()["detail"]} == {"exists"}


def test_invalid_csv_plan_creates_nothing(api: Api, study) -> None:
    cid, _ = study
    csv = "assessor,query_id,method\nplan1,101,topk\nplan1,101,graded\nghost,102,topk\n"
    body = _plan(cid, scheme="csv", csv=csv, query_ids=["101", "102"], name="custom")
    preview = api.post("admin", "/api/v1/admin/plans/preview", json=body).json()
    codes = {v["code"] for v in preview["violations"] if v["severity"] == "error"}
    assert {"both_methods", "unknown_user", "exists"} <= codes
    assert not preview["ok"]
    r = api.post("admin", "/api/v1/admin/plans", json=body)
    assert r.status_code == 422
    with api.db.read() as s:
        assert not list(s.scalars(select(Task.id).where(Task.plan == "custom")))
    bad_csv = api.post(
        "admin",
        "/api/v1/admin/plans/preview",
        json=_plan(cid, scheme="csv", csv="assessor,query_id,method\nplan1,101,sorting\n"),
    )
    assert bad_csv.status_code == 422
    assert bad_csv.json()["detail"][0]["line"] == 2


def test_balanced_plan_and_progress(api: Api) -> None:
    cid, scores = make_collection(api, "progress", queries=4, docs=6, features=False)
    body = {
        "collection_id": cid,
        "assessors": USERS,
        "scheme": "balanced",
        "per_query": {"topk": 1, "graded": 1},
        "seed": 5,
        "k": 2,
        "name": "bal",
        "options": {"topk": {"pair_cache": False}},
    }
    preview = api.post("admin", "/api/v1/admin/plans/preview", json=body).json()
    assert preview["ok"], preview["violations"]
    created = api.post("admin", "/api/v1/admin/plans", json=body).json()["task_ids"]
    assert len(created) == 8
    prog = api.get("admin", f"/api/v1/admin/collections/{cid}/progress").json()
    assert prog["totals"]["tasks"]["pending"] == 8
    assert prog["totals"]["judgments"] == 0
    start_remaining = prog["totals"]["expected_remaining"]
    assert start_remaining > 0
    # A simulated assessor finishes one topk task; progress moves.
    task = next(t for t in prog["tasks"] if t["method"] == "topk")
    assert task["max_remaining"] >= task["expected_remaining"] > 0
    judge_task(api, task["assessor"], task["id"], scores[task["query_id"]])
    after = api.get("admin", f"/api/v1/admin/collections/{cid}/progress").json()
    row = next(t for t in after["tasks"] if t["id"] == task["id"])
    assert row["status"] == "done" and row["expected_remaining"] == 0
    assert row["judgments"] > 0 and row["active_ms"] == 1000 * row["judgments"]
    assert after["totals"]["tasks"]["done"] == 1
    assert after["totals"]["judgments"] == row["judgments"]
    assert after["totals"]["expected_remaining"] < start_remaining
    who = next(a for a in after["by_assessor"] if a["assessor"] == task["assessor"])
    assert who["judgments"] == row["judgments"] and who["last_activity"] is not None
    query = next(q for q in after["by_query"] if q["query_id"] == task["query_id"])
    assert query["tasks"]["done"] == 1
    points = after["timeline"]["points"]
    assert sum(p["topk"] for p in points) == row["judgments"]
    workload = api.get("admin", "/api/v1/admin/users/workload").json()
    mine = next(w for w in workload if w["username"] == task["assessor"])
    assert mine["tasks"]["done"] >= 1 and mine["judgments"] >= row["judgments"]


def test_concurrent_conflicting_plans_exactly_one_wins(
    api: Api, study, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two plans created at the same moment, one giving plan1 query 101 under topk and the
    other under graded: each passes the check alone, together they break "no assessor sees a
    query under both methods". Exactly one is created; the other gets a 422 naming the
    conflict. The check must run inside the inserting transaction (SQLite: BEGIN IMMEDIATE;
    Postgres: the collection row locked FOR UPDATE), which the slowed-down task validation
    below would otherwise expose: both checks would pass before either insert commits."""
    import threading
    import time

    from app.kernel.errors import Invalid
    from app.planning import service as planning
    from app.planning.spec import PlanSpec
    from app.tasks import service as tasks

    cid, _ = make_collection(api, "race", queries=2, docs=6, features=False)
    real_open = tasks.open_session  # a plan's tasks are made (and checked) by tasks.new_task

    def slow_open(*args, **kwargs):
        time.sleep(0.3)  # widens the window between the check and the commit
        return real_open(*args, **kwargs)

    monkeypatch.setattr(tasks, "open_session", slow_open)

    def spec(method: str) -> PlanSpec:
        return PlanSpec(
            collection_id=cid,
            assessors=["plan1"],
            query_ids=["101"],
            scheme="csv",
            csv=f"assessor,query_id,method\nplan1,101,{method}\n",
            name=f"race-{method}",
            k=2,
        )

    for method in ("topk", "graded"):  # each plan alone is valid
        assert planning.preview_plan(db=api.db, spec=spec(method)).ok

    barrier = threading.Barrier(2)
    results: dict[str, object] = {}

    def create(method: str) -> None:
        barrier.wait()
        try:
            results[method] = planning.create_plan(db=api.db, spec=spec(method))
        except Exception as exc:  # collected and asserted below
            results[method] = exc

    threads = [threading.Thread(target=create, args=(m,)) for m in ("topk", "graded")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(results) == 2
    won = [m for m, r in results.items() if isinstance(r, planning.CreatedPlan)]
    lost = [m for m, r in results.items() if not isinstance(r, planning.CreatedPlan)]
    assert len(won) == 1 and len(lost) == 1, results
    err = results[lost[0]]
    assert isinstance(err, Invalid) and err.status_code == 422
    assert [v["code"] for v in err.detail] == ["both_methods"]
    assert f"already judges query 101 with {won[0]}" in err.detail[0]["message"]
    with api.db.read() as s:
        rows = list(s.scalars(select(Task).where(Task.collection_id == cid)))
    assert [(t.method, t.plan) for t in rows] == [(won[0], f"race-{won[0]}")]


def test_create_plan_conflict_over_rest_names_it(api: Api, study) -> None:
    """The losing side of such a race, seen through REST: 422 with the conflict's message."""
    cid, _ = make_collection(api, "conflict", queries=1, docs=5, features=False)
    csv = "assessor,query_id,method\nplan2,101,{}\n"
    first = _plan(cid, scheme="csv", csv=csv.format("graded"), query_ids=["101"], name="g")
    second = _plan(cid, scheme="csv", csv=csv.format("topk"), query_ids=["101"], name="t")
    assert api.post("admin", "/api/v1/admin/plans", json=first).status_code == 201
    r = api.post("admin", "/api/v1/admin/plans", json=second)
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert [v["code"] for v in detail] == ["both_methods"]
    assert "plan2 already judges query 101 with graded" in detail[0]["message"]


def test_plan_fit_is_the_rotation_and_balanced_rule() -> None:
    """The one plan-fit rule (the plan form shows it for every number of ticked assessors):
    shifts 0,2 need four assessors, 2 x per-query at most the assessors, at least two
    assessors, and a rotation needs as many queries as assessors."""
    from app.planning.fit import fitting_per_query, fitting_shifts, plan_fit
    from labeling.study.assignment import fold_rotation

    assert [fitting_shifts(m) for m in (2, 3, 4, 7)] == ["0", "0", "0,2", "0,2"]
    assert [fitting_per_query(m) for m in (0, 1, 2, 3, 4, 9)] == [1, 1, 1, 1, 2, 2]
    assert plan_fit(1, 10)["problem"].startswith("Choose at least two assessors")
    assert "3 < 4" in plan_fit(4, 3)["problem"]
    assert plan_fit(4, 0)["problem"] is None  # no queries yet: nothing to say about them
    fit = plan_fit(4, 8)
    assert fit == {"assessors": 4, "queries": 8, "shifts": "0,2", "per_query": 2, "problem": None}
    # What fits is what the core accepts: the fitting shifts make a valid rotation.
    for m in (2, 3, 4, 5):
        shifts = tuple(int(x) for x in fitting_shifts(m).split(","))
        names = [f"a{i}" for i in range(m)]
        assert fold_rotation(names, [f"q{i}" for i in range(2 * m)], shifts=shifts).entries
