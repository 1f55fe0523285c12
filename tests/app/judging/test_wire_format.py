"""The judging loop's wire format, through the one request pipeline (LeanRoute endpoints).

Bearer-token and session-cookie callers reach the same routes. These tests pin what a client
sees: status, JSON body and headers, over a whole topk and a whole graded task with retries,
conflicts, bad input and authentication failures, on SQLite and Postgres. Two identical
tasks (same query, seed and assessor) are driven side by side, one with a bearer token and
one with the session cookie and CSRF header of a browser: every answer must be the same
(status, body with the task id normalised, security headers).
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import update

from app.kernel.models import Task
from tests.app.conftest import Api
from tests.app.judging.support import make_collection, make_task, oracle_outcome, pool

# Headers that legitimately differ between two responses.
VOLATILE = {"date", "server", "content-length"}


@pytest.fixture(scope="module")
def twins(api: Api) -> dict[str, Any]:
    api.add_user("hp1")
    api.add_user("hp2")
    cid = make_collection(api, "wire", pool("hq", 12))
    fast = make_task(api, cid, "hq", "hp1", k=3, seed=11)
    slow = make_task(api, cid, "hq", "hp1", k=3, seed=11)
    other = make_task(api, cid, "hq", "hp2", k=3, seed=11)
    return {"cid": cid, "fast": fast, "slow": slow, "other": other}


def sessions(api: Api) -> dict[str, dict[str, str]]:
    """Browser credentials per user: the session cookie plus the page's CSRF header."""
    from app.auth import sessions as web_sessions
    from app.users import service as users

    found: dict[str, dict[str, str]] = api.__dict__.setdefault("_wire_sessions", {})
    for name in api.tokens:
        if name not in found:
            user = users.get_user(db=api.db, username=name)
            raw, csrf = web_sessions.create_web_session(api.db, user.id)
            found[name] = {
                "Cookie": f"{web_sessions.SESSION_COOKIE}={raw}",
                web_sessions.CSRF_HEADER: csrf,
                "Origin": "http://testserver",
            }
    return found


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
    api: Api, twins: dict[str, Any], method: str, suffix: str, user: str = "hp1", **kw: Any
) -> tuple[int, Any]:
    """The same request for the first twin with ``user``'s bearer token and for the second
    with ``user``'s browser session; asserts equal answers. Returns (status, body)."""
    fast, slow = twins["fast"], twins["slow"]
    f_status, f_body, f_headers = call(
        api, method, f"/api/v1/tasks/{fast}{suffix}", headers=api.auth(user), **kw
    )
    s_status, s_body, s_headers = call(
        api, method, f"/api/v1/tasks/{slow}{suffix}", headers=sessions(api)[user], **kw
    )
    assert (f_status, normalised(f_body, fast)) == (s_status, normalised(s_body, slow))
    assert f_headers == s_headers
    assert f_headers["content-type"] == "application/json"
    assert f_headers["cache-control"] == "no-store"
    assert f_headers["x-content-type-options"] == "nosniff"
    assert f_headers["content-security-policy"].startswith("default-src 'self'")
    return f_status, f_body


def test_bearer_and_cookie_callers_see_the_same_judging_loop(
    api: Api, twins: dict[str, Any]
) -> None:
    rank = {f"d{i:03d}": i for i in range(12)}
    status, q = both(api, twins, "GET", "/next")
    assert status == 200 and q["done"] is False
    steps = 0
    while not q["done"]:
        pair = {"seq": q["seq"], "left": q["pair"]["left"]["doc_id"]}
        pair |= {"right": q["pair"]["right"]["doc_id"], "active_ms": 30}
        body = {**pair, "outcome": oracle_outcome(q, rank)}
        if steps == 2:  # a pair that is not the pending one: 409 with the current question
            wrong = {**body, "left": body["right"], "right": body["left"], "outcome": "tie"}
            wrong["left"] = "d011" if body["left"] != "d011" else "d010"
            status, conflict = both(api, twins, "POST", "/judgments", json=wrong)
            assert status in (409, 422) and "detail" in conflict
        if steps == 3:  # a seq from the future
            ahead = {**body, "seq": q["seq"] + 5}
            status, conflict = both(api, twins, "POST", "/judgments", json=ahead)
            assert status == 409 and conflict["current"]["seq"] == q["seq"]
        status, nxt = both(api, twins, "POST", "/judgments", json=body)
        assert status == 200 and nxt["progress"]["judgments"] == steps + 1
        if steps == 1:  # the identical retry stores nothing and answers the same
            status, again = both(api, twins, "POST", "/judgments", json=body)
            assert status == 200 and again == nxt
            changed = {**body, "outcome": "left" if body["outcome"] == "right" else "right"}
            status, conflict = both(api, twins, "POST", "/judgments", json=changed)
            assert status == 409 and "already answered" in conflict["detail"]
            assert conflict["current"] == nxt
        if steps == 4:  # undo, then answer the same question again
            status, undone = both(api, twins, "POST", "/undo")
            assert status == 200 and undone["seq"] == q["seq"] and undone["pair"] == q["pair"]
            status, nxt = both(api, twins, "POST", "/judgments", json=body)
            assert status == 200
        q = nxt
        steps += 1
    status, done = both(api, twins, "GET", "/next")
    assert status == 200 and done["done"] is True and "seq" not in done
    late = {"seq": 0, "left": "d000", "right": "d001", "outcome": "left"}
    status, _ = both(api, twins, "POST", "/judgments", json=late)
    assert status == 409
    fast_result = api.get("hp1", f"/api/v1/tasks/{twins['fast']}/result").json()
    slow_result = api.get("hp1", f"/api/v1/tasks/{twins['slow']}/result").json()
    assert normalised(fast_result, twins["fast"]) == normalised(slow_result, twins["slow"])
    assert fast_result["top"] == ["d000", "d001", "d002"]


