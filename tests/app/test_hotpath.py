"""The judging hot path (app.hotpath) answers exactly as the FastAPI routes do.

Two identical tasks (same query, seed and assessor) are driven side by side: one through the
hot path, one with it switched off (``app.hot_path = None``, so FastAPI's routes answer). Every
response (status, JSON body with the task id normalised, and the security headers) must be the
same, over a whole task with retries, conflicts, bad input and auth failures, on SQLite and
Postgres. A spy on the hot path's responder proves which path answered.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import update

from app.models import Task
from tests.app.conftest import Api
from tests.app.test_service_api import make_collection, make_task, oracle_outcome, pool

# Headers that legitimately differ between two responses.
VOLATILE = {"date", "server", "content-length"}


@pytest.fixture(scope="module")
def twins(api: Api) -> dict[str, Any]:
    api.add_user("hp1")
    api.add_user("hp2")
    cid = make_collection(api, "hotpath", pool("hq", 12))
    fast = make_task(api, cid, "hq", "hp1", k=3, seed=11)
    slow = make_task(api, cid, "hq", "hp1", k=3, seed=11)
    other = make_task(api, cid, "hq", "hp2", k=3, seed=11)
    return {"cid": cid, "fast": fast, "slow": slow, "other": other}


class Spy:
    """Counts the responses the hot path writes itself."""

    def __init__(self, api: Api) -> None:
        self.hot = api.client.app.hot_path
        assert self.hot is not None
        self.count = 0
        original = self.hot._respond

        async def respond(*args: Any, **kwargs: Any) -> None:
            self.count += 1
            await original(*args, **kwargs)

        self.hot._respond = respond  # type: ignore[method-assign]
        self._original = original

    def restore(self) -> None:
        self.hot._respond = self._original  # type: ignore[method-assign]


@pytest.fixture
def spy(api: Api) -> Iterator[Spy]:
    s = Spy(api)
    yield s
    s.restore()


@contextmanager
def framework_only(api: Api) -> Iterator[None]:
    app = api.client.app
    saved, app.hot_path = app.hot_path, None
    try:
        yield
    finally:
        app.hot_path = saved


def normalised(body: Any, task_id: int) -> Any:
    """``body`` with the task's own id replaced (the twins differ only in their ids)."""
    if isinstance(body, dict):
        return {
            k: ("TASK" if k == "task_id" and v == task_id else normalised(v, task_id))
            for k, v in body.items()
        }
    if isinstance(body, list):
        return [normalised(v, task_id) for v in body]
    if isinstance(body, str):
        return body.replace(f"task {task_id}", "task TASK")
    return body


