"""No lost and no doubled judgments under concurrency, on SQLite and Postgres.

Threads released together by a barrier send requests through the real app (TestClient runs
the ASGI app in one event loop; sync endpoints run in its thread pool, each with its own
database connection), then the database itself is inspected.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from sqlalchemy import select

from app.kernel.models import Judgment
from tests.app.conftest import Api
from tests.app.judging.support import make_collection, make_task, pair_body, pool

THREADS = 16


def run_together(n: int, fn: Any) -> list[Any]:
    """Run ``fn(i)`` in ``n`` threads released at once; return results (re-raise errors)."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = fn(i)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    if errors:
        raise errors[0]
    return results


def stored(api: Api, task_id: int) -> list[Judgment]:
    with api.db.read() as s:
        return list(
            s.scalars(select(Judgment).where(Judgment.task_id == task_id).order_by(Judgment.id))
        )


def test_same_judgment_sixteen_times_is_stored_once(api: Api) -> None:
    api.add_user("racer")
    cid = make_collection(api, "race-same", pool("r1", 8))
    tid = make_task(api, cid, "r1", "racer", k=3, seed=4)
    q = api.get("racer", f"/api/v1/tasks/{tid}/next").json()
    body = pair_body(q, "left")
    url = f"/api/v1/tasks/{tid}/judgments"
    responses = run_together(THREADS, lambda _i: api.post("racer", url, json=body))
    assert [r.status_code for r in responses] == [200] * THREADS
    assert len({r.text for r in responses}) == 1  # every caller sees the same next question
    rows = stored(api, tid)
    assert [(r.seq, r.undone, r.outcome) for r in rows] == [(0, False, "left")]


def test_conflicting_judgments_race_one_wins(api: Api) -> None:
    api.add_user("racer2")
    cid = make_collection(api, "race-diff", pool("r2", 8))
    tid = make_task(api, cid, "r2", "racer2", k=3, seed=5)
    q = api.get("racer2", f"/api/v1/tasks/{tid}/next").json()
    url = f"/api/v1/tasks/{tid}/judgments"
    outcomes = ["left", "right"] * (THREADS // 2)
    responses = run_together(
        THREADS, lambda i: api.post("racer2", url, json=pair_body(q, outcomes[i]))
    )
    rows = stored(api, tid)
    assert len(rows) == 1 and rows[0].seq == 0
    winner = rows[0].outcome
    codes = Counter((outcomes[i], r.status_code) for i, r in enumerate(responses))
    assert codes == {
        (winner, 200): THREADS // 2,
        ({"left": "right", "right": "left"}[winner], 409): THREADS // 2,
    }


def test_sixteen_assessors_on_sixteen_tasks(api: Api) -> None:
    cid = make_collection(api, "race-many", pool("m1", 10))
    tasks = {}
    for i in range(THREADS):
        name = f"par{i:02d}"
        api.add_user(name)
        tasks[name] = make_task(api, cid, "m1", name, k=4, seed=100 + i)
    rank = {f"d{i:03d}": i for i in range(10)}

    def judge(i: int) -> tuple[int, list[str]]:
        name = f"par{i:02d}"
        tid = tasks[name]
        q = api.get(name, f"/api/v1/tasks/{tid}/next").json()
        accepted = 0
        while not q["done"]:
            left, right = q["pair"]["left"]["doc_id"], q["pair"]["right"]["doc_id"]
            outcome = "left" if rank[left] < rank[right] else "right"
            r = api.post(name, f"/api/v1/tasks/{tid}/judgments", json=pair_body(q, outcome))
            assert r.status_code == 200, r.text
            accepted += 1
            q = r.json()
        return accepted, api.get(name, f"/api/v1/tasks/{tid}/result").json()["top"]

    results = run_together(THREADS, judge)
    for i, (accepted, top) in enumerate(results):
        assert top == ["d000", "d001", "d002", "d003"]
        rows = stored(api, tasks[f"par{i:02d}"])
        assert [r.seq for r in rows] == list(range(accepted))  # contiguous, none doubled
        assert not any(r.undone for r in rows)
    statuses = api.get("admin", f"/api/v1/collections/{cid}").json()["tasks"]
    assert statuses == {"done": THREADS}


def test_concurrent_undo_and_judge_keep_the_log_contiguous(api: Api) -> None:
    api.add_user("undoer")
    cid = make_collection(api, "race-undo", pool("u1", 10))
    tid = make_task(api, cid, "u1", "undoer", k=3, seed=9)
    q = api.get("undoer", f"/api/v1/tasks/{tid}/next").json()
    for _ in range(4):
        q = api.post("undoer", f"/api/v1/tasks/{tid}/judgments", json=pair_body(q, "left")).json()

    def act(i: int) -> int:
        if i % 2:
            return api.post("undoer", f"/api/v1/tasks/{tid}/undo").status_code
        return api.post(
            "undoer", f"/api/v1/tasks/{tid}/judgments", json=pair_body(q, "left")
        ).status_code

    codes = run_together(8, act)
    assert set(codes) <= {200, 409}
    live = [r.seq for r in stored(api, tid) if not r.undone]
    assert live == list(range(len(live)))
    nxt = api.get("undoer", f"/api/v1/tasks/{tid}/next").json()
    assert nxt["seq"] == len(live)