def test_answers_are_compact_utf8_json(api: Api, twins: dict[str, Any]) -> None:
    """The body is written as Starlette's JSONResponse writes it: compact separators, UTF-8
    (not ASCII escapes), with a matching Content-Length."""
    r = api.get("hp2", f"/api/v1/tasks/{twins['other']}/next")
    assert r.status_code == 200
    assert r.content.startswith(b'{"task_id":') and b", " not in r.content.split(b'"pair"')[0]
    assert int(r.headers["content-length"]) == len(r.content)


@pytest.fixture(scope="module")
def fresh_twins(api: Api, twins: dict[str, Any]) -> dict[str, Any]:
    """Another pair of identical, unanswered tasks (the error cases leave them unchanged)."""
    fast = make_task(api, twins["cid"], "hq", "hp1", k=3, seed=12)
    slow = make_task(api, twins["cid"], "hq", "hp1", k=3, seed=12)
    return {**twins, "fast": fast, "slow": slow}


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("other assessor", 403),
        ("admin judges", 403),
        ("missing task", 404),
        ("seq type", 422),
        ("extra key", 422),
        ("no body", 422),
    ],
)
def test_errors_are_the_same_for_both_callers(
    api: Api, fresh_twins: dict[str, Any], case: str, expected: int
) -> None:
    body: Any = {"seq": 0, "left": "d000", "right": "d001", "outcome": "left"}
    user = "hp1"
    twins = dict(fresh_twins)
    if case == "other assessor":
        user = "hp2"
    elif case == "admin judges":
        user = "admin"
    elif case == "missing task":
        twins = {**twins, "fast": 10**9, "slow": 10**9}
    elif case == "seq type":
        body = {**body, "seq": "zero"}
    elif case == "extra key":
        body = {**body, "shoe_size": 44}
    kw = {"json": body} if case != "no body" else {}
    status, error = both(api, twins, "POST", "/judgments", user=user, **kw)
    assert status == expected
    if status == 422:  # FastAPI's shape: a list of {type, loc, msg, input}
        assert isinstance(error["detail"], list) and error["detail"][0]["loc"][0] == "body"
    else:
        assert isinstance(error["detail"], str)
    # Nothing was stored by any of them: the tasks still wait for question 0.
    assert api.get("hp1", f"/api/v1/tasks/{fresh_twins['fast']}/next").json()["seq"] == 0
    assert api.get("hp1", f"/api/v1/tasks/{fresh_twins['slow']}/next").json()["seq"] == 0


def test_authentication_failures(api: Api, fresh_twins: dict[str, Any]) -> None:
    tid = fresh_twins["fast"]
    url = f"/api/v1/tasks/{tid}/judgments"
    body = {"seq": 0, "left": "d000", "right": "d001", "outcome": "left"}
    bad = api.client.post(url, json=body, headers={"Authorization": "Bearer not-a-token"})
    assert bad.status_code == 401 and bad.headers["www-authenticate"] == "Bearer"
    assert bad.json() == {"detail": "invalid or expired token"}
    for headers in ({}, {"Authorization": "Basic eDp5"}, {"Authorization": "Bearer "}):
        r = api.client.get(f"/api/v1/tasks/{tid}/next", headers=headers)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", headers
    # A browser session without its CSRF header (or from another origin) is refused.
    browser = dict(sessions(api)["hp1"])
    csrf = browser.pop("X-CSRF-Token")
    assert api.client.post(url, json=body, headers=browser).status_code == 403
    cross = {**browser, "X-CSRF-Token": csrf, "Origin": "https://evil.example"}
    assert api.client.post(url, json=body, headers=cross).status_code == 403
    assert api.get("hp1", f"/api/v1/tasks/{tid}/next").json()["seq"] == 0