def call(api: Api, method: str, path: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
    r = api.client.request(method, path, **kw)
    headers = {k: v for k, v in r.headers.items() if k not in VOLATILE}
    return r.status_code, r.json(), headers


def both(
    api: Api, spy: Spy, twins: dict[str, Any], method: str, suffix: str, **kw: Any
) -> tuple[int, Any]:
    """The same request for the fast twin (hot path) and the slow twin (routes); asserts the
    answers are equal and that the hot path answered the first one. Returns (status, body)."""
    fast, slow = twins["fast"], twins["slow"]
    before = spy.count
    f_status, f_body, f_headers = call(api, method, f"/api/v1/tasks/{fast}{suffix}", **kw)
    assert spy.count == before + 1, "the hot path did not answer"
    with framework_only(api):
        s_status, s_body, s_headers = call(api, method, f"/api/v1/tasks/{slow}{suffix}", **kw)
    assert spy.count == before + 1
    assert (f_status, normalised(f_body, fast)) == (s_status, normalised(s_body, slow))
    assert f_headers == s_headers
    return f_status, f_body


def test_hot_path_answers_like_the_routes(api: Api, spy: Spy, twins: dict[str, Any]) -> None:
    auth = api.auth("hp1")
    rank = {f"d{i:03d}": i for i in range(12)}
    status, q = both(api, spy, twins, "GET", "/next", headers=auth)
    assert status == 200 and q["done"] is False
    steps = 0
    while not q["done"]:
        pair = {"seq": q["seq"], "left": q["pair"]["left"]["doc_id"]}
        pair |= {"right": q["pair"]["right"]["doc_id"], "active_ms": 30}
        body = {**pair, "outcome": oracle_outcome(q, rank)}
        if steps == 2:  # a pair that is not the pending one: 409 with the current question
            wrong = {**body, "left": body["right"], "right": body["left"], "outcome": "tie"}
            wrong["left"] = "d011" if body["left"] != "d011" else "d010"
            status, conflict = both(api, spy, twins, "POST", "/judgments", headers=auth, json=wrong)
            assert status in (409, 422) and "detail" in conflict
        if steps == 3:  # a seq from the future
            ahead = {**body, "seq": q["seq"] + 5}
            status, conflict = both(api, spy, twins, "POST", "/judgments", headers=auth, json=ahead)
            assert status == 409 and conflict["current"]["seq"] == q["seq"]
        status, nxt = both(api, spy, twins, "POST", "/judgments", headers=auth, json=body)
        assert status == 200
        if steps == 1:  # the identical retry stores nothing and answers the same
            status, again = both(api, spy, twins, "POST", "/judgments", headers=auth, json=body)
            assert status == 200 and again == nxt
            changed = {**body, "outcome": "left" if body["outcome"] == "right" else "right"}
            status, conflict = both(
                api, spy, twins, "POST", "/judgments", headers=auth, json=changed
            )
            assert status == 409 and "already answered" in conflict["detail"]
        q = nxt
        steps += 1
    status, done = both(api, spy, twins, "GET", "/next", headers=auth)
    assert status == 200 and done["done"] is True
    late = {"seq": 0, "left": "d000", "right": "d001", "outcome": "left"}
    status, _ = both(api, spy, twins, "POST", "/judgments", headers=auth, json=late)
    assert status == 409
    with framework_only(api):
        fast_result = api.get("hp1", f"/api/v1/tasks/{twins['fast']}/result").json()
        slow_result = api.get("hp1", f"/api/v1/tasks/{twins['slow']}/result").json()
    assert normalised(fast_result, twins["fast"]) == normalised(slow_result, twins["slow"])
    assert fast_result["top"] == ["d000", "d001", "d002"]


@pytest.fixture(scope="module")
def fresh_twins(api: Api, twins: dict[str, Any]) -> dict[str, Any]:
    """Another pair of identical, unanswered tasks (the error cases leave them unchanged)."""
    fast = make_task(api, twins["cid"], "hq", "hp1", k=3, seed=12)
    slow = make_task(api, twins["cid"], "hq", "hp1", k=3, seed=12)
    return {**twins, "fast": fast, "slow": slow}


@pytest.mark.parametrize(
    "case",
    ["bad token", "other assessor", "admin judges", "missing task", "seq type", "extra key"],
)
def test_errors_are_the_routes_errors(
    api: Api, spy: Spy, fresh_twins: dict[str, Any], case: str
) -> None:
    body = {"seq": 0, "left": "d000", "right": "d001", "outcome": "left"}
    headers = api.auth("hp1")
    twins = dict(fresh_twins)
    hot = True
    if case == "bad token":
        headers = {"Authorization": "Bearer not-a-token"}
    elif case == "other assessor":
        headers = api.auth("hp2")
    elif case == "admin judges":
        headers = api.auth("admin")
    elif case == "missing task":
        twins = {**twins, "fast": 10**9, "slow": 10**9}
    elif case == "seq type":
        body = {**body, "seq": "zero"}
        hot = False  # an invalid body goes to the routes (422 there)
    elif case == "extra key":
        body = {**body, "shoe_size": 44}
        hot = False
    expected = {
        "bad token": 401,
        "other assessor": 403,
        "admin judges": 403,
        "missing task": 404,
        "seq type": 422,
        "extra key": 422,
    }[case]
    fast, slow = twins["fast"], twins["slow"]
    before = spy.count
    f = call(api, "POST", f"/api/v1/tasks/{fast}/judgments", headers=headers, json=body)
    assert spy.count == before + (1 if hot else 0)
    with framework_only(api):
        s = call(api, "POST", f"/api/v1/tasks/{slow}/judgments", headers=headers, json=body)
    assert f[0] == s[0] == expected
    assert normalised(f[1], fast) == normalised(s[1], slow)
    assert f[2] == s[2]
    if case == "bad token":
        assert f[2]["www-authenticate"] == "Bearer"
    # Nothing was stored by any of them: the tasks still wait for question 0.
    with framework_only(api):
        assert api.get("hp1", f"/api/v1/tasks/{fresh_twins['fast']}/next").json()["seq"] == 0


def test_cancelled_task_is_409_on_both(api: Api, spy: Spy, fresh_twins: dict[str, Any]) -> None:
    cid = fresh_twins["cid"]
    fast = make_task(api, cid, "hq", "hp1", k=3, seed=13)
    slow = make_task(api, cid, "hq", "hp1", k=3, seed=13)
    with api.db.write() as s:
        s.execute(update(Task).where(Task.id.in_([fast, slow])).values(status="cancelled"))
    body = {"seq": 0, "left": "d000", "right": "d001", "outcome": "left"}
    status, error = both(
        api,
        spy,
        {"fast": fast, "slow": slow},
        "POST",
        "/judgments",
        headers=api.auth("hp1"),
        json=body,
    )
    assert status == 409 and "cancelled" in error["detail"]


def test_requests_the_hot_path_leaves_to_the_routes(
    api: Api, spy: Spy, fresh_twins: dict[str, Any]
) -> None:
    tid = fresh_twins["fast"]
    url = f"/api/v1/tasks/{tid}/judgments"
    body = b'{"seq": 0, "left": "d000", "right": "d001", "outcome": "left"}'
    auth = api.auth("hp1")
    before = spy.count
    # No Authorization header (cookie callers; here: none at all) -> the routes' 401.
    assert api.client.get(f"/api/v1/tasks/{tid}/next").status_code == 401
    # Another scheme -> the routes' 401.
    basic = {"Authorization": "Basic eDp5"}
    assert api.client.get(f"/api/v1/tasks/{tid}/next", headers=basic).status_code == 401
    # Not JSON -> the routes decide (422), from the same bytes.
    r = api.client.post(url, content=body, headers={**auth, "Content-Type": "text/plain"})
    assert r.status_code == 422
    # Malformed JSON -> the routes' 422.
    r = api.client.post(url, content=b"{", headers={**auth, "Content-Type": "application/json"})
    assert r.status_code == 422
    # Nested too deep for the JSON parser -> the routes' answer (400), not a 500.
    deep = b"[" * 60_000
    r = api.client.post(url, content=deep, headers={**auth, "Content-Type": "application/json"})
    assert r.status_code in (400, 422), r.text
    # Over the body limit -> the stack's 413.
    big = b" " * (api.settings.max_body_bytes + 1)
    r = api.client.post(url, content=big, headers={**auth, "Content-Type": "application/json"})
    assert r.status_code == 413
    # A trailing slash, a non-numeric or huge id, HEAD: not the hot path's routes.
    slash = api.client.get(f"/api/v1/tasks/{tid}/next/", headers=auth, follow_redirects=False)
    assert slash.status_code in (307, 404)
    assert api.client.get("/api/v1/tasks/abc/next", headers=auth).status_code == 422
    assert api.client.get(f"/api/v1/tasks/{10**20}/next", headers=auth).status_code in (404, 422)
    assert spy.count == before
    # Chunked (no Content-Length): the routes read it, and it is accepted there.
    r = api.client.post(
        url,
        content=iter([body[:10], body[10:]]),
        headers={**auth, "Content-Type": "application/json"},
    )
    assert spy.count == before
    assert r.status_code in (200, 409), r.text  # 409 if d000/d001 is not the first pair
    if r.status_code == 200:
        assert api.client.post(f"/api/v1/tasks/{tid}/undo", headers=auth).status_code == 200


def test_unexpected_error_is_a_json_500(
    api: Api, spy: Spy, fresh_twins: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.services import judging

    def broken(**_kw: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(judging, "next_question", broken)
    r = api.get("hp1", f"/api/v1/tasks/{fresh_twins['fast']}/next")
    assert r.status_code == 500 and r.json() == {"detail": "internal server error"}
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["cache-control"] == "no-store"


def test_graded_tasks_answer_like_the_routes(api: Api, spy: Spy, twins: dict[str, Any]) -> None:
    """Five-grade tasks go through the same hot path: twins compared over a whole task, with
    a retry, a grade out of range (the model's 422, from the routes) and a wrong document."""
    fast = make_task(api, twins["cid"], "hq", "hp1", method="graded", seed=21)
    slow = make_task(api, twins["cid"], "hq", "hp1", method="graded", seed=21)
    pair = {"fast": fast, "slow": slow}
    auth = api.auth("hp1")
    status, q = both(api, spy, pair, "GET", "/next", headers=auth)
    assert status == 200 and "document" in q
    first = True
    while not q["done"]:
        body = {"seq": q["seq"], "doc_id": q["document"]["doc_id"], "grade": q["seq"] % 5}
        if first:
            wrong = {**body, "doc_id": "no-such-doc"}
            status, error = both(api, spy, pair, "POST", "/judgments", headers=auth, json=wrong)
            assert status in (409, 422) and "detail" in error
            before = spy.count
            bad = call(
                api,
                "POST",
                f"/api/v1/tasks/{fast}/judgments",
                headers=auth,
                json={**body, "grade": 7},
            )
            assert bad[0] == 422 and spy.count == before  # invalid: the routes answered
        status, nxt = both(api, spy, pair, "POST", "/judgments", headers=auth, json=body)
        assert status == 200
        if first:
            status, again = both(api, spy, pair, "POST", "/judgments", headers=auth, json=body)
            assert status == 200 and again == nxt
            first = False
        q = nxt
    with framework_only(api):
        grades_fast = api.get("hp1", f"/api/v1/tasks/{fast}/result").json()["grades"]
        grades_slow = api.get("hp1", f"/api/v1/tasks/{slow}/result").json()["grades"]
    assert grades_fast == grades_slow and len(grades_fast) == 12
