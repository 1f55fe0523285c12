"""Request bodies of any shape are answered in bounded time and size, never echo a secret, and
a form body sent with the session cookie to a JSON endpoint is a 4xx
(docs/security.md#request-bodies, docs/rest-api.md#errors).

The shape limits run over a real app with the default 32 MiB body limit (TestClient), and
over a real uvicorn for what only a real server shows: a process that crashes on deep
nesting, and ``/healthz`` stalled while a body is validated
(``benchmarks/hostile_bodies.py`` measures the targets at 32 MiB).
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.auth import sessions
from app.http.errors import MAX_ERRORS
from app.http.json_limits import MAX_JSON_DEPTH, MAX_JSON_VALUES, JsonShape, json_shape_problem
from app.users import service as users
from tests.app.conftest import Api
from tests.app.judging.support import make_task, ndjson, pool

JSON = {"Content-Type": "application/json"}
ANSWER_BYTES = 64 * 1024


def many_keys(n: int) -> bytes:
    return b"{" + b",".join(b'"k%d":0' % i for i in range(n)) + b"}"


def hostile(size: int) -> dict[str, bytes]:
    """Bodies of about ``size`` bytes in the shapes of benchmarks/hostile_bodies.py."""
    return {
        "many keys": many_keys(size // 14),
        "deep": b"[" * (size // 2) + b"]" * (size // 2),
        "long array": b'{"left":[' + b"1," * (size // 2 - 8) + b"1]}",
        "long string": b'{"left":"' + b"a" * (size - 12) + b'"}',
        "many strings": b"[" + b'"",' * (size // 3 - 1) + b'""]',
    }


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """An app with the default body limit (32 MiB) over SQLite: an admin, an assessor ``ava``
    with one task, and both tokens."""
    import migrations
    from app.kernel.settings import Settings
    from app.main import create_app

    url = f"sqlite:///{tmp_path_factory.mktemp('big') / 'big.db'}"
    migrations.upgrade(url)
    settings = Settings(database_url=url, dev=True, public_origin="http://testserver")
    app = create_app(settings)
    with TestClient(app, base_url="http://testserver") as client:
        api = Api(client=client, db=app.state.db, settings=settings)
        api.add_user("admin", role="admin")
        api.add_user("ava")
        cid = api.post("admin", "/api/v1/collections", json={"name": "big"}).json()["id"]
        api.post("admin", f"/api/v1/collections/{cid}/import", content=ndjson(pool("b1", 6)))
        tid = make_task(api, cid, "b1", "ava", k=2)
        yield {"api": api, "tid": tid}


SHAPES = ["many keys", "deep", "long array", "long string", "many strings"]


@pytest.mark.parametrize("shape", SHAPES)
def test_hostile_json_bodies_get_a_small_answer_fast(big: dict[str, Any], shape: str) -> None:
    api: Api = big["api"]
    body = hostile(8 * 1024 * 1024)[shape]
    for who, path in [
        ("ava", f"/api/v1/tasks/{big['tid']}/judgments"),
        ("ava", f"/api/v1/tasks/{big['tid']}/undo"),
        ("admin", "/api/v1/collections"),
        ("admin", "/api/v1/users"),
    ]:
        started = time.perf_counter()
        r = api.post(who, path, content=body, headers=JSON)
        seconds = time.perf_counter() - started
        assert r.status_code == 422, (path, r.text[:300])
        assert len(r.content) <= ANSWER_BYTES, (path, len(r.content))
        assert seconds < 5, (path, seconds)  # the probe holds it to 1 s at 32 MiB
        assert isinstance(r.json()["detail"], list)


def test_a_body_past_the_limits_says_which(big: dict[str, Any]) -> None:
    api: Api = big["api"]
    for body in (many_keys(MAX_JSON_VALUES), b'{"left":' + b"[" * 40 + b"]" * 40 + b"}"):
        r = api.post("admin", "/api/v1/collections", content=body, headers=JSON)
        assert r.status_code == 422
        (item,) = r.json()["detail"]
        assert item["type"] == "json_too_complex"
        assert str(MAX_JSON_VALUES) in item["msg"] and str(MAX_JSON_DEPTH) in item["msg"]
    # Within the limits, a collection is still created; nesting at the limit is fine.
    nested = b'{"name":"deep-ok","description":"' + b"[" * 100 + b'"}'
    assert api.post("admin", "/api/v1/collections", content=nested, headers=JSON).status_code == 201


def test_an_ndjson_import_labelled_json_is_not_held_to_the_json_limits(
    big: dict[str, Any],
) -> None:
    """The NDJSON import reads its body line by line whatever the Content-Type says: a file
    of more values than one JSON body may hold is imported, not refused as too complex."""
    api: Api = big["api"]
    cid = api.post("admin", "/api/v1/collections", json={"name": "many-lines"}).json()["id"]
    lines = [{"query_id": "m", "query": "m", "doc_id": f"m{i}", "text": "t"} for i in range(12_000)]
    data = ndjson(lines)
    assert json_shape_problem(b"[" + data.replace(b"\n", b",")[:-1] + b"]")  # as one body
    r = api.post("admin", f"/api/v1/collections/{cid}/import", content=data, headers=JSON)
    assert r.status_code == 200, r.text[:300]
    assert r.json()["lines"] == 12_000


def test_many_unknown_keys_are_one_error(big: dict[str, Any]) -> None:
    api: Api = big["api"]
    body = {"name": "x", **{f"k{i}": i for i in range(5000)}}
    r = api.post("admin", "/api/v1/collections", json=body)
    assert r.status_code == 422
    (item,) = r.json()["detail"]
    assert item["type"] == "extra_forbidden" and "5000 unknown keys" in item["msg"]
    # A few unknown keys are still reported one by one, each naming its key.
    r = api.post("admin", "/api/v1/collections", json={"name": "x", "colour": 1, "size": 2})
    assert [e["loc"] for e in r.json()["detail"]] == [["body", "colour"], ["body", "size"]]


def test_validation_errors_are_capped_and_cut_short(big: dict[str, Any]) -> None:
    api: Api = big["api"]
    body = {"collection_id": 1, "assessors": [1] * 500}
    r = api.post("admin", "/api/v1/admin/plans/preview", json=body)
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert len(detail) == MAX_ERRORS + 1
    assert detail[-1]["type"] == "too_many_errors" and "more validation errors" in detail[-1]["msg"]
    long = "x" * 100_000
    r = api.post("ava", f"/api/v1/tasks/{big['tid']}/judgments", json={"seq": 0, "left": long})
    assert r.status_code == 422 and len(r.content) < 4096
    assert long[:1000] not in r.text


SECRET = "correct horse battery staple 7"


@pytest.mark.parametrize(
    "body",
    [
        {"username": "bad name!", "password": SECRET},  # the username's error
        {"password": SECRET, "role": "emperor"},  # missing username: the whole body echoed
        {"username": "sam", "password": SECRET * 100},  # the password itself too long
        {"username": "sam", "password": [SECRET]},  # the password of the wrong type
        {"username": "sam", "password": SECRET, **{f"k{i}": i for i in range(12)}},
    ],
)
def test_a_refused_body_never_echoes_a_password(big: dict[str, Any], body: Any) -> None:
    r = big["api"].post("admin", "/api/v1/users", json=body)
    assert r.status_code == 422, r.text
    assert SECRET not in r.text


def test_a_refused_password_reset_is_not_echoed(big: dict[str, Any]) -> None:
    api: Api = big["api"]
    for body in ({"password": SECRET, "extra": 1}, {"password": SECRET * 100}):
        r = api.post("admin", "/api/v1/admin/users/ava/password", json=body)
        assert r.status_code == 422, r.text
        assert SECRET not in r.text


# ----------------------------------------------------------------- the shape check itself


def test_shape_check_counts_outside_strings_only() -> None:
    text = json.dumps({"run": "q1 Q0 d:1,2 [x] {y}\n" * 50_000, "ids": ["a"] * 1000})
    assert json_shape_problem(text.encode()) is None
    assert json_shape_problem(json.dumps({"q": 'a \\" [[[[ "' * 40}).encode()) is None
    assert json_shape_problem(json.dumps([[[]]] * 10).encode()) is None
    assert json_shape_problem(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1))
    assert json_shape_problem(json.dumps(list(range(MAX_JSON_VALUES))).encode())
    assert json_shape_problem(json.dumps(["s"] * MAX_JSON_VALUES).encode())


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
def test_shape_check_gives_the_same_verdict_chunk_by_chunk(size: int) -> None:
    bodies = [
        json.dumps({"a": 'x\\"[[[' * 30, "b": "\\\\" * 10, "c": [[1, {"d": "]]"}]] * 5}),
        json.dumps({"a": "[" * 30, "b": [[[[[[[[[[1]]]]]]]]]]} | {"c": [[[[[[]]]]]]}),
        "[" * 33 + "]" * 33,
        '{"s": "\\\\\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}',
    ]
    for text in bodies:
        raw = text.encode()
        whole = json_shape_problem(raw)
        shape = JsonShape()
        verdicts = [shape.feed(raw[i : i + size]) for i in range(0, len(raw), size)]
        assert next((v for v in verdicts if v), None) == whole, text


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 4096])
def test_a_string_past_the_route_limit_is_refused_chunk_by_chunk(size: int) -> None:
    """Strings (values and keys) are measured in JSON text, escapes included, across chunk
    boundaries; ``max_string=None`` measures nothing."""
    cap = 100
    cases = [
        (b'{"a":"' + b"x" * cap + b'"}', False),
        (b'{"a":"' + b"x" * (cap + 1) + b'"}', True),
        (b'{"' + b"k" * (cap + 1) + b'":1}', True),
        (b'{"a":"' + b"\\\\" * (cap // 2) + b'"}', False),
        (b'{"a":"' + b"\\\\" * (cap // 2 + 1) + b'"}', True),  # escapes count
        (b'{"a":"' + b'\\"' * (cap // 2) + b'","b":"' + b"z" * cap + b'"}', False),
        (b'{"a":"' + b'\\"' * (cap // 2) + b'","b":"' + b"z" * (cap + 1) + b'"}', True),
        (b'["' + b"x" * 60 + b'","' + b"y" * 60 + b'"]', False),
    ]
    for raw, refused in cases:
        for limit in (cap, None):
            shape = JsonShape(max_string=limit)
            verdicts = [shape.feed(raw[i : i + size]) for i in range(0, len(raw), size)]
            problem = next((v for v in verdicts if v), None)
            assert (problem is not None) == (refused and limit is not None), (raw, limit)
            if problem is not None:
                assert f"longer than {cap} bytes" in problem


def test_route_string_limits_follow_the_body_models() -> None:
    """The judging loop's models bound every string: a few KiB at most, so its limit is the
    floor; a model with an unbounded string (or a dict) has none."""
    from app.http.json_limits import MIN_STRING_LIMIT, string_limit
    from app.judging.schemas import JudgmentIn

    class Route:
        def __init__(self, annotation: Any) -> None:
            self.body_field = type("F", (), {"field_info": type("I", (), {})()})()
            self.body_field.field_info.annotation = annotation

    assert string_limit(Route(JudgmentIn)) == MIN_STRING_LIMIT
    assert string_limit(Route(dict[str, int])) is None
    assert string_limit(Route(list[str])) is None
    assert string_limit(object()) is None


def test_a_long_string_to_the_judging_loop_is_refused_before_parsing(
    big: dict[str, Any],
) -> None:
    api: Api = big["api"]
    body = b'{"seq":0,"left":"' + b"\\u00e9" * (2 << 20) + b'","right":"d","outcome":"left"}'
    r = api.post("ava", f"/api/v1/tasks/{big['tid']}/judgments", content=body, headers=JSON)
    assert r.status_code == 422
    (item,) = r.json()["detail"]
    assert item["type"] == "json_too_complex" and "a string longer than" in item["msg"]


# ---------------------------------------------------------------- over a real uvicorn


def _post(port: int, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_a_real_server_survives_hostile_bodies_and_keeps_answering(tmp_path: Path) -> None:
    """Before the limits: a 2 MB body of ``[`` crashed the process (orjson recursing), and
    100,000 unknown keys held ``/healthz`` for seconds."""
    from tests.e2e.web_support import LiveServer, init_db, seed_task

    db = init_db(tmp_path / "live.db")
    user = users.create_user(db=db, username="live", password="live server passphrase")
    task = seed_task(db, assessor_id=user.id, docs=[{"doc_id": f"d{i}"} for i in range(4)])
    db.dispose()
    server = LiveServer(tmp_path / "live.db").start()
    try:
        form = b"username=live&password=live+server+passphrase"
        kind = {"Content-Type": "application/x-www-form-urlencoded"}
        status, answer = _post(server.port, "/api/v1/auth/token", form, kind)
        assert status == 200, answer
        auth = {"Authorization": f"Bearer {json.loads(answer)['access_token']}", **JSON}
        url = f"/api/v1/tasks/{task.task_id}/judgments"
        status, answer = _post(server.port, url, b"[" * 1_000_000 + b"]" * 1_000_000, auth)
        assert status == 422 and b"json_too_complex" in answer

        slowest = 0.0
        done = threading.Event()

        def poll() -> None:
            nonlocal slowest
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            while not done.is_set():
                started = time.perf_counter()
                conn.request("GET", "/healthz")
                assert conn.getresponse().read()
                slowest = max(slowest, time.perf_counter() - started)
                time.sleep(0.01)
            conn.close()

        poller = threading.Thread(target=poll)
        poller.start()
        try:
            for body in (many_keys(300_000), many_keys(90_000 // 2)):
                status, answer = _post(server.port, url, body, auth)
                assert status == 422 and len(answer) <= ANSWER_BYTES
        finally:
            done.set()
            poller.join()
        assert slowest < 1.0, slowest  # the probe holds it to 100 ms on an idle machine
        assert server.proc is not None and server.proc.poll() is None
    finally:
        server.stop()


# ------------------------------------------------- a form body with the cookie, to JSON


@pytest.fixture(scope="module")
def cookie_world(api: Api) -> dict[str, Any]:
    api.add_user("fay")
    cid = api.post("admin", "/api/v1/collections", json={"name": "forms"}).json()["id"]
    api.post("admin", f"/api/v1/collections/{cid}/import", content=ndjson(pool("f1", 4)))
    tid = make_task(api, cid, "f1", "fay", k=2)
    cookies: dict[str, str] = {}
    for who in ("fay", "admin"):
        raw, csrf = sessions.create_web_session(api.db, users.get_user(db=api.db, username=who))
        cookies[who] = raw
        cookies[f"{who}-csrf"] = csrf
    return {"cid": cid, "tid": tid, **cookies}


@pytest.mark.parametrize("kind", ["application/x-www-form-urlencoded", "multipart/form-data"])
def test_a_form_body_with_the_cookie_to_a_json_endpoint_is_415(
    api: Api, cookie_world: dict[str, Any], kind: str
) -> None:
    tid, cid = cookie_world["tid"], cookie_world["cid"]
    for who, path in [
        ("fay", f"/api/v1/tasks/{tid}/judgments"),
        ("fay", f"/api/v1/tasks/{tid}/undo"),
        ("admin", f"/api/v1/collections/{cid}/import"),
        ("admin", "/api/v1/collections"),
    ]:
        headers = {
            "Cookie": f"{sessions.SESSION_COOKIE}={cookie_world[who]}",
            "Sec-Fetch-Site": "same-origin",
        }
        fields = {"csrf_token": cookie_world[f"{who}-csrf"], "seq": "0"}
        if kind.startswith("multipart"):
            files = {"f": ("f.json", b"{}", "application/json")}
            r = api.client.post(path, data=fields, files=files, headers=headers)
        else:
            r = api.client.post(path, data=fields, headers=headers)
        assert r.status_code == 415, (path, r.status_code, r.text)
        assert "X-CSRF-Token" in r.json()["detail"]
    # The same token in the header still works (the 422 of a form body, not a 500).
    headers = {
        "Cookie": f"{sessions.SESSION_COOKIE}={cookie_world['fay']}",
        "Sec-Fetch-Site": "same-origin",
        "X-CSRF-Token": cookie_world["fay-csrf"],
    }
    r = api.client.post(f"/api/v1/tasks/{tid}/judgments", data={"seq": "0"}, headers=headers)
    assert r.status_code == 422, r.text