def test_cancelled_task_is_409_for_both(api: Api, fresh_twins: dict[str, Any]) -> None:
    cid = fresh_twins["cid"]
    fast = make_task(api, cid, "hq", "hp1", k=3, seed=13)
    slow = make_task(api, cid, "hq", "hp1", k=3, seed=13)
    with api.db.write() as s:
        s.execute(update(Task).where(Task.id.in_([fast, slow])).values(status="cancelled"))
    body = {"seq": 0, "left": "d000", "right": "d001", "outcome": "left"}
    status, error = both(api, {"fast": fast, "slow": slow}, "POST", "/judgments", json=body)
    assert status == 409 and "cancelled" in error["detail"]
    status, error = both(api, {"fast": fast, "slow": slow}, "POST", "/undo")
    assert status == 409 and "cancelled" in error["detail"]


def test_odd_requests(api: Api, fresh_twins: dict[str, Any]) -> None:
    tid = fresh_twins["fast"]
    url = f"/api/v1/tasks/{tid}/judgments"
    body = b'{"seq": 0, "left": "d000", "right": "d001", "outcome": "left"}'
    auth = api.auth("hp1")
    json_type = {**auth, "Content-Type": "application/json"}
    # Not declared as JSON: the model refuses the raw bytes (422).
    r = api.client.post(url, content=body, headers={**auth, "Content-Type": "text/plain"})
    assert r.status_code == 422
    # Malformed JSON: FastAPI's json_invalid item, with the position.
    r = api.client.post(url, content=b"{", headers=json_type)
    assert r.status_code == 422
    assert r.json()["detail"][0]["type"] == "json_invalid"
    assert r.json()["detail"][0]["loc"] == ["body", 1]
    # Nested past the depth limit: refused before any parser recurses (422, not a 500).
    r = api.client.post(url, content=b"[" * 60_000, headers=json_type)
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["type"] == "json_too_complex"
    # Over the body limit: 413 from the body limit, declared or streamed.
    big = b" " * (api.settings.max_body_bytes + 1)
    assert api.client.post(url, content=big, headers=json_type).status_code == 413
    chunks = iter([big[:1000], big[1000:]])
    assert api.client.post(url, content=chunks, headers=json_type).status_code == 413
    # A trailing slash, a non-numeric or huge id.
    slash = api.client.get(f"/api/v1/tasks/{tid}/next/", headers=auth, follow_redirects=False)
    assert slash.status_code in (307, 404)
    r = api.client.get("/api/v1/tasks/abc/next", headers=auth)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["path", "task_id"]
    assert api.client.get(f"/api/v1/tasks/{10**20}/next", headers=auth).status_code in (
        404,
        422,
    )
    assert api.client.get(f"/api/v1/tasks/{tid}/next", headers=auth).json()["seq"] == 0
    # Chunked (no Content-Length) and accepted.
    r = api.client.post(url, content=iter([body[:10], body[10:]]), headers=json_type)
    assert r.status_code in (200, 409), r.text  # 409 if d000/d001 is not the first pair
    if r.status_code == 200:
        assert api.client.post(f"/api/v1/tasks/{tid}/undo", headers=auth).status_code == 200


def test_unexpected_error_is_a_json_500(
    api: Api, fresh_twins: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.judging import service as judging

    def broken(**_kw: Any) -> Any:
        raise RuntimeError("a bug")

    from fastapi.testclient import TestClient

    monkeypatch.setattr(judging, "next_question", broken)
    client = TestClient(api.client.app, raise_server_exceptions=False)
    r = client.get(f"/api/v1/tasks/{fresh_twins['fast']}/next", headers=api.auth("hp1"))
    assert r.status_code == 500 and r.json() == {"detail": "internal server error"}
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["cache-control"] == "no-store"


def test_graded_tasks_on_the_same_path(api: Api, twins: dict[str, Any]) -> None:
    """Five-grade tasks: twins compared over a whole task, with a retry, a grade out of
    range (the model's 422) and a wrong document."""
    fast = make_task(api, twins["cid"], "hq", "hp1", method="graded", seed=21)
    slow = make_task(api, twins["cid"], "hq", "hp1", method="graded", seed=21)
    pair = {"fast": fast, "slow": slow}
    status, q = both(api, pair, "GET", "/next")
    assert status == 200 and "document" in q
    first = True
    while not q["done"]:
        body = {"seq": q["seq"], "doc_id": q["document"]["doc_id"], "grade": q["seq"] % 5}
        if first:
            wrong = {**body, "doc_id": "no-such-doc"}
            status, error = both(api, pair, "POST", "/judgments", json=wrong)
            assert status in (409, 422) and "detail" in error
            status, error = both(api, pair, "POST", "/judgments", json={**body, "grade": 7})
            assert status == 422 and error["detail"][0]["loc"] == ["body", "grade"]
        status, nxt = both(api, pair, "POST", "/judgments", json=body)
        assert status == 200
        if first:
            status, again = both(api, pair, "POST", "/judgments", json=body)
            assert status == 200 and again == nxt
            first = False
        q = nxt
    grades_fast = api.get("hp1", f"/api/v1/tasks/{fast}/result").json()["grades"]
    grades_slow = api.get("hp1", f"/api/v1/tasks/{slow}/result").json()["grades"]
    assert grades_fast == grades_slow and len(grades_fast) == 12
