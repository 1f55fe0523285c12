"""Authorisation matrix over the app's routes, cookie + CSRF rules (C3), disabled users,
login throttling, body-size limits (413, also chunked) and all-or-nothing NDJSON import."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from app.auth import sessions, throttling
from app.http.deps import require_admin
from app.users import service as users
from tests.app.conftest import Api, concrete
from tests.app.judging.support import (
    make_collection,
    make_task,
    ndjson,
    pair_body,
    pool,
)

#: Admin-only endpoints named by the API contract; each must be guarded by require_admin.
CONTRACT_ADMIN_ROUTES = {
    ("POST", "/api/v1/users"),
    ("POST", "/api/v1/collections"),
    ("POST", "/api/v1/collections/{collection_id}/import"),
    ("POST", "/api/v1/tasks"),
    ("GET", "/api/v1/collections/{collection_id}/export"),
}
PUBLIC_API_ROUTES = {("POST", "/api/v1/auth/token")}


def _calls(dependant: Any) -> Iterator[Any]:
    for dep in dependant.dependencies:
        yield dep.call
        yield from _calls(dep)


def api_routes(app: Any) -> list[tuple[str, str, bool]]:
    """(method, path, admin-only) for every JSON API route, from ``app.routes``."""
    try:  # FastAPI >= 0.16x keeps included routers nested; contexts carry the full path
        from fastapi.routing import iter_route_contexts

        routes = [(ctx.path, ctx.route) for ctx in iter_route_contexts(app.routes)]
    except ImportError:  # older FastAPI: routes are flat already
        routes = [(getattr(r, "path", ""), r) for r in app.routes]
    out = []
    for path, route in routes:
        if not path.startswith("/api/v1") or not hasattr(route, "dependant"):
            continue
        admin = require_admin in set(_calls(route.dependant))
        for method in sorted(route.methods - {"HEAD"}):
            out.append((method, path, admin))
    return out


@pytest.fixture(scope="module")
def world(api: Api) -> dict[str, Any]:
    api.add_user("ava")
    api.add_user("ben")
    cid = make_collection(api, "security", pool("s1", 5))
    return {"cid": cid, "ava_task": make_task(api, cid, "s1", "ava", k=2)}


def test_every_contract_admin_route_is_guarded(api: Api) -> None:
    routes = api_routes(api.client.app)
    guarded = {(m, p) for m, p, admin in routes if admin}
    assert guarded >= CONTRACT_ADMIN_ROUTES, CONTRACT_ADMIN_ROUTES - guarded


def test_assessor_gets_403_on_every_admin_route(api: Api, world: dict[str, Any]) -> None:
    routes = [(m, p) for m, p, admin in api_routes(api.client.app) if admin]
    assert len(routes) >= len(CONTRACT_ADMIN_ROUTES)
    for method, path in routes:
        r = api.client.request(method, concrete(path), headers=api.auth("ava"), json={})
        assert r.status_code == 403, (method, path, r.status_code, r.text)
        assert r.json()["detail"] == "admin role required"


#: The only API routes an assessor may call; every other route (admin, analysis, training,
#: exports, and whatever router comes next) must be guarded by require_admin.
ASSESSOR_API_ROUTES = {
    ("POST", "/api/v1/auth/token"),
    ("GET", "/api/v1/users/me"),
    # The collections holding one of the caller's tasks only (see the matrix below).
    ("GET", "/api/v1/collections"),
    ("GET", "/api/v1/collections/{collection_id}"),
    ("GET", "/api/v1/collections/{collection_id}/queries"),
    ("GET", "/api/v1/collections/{collection_id}/guidelines"),
    ("GET", "/api/v1/tasks"),
    ("GET", "/api/v1/tasks/{task_id}"),
    ("GET", "/api/v1/tasks/{task_id}/next"),
    ("POST", "/api/v1/tasks/{task_id}/judgments"),
    ("POST", "/api/v1/tasks/{task_id}/undo"),
    ("GET", "/api/v1/tasks/{task_id}/result"),
    ("GET", "/api/v1/tasks/{task_id}/answers"),
    # Second opinions (docs/rest-api.md#second-opinions): the assignee's queue and answers,
    # the page loop's names for them, and the first assessor's "ask me instead".
    ("GET", "/api/v1/second-opinions"),
    ("GET", "/api/v1/second-opinions/next"),
    ("GET", "/api/v1/second-opinions/{item_id}"),
    ("POST", "/api/v1/second-opinions/{item_id}/answer"),
    ("GET", "/api/v1/second-opinions/{item_id}/next"),
    ("POST", "/api/v1/second-opinions/{item_id}/judgments"),
    ("POST", "/api/v1/second-opinions/{item_id}/undo"),
    ("POST", "/api/v1/tasks/{task_id}/second-opinion/reclaim"),
}


def test_every_other_api_route_is_admin_only(api: Api) -> None:
    routes = api_routes(api.client.app)
    open_ = {(m, p) for m, p, admin in routes if not admin}
    assert open_ <= ASSESSOR_API_ROUTES, open_ - ASSESSOR_API_ROUTES
    paths = {p for _m, p, _a in routes}
    for prefix in (
        "/api/v1/admin/",
        "/api/v1/training-runs",
        "/api/v1/collections/{collection_id}/analysis",
    ):
        assert any(p.startswith(prefix) for p in paths), prefix  # the walk sees every router


def test_every_api_route_needs_authentication(api: Api) -> None:
    for method, path, _admin in api_routes(api.client.app):
        if (method, path) in PUBLIC_API_ROUTES:
            continue
        r = api.client.request(method, concrete(path), json={})
        assert r.status_code == 401, (method, path, r.status_code)
        assert "detail" in r.json()


#: Collection reads by role (docs/security.md#roles): the admin reads every collection, an
#: assessor only those holding one of its tasks; for any other the answer is 404, as for a
#: collection that does not exist.
COLLECTION_READS = ("", "/queries", "/guidelines")
COLLECTION_MATRIX = {"admin": 200, "ava": 200, "ben": 404}


def test_collection_reads_follow_the_matrix(api: Api, world: dict[str, Any]) -> None:
    cid = world["cid"]
    for user, status in COLLECTION_MATRIX.items():
        for tail in COLLECTION_READS:
            r = api.get(user, f"/api/v1/collections/{cid}{tail}")
            assert r.status_code == status, (user, tail, r.status_code, r.text)
        listed = {c["id"] for c in api.get(user, "/api/v1/collections").json()}
        assert (cid in listed) == (status == 200), (user, listed)


def test_assessor_cannot_touch_another_assessors_task(api: Api, world: dict[str, Any]) -> None:
    tid = world["ava_task"]
    q = api.get("ava", f"/api/v1/tasks/{tid}/next").json()
    for method, path, body in [
        ("GET", f"/api/v1/tasks/{tid}", None),
        ("GET", f"/api/v1/tasks/{tid}/next", None),
        ("POST", f"/api/v1/tasks/{tid}/judgments", pair_body(q, "left")),
        ("POST", f"/api/v1/tasks/{tid}/undo", None),
        ("GET", f"/api/v1/tasks/{tid}/result", None),
    ]:
        r = api.client.request(method, path, headers=api.auth("ben"), json=body)
        assert r.status_code == 403, (path, r.text)
    assert api.get("ava", f"/api/v1/tasks/{tid}").json()["judgments"] == 0
    # The admin may read any task, but not answer or undo for its assessor: a judgment row
    # does not record who gave it, so an admin's answer would pass as the assessor's.
    assert api.get("admin", f"/api/v1/tasks/{tid}/next").status_code == 200
    assert api.get("admin", f"/api/v1/tasks/{tid}").status_code == 200
    for path, body in [
        (f"/api/v1/tasks/{tid}/judgments", pair_body(q, "left")),
        (f"/api/v1/tasks/{tid}/undo", None),
    ]:
        r = api.client.post(path, headers=api.auth("admin"), json=body)
        assert r.status_code == 403 and "read it only" in r.json()["detail"], r.text
    assert api.get("ava", f"/api/v1/tasks/{tid}").json()["judgments"] == 0


def test_cookie_requests_need_csrf_and_same_origin(api: Api, world: dict[str, Any]) -> None:
    tid = world["ava_task"]
    ava = users.get_user(db=api.db, username="ava")
    raw, csrf = sessions.create_web_session(api.db, ava)
    cookies = {"Cookie": f"{sessions.SESSION_COOKIE}={raw}"}
    c = api.client
    q = c.get(f"/api/v1/tasks/{tid}/next", headers=cookies)
    assert q.status_code == 200
    body = pair_body(q.json(), "left")
    url = f"/api/v1/tasks/{tid}/judgments"
    assert c.post(url, json=body, headers=cookies).status_code == 403
    bad = {**cookies, "X-CSRF-Token": "not-it"}
    assert c.post(url, json=body, headers=bad).status_code == 403
    good = {**cookies, "X-CSRF-Token": csrf}
    cross = {**good, "Sec-Fetch-Site": "cross-site"}
    assert c.post(url, json=body, headers=cross).status_code == 403
    foreign = {**good, "Origin": "https://evil.example"}
    assert c.post(url, json=body, headers=foreign).status_code == 403
    same = {**good, "Sec-Fetch-Site": "same-origin", "Origin": "http://testserver"}
    ok = c.post(url, json=body, headers=same)
    assert ok.status_code == 200, ok.text
    # Logout kills the session at once; the old cookie is useless.
    sessions.delete_web_session(api.db, raw)
    assert c.get(f"/api/v1/tasks/{tid}/next", headers=cookies).status_code == 401
    assert c.post(f"/api/v1/tasks/{tid}/undo", headers=api.auth("ava")).status_code == 200


def test_disabled_user_is_refused_at_once(api: Api) -> None:
    api.add_user("zed")
    raw, _csrf = sessions.create_web_session(api.db, users.get_user(db=api.db, username="zed"))
    assert api.get("zed", "/api/v1/users/me").status_code == 200
    users.set_disabled(db=api.db, username="zed", disabled=True)
    assert api.get("zed", "/api/v1/users/me").status_code == 401
    cookie = {"Cookie": f"{sessions.SESSION_COOKIE}={raw}"}
    assert api.client.get("/api/v1/users/me", headers=cookie).status_code == 401
    r = api.client.post("/api/v1/auth/token", data={"username": "zed", "password": "pw-zed-secret"})
    assert r.status_code == 401


def test_login_throttling(api: Api) -> None:
    users.create_user(db=api.db, username="tom", password="tom secret passphrase")
    form = {"username": "tom", "password": "wrong-password"}
    for _ in range(api.settings.login_max_failures):
        assert api.client.post("/api/v1/auth/token", data=form).status_code == 401
    r = api.client.post("/api/v1/auth/token", data={**form, "password": "tom secret passphrase"})
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1


def test_parallel_guesses_cannot_pass_the_throttle(api: Api) -> None:
    """Many wrong passwords at once for one (username, ip): exactly ``login_max_failures`` are
    checked, the rest are refused before any password check (the attempt is recorded in the
    transaction that counts, before Argon2 runs). Afterwards the right password is refused too
    while the window lasts, and another ip is not affected."""
    from concurrent.futures import ThreadPoolExecutor

    users.create_user(db=api.db, username="tess", password="tess secret passphrase")
    n = api.settings.login_max_failures

    def guess(i: int) -> str:
        try:
            user = throttling.authenticate(api.db, "tess", f"wrong-{i}", ip="10.0.0.9")
        except throttling.LoginThrottled:
            return "throttled"
        return "refused" if user is None else "accepted"

    with ThreadPoolExecutor(max_workers=3 * n) as pool:
        outcomes = list(pool.map(guess, range(3 * n)))
    assert outcomes.count("refused") == n and outcomes.count("throttled") == 2 * n
    with pytest.raises(throttling.LoginThrottled):
        throttling.authenticate(api.db, "tess", "tess secret passphrase", ip="10.0.0.9")
    user = throttling.authenticate(api.db, "tess", "tess secret passphrase", ip="10.0.0.10")
    assert user is not None


def test_oversized_bodies_get_413(api: Api, world: dict[str, Any]) -> None:
    limit = api.settings.max_body_bytes
    url = f"/api/v1/collections/{world['cid']}/import"
    big = b"x" * (limit + 1)
    r = api.post("admin", url, content=big)
    assert r.status_code == 413 and "detail" in r.json()

    def chunks() -> Iterator[bytes]:  # no Content-Length: Transfer-Encoding chunked
        for _ in range(limit // 1000 + 2):
            yield b"y" * 1000

    r = api.post("admin", url, content=chunks())
    assert r.status_code == 413
    assert api.get("admin", f"/api/v1/collections/{world['cid']}").json()["documents"] == 5


def _run_limited(chunks: list[bytes], limit: int, *, headers: Any = ()) -> dict[str, Any]:
    """Drive :class:`BodySizeLimitMiddleware` around a recording ASGI app."""
    import asyncio

    from app.http.middleware import BodySizeLimitMiddleware

    seen: list[int] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            seen.append(len(message.get("body", b"")))
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    incoming = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
        for i, c in enumerate(chunks)
    ]

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": list(headers)}
    asyncio.run(BodySizeLimitMiddleware(app, max_bytes=limit)(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return {"seen": seen, "status": status, "left": len(incoming)}


def test_body_limit_streams_chunks_and_stops_at_the_limit() -> None:
    # Within the limit: the app gets each chunk as it arrives (no buffering into one message).
    ok = _run_limited([b"a" * 100, b"b" * 100, b"c" * 100], limit=300)
    assert ok == {"seen": [100, 100, 100], "status": 200, "left": 0}
    # Over it: 413 as soon as the running total passes the limit; later chunks are never read
    # and the app's own answer is replaced.
    big = _run_limited([b"a" * 100, b"b" * 100, b"c" * 100, b"d" * 100], limit=150)
    assert big == {"seen": [100], "status": 413, "left": 2}
    declared = _run_limited([b"a"], limit=150, headers=[(b"content-length", b"151")])
    assert declared["status"] == 413 and declared["seen"] == []


def test_oversized_chunked_json_and_multipart_get_413(api: Api, world: dict[str, Any]) -> None:
    """Routes whose framework parses the body (JSON model, multipart form) answer 413 too, not
    the parser's 400, when a chunked body passes the limit mid-stream."""
    limit = api.settings.max_body_bytes

    def chunks(head: bytes) -> Iterator[bytes]:
        yield head
        for _ in range(limit // 1000 + 2):
            yield b" " * 1000

    r = api.post(
        "admin",
        "/api/v1/admin/plans/preview",
        content=chunks(b'{"collection_id": 1, "name": "x"'),
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 413, r.text
    boundary = "hjboundary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="features"; filename="f.txt"'
        "\r\nContent-Type: text/plain\r\n\r\n"
    ).encode()
    r = api.post(
        "admin",
        f"/api/v1/admin/collections/{world['cid']}/attach-features",
        content=chunks(head),
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert r.status_code == 413, r.text


BAD_IMPORTS = [
    (b'{"query_id": "b1", "query": "q", "doc_id": "x1"}\n{not json}\n', [2]),
    (b'{"query_id": "b1", "doc_id": "x1"}\n', [1]),
    (b'{"query_id": "b1", "query": "q", "doc_id": ["x"]}\n', [1]),
    (b'{"query_id": "b1", "query": "q", "doc_id": "x1", "grade": 9}\n', [1]),
    (b'{"query_id": "b1", "query": "q", "doc_id": "x1", "features": [1, "a"]}\n', [1]),
    (b'{"query_id": "b1", "query": "q", "doc_id": "x1", "colour": 1}\n', [1]),
    (b'[1, 2]\n{"query_id": true, "query": "q", "doc_id": "x"}\n', [1, 2]),
    (
        b'{"query_id": "b1", "query": "q", "doc_id": "x1", "text": "a"}\n'
        b'{"query_id": "b1", "query": "q", "doc_id": "x1", "text": "b"}\n',
        [2],
    ),
    (
        b'{"query_id": "b1", "query": "q", "doc_id": "x1"}\n'
        b'{"query_id": "b1", "query": "other", "doc_id": "x2"}\n',
        [2],
    ),
    (b'{"query_id": "b1", "query": "q", "doc_id": "x1", "text": "\xff"}\n', [1]),
]


@pytest.mark.parametrize(("data", "lines"), BAD_IMPORTS)
def test_bad_ndjson_is_422_with_line_numbers_and_stores_nothing(
    api: Api, world: dict[str, Any], data: bytes, lines: list[int]
) -> None:
    cid = world["cid"]
    before = api.get("admin", f"/api/v1/collections/{cid}").json()
    good = b'{"query_id": "ok", "query": "fine", "doc_id": "fine-1"}\n'
    r = api.post("admin", f"/api/v1/collections/{cid}/import", content=good + data)
    assert r.status_code == 422, r.text
    reported = sorted({e["line"] for e in r.json()["detail"]})
    assert reported == [n + 1 for n in lines]  # the good first line shifts every number
    assert all(isinstance(e["msg"], str) and e["msg"] for e in r.json()["detail"])
    after = api.get("admin", f"/api/v1/collections/{cid}").json()
    assert (after["queries"], after["documents"]) == (before["queries"], before["documents"])


def test_ndjson_import_reads_lines_each_bad_line_reported(api: Api, world: dict[str, Any]) -> None:
    """The import is parsed line by line: every non-UTF-8 line is reported (with the byte
    offset in the file), a leading BOM is accepted, and nothing is stored."""
    cid = world["cid"]
    good = b'{"query_id": "u1", "query": "q", "doc_id": "u-1"}\n'
    body = b"\xef\xbb\xbf" + good + b'{"query_id": "u1", "query": "\xff"}\n' + good + b"\xfe\n"
    r = api.post("admin", f"/api/v1/collections/{cid}/import", content=body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert [e["line"] for e in detail] == [2, 4]
    bad_at = body.index(b"\xff")  # offsets count from the file's first byte
    assert detail[0]["msg"] == f"invalid UTF-8 at byte {bad_at}"
    ok = api.post("admin", f"/api/v1/collections/{cid}/import", content=b"\xef\xbb\xbf" + good)
    assert ok.status_code == 200 and ok.json()["documents_created"] == 1, ok.text


def test_empty_import_is_422(api: Api, world: dict[str, Any]) -> None:
    r = api.post("admin", f"/api/v1/collections/{world['cid']}/import", content=b"\n \n")
    assert r.status_code == 422 and "no records" in r.json()["detail"][0]["msg"]


def test_import_conflicts_with_stored_documents(api: Api, world: dict[str, Any]) -> None:
    cid = world["cid"]
    stored = pool("s1", 5)
    changed = [dict(stored[0], text="a different text")]
    r = api.post("admin", f"/api/v1/collections/{cid}/import", content=ndjson(changed))
    assert r.status_code == 422 and r.json()["detail"][0]["line"] == 1
    renamed = [dict(stored[1], query="a different query text")]
    r = api.post("admin", f"/api/v1/collections/{cid}/import", content=ndjson(renamed))
    assert r.status_code == 422
    # The same doc id under another query with other content is a conflict too.
    other = [dict(stored[2], query_id="s2", query="second", text="changed")]
    assert (
        api.post("admin", f"/api/v1/collections/{cid}/import", content=ndjson(other)).status_code
        == 422
    )
    same_elsewhere = [dict(stored[2], query_id="s2", query="second")]
    ok = api.post("admin", f"/api/v1/collections/{cid}/import", content=ndjson(same_elsewhere))
    assert ok.status_code == 200 and ok.json()["documents_created"] == 1


def test_security_headers_and_openapi(api: Api) -> None:
    r = api.client.get("/openapi.json")
    assert r.status_code == 200
    paths = r.json()["paths"]
    for path in [
        "/api/v1/auth/token",
        "/api/v1/users",
        "/api/v1/collections",
        "/api/v1/collections/{collection_id}",
        "/api/v1/collections/{collection_id}/import",
        "/api/v1/collections/{collection_id}/queries",
        "/api/v1/collections/{collection_id}/export",
        "/api/v1/tasks",
        "/api/v1/tasks/{task_id}/next",
        "/api/v1/tasks/{task_id}/judgments",
        "/api/v1/tasks/{task_id}/undo",
        "/api/v1/tasks/{task_id}/result",
    ]:
        assert path in paths, path
    assert api.client.get("/docs").status_code == 200
    h = api.client.get("/healthz").headers
    assert h["x-content-type-options"] == "nosniff"
    assert "frame-ancestors 'none'" in h["content-security-policy"]
    assert json.loads(api.client.get("/api/v1/nothing-here").text) == {"detail": "Not Found"}


def test_api_docs_need_no_external_host(api: Api) -> None:
    """/docs works offline: every asset it references is served by the app itself (200), and
    the page keeps a 'self'-only CSP (its inline init script allowed by hash only)."""
    page = api.client.get("/docs")
    assert page.status_code == 200
    html = page.text
    assert not re.search(r"(?:src|href)\s*=\s*[\"']?(?:https?:)?//", html), html
    assets = re.findall(r"(?:src|href)\s*=\s*[\"']([^\"']+)[\"']", html)
    assert any(a.endswith(".js") for a in assets) and any(a.endswith(".css") for a in assets)
    for asset in assets:
        assert asset.startswith("/"), asset
        r = api.client.get(asset)
        assert r.status_code == 200 and r.content, asset
    csp = page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "'sha256-" in csp
    assert "unsafe-inline" not in csp.split("script-src", 1)[1].split(";")[0]
    assert "http" not in csp
    assert api.client.get("/docs/oauth2-redirect").status_code == 200
    assert "/openapi.json" in html and api.client.get("/openapi.json").status_code == 200
    # ReDoc has no offline bundle: it is off rather than half-broken.
    assert api.client.get("/redoc").status_code == 404


def test_web_session_idle_and_absolute_expiry(api: Api, world: dict[str, Any]) -> None:
    from datetime import timedelta

    from app.kernel.db import Database
    from app.kernel.models import utcnow
    from app.kernel.settings import Settings

    db = Database(
        Settings(
            database_url=api.settings.database_url,
            dev=True,
            session_idle_seconds=600,
            session_absolute_seconds=1800,
        )
    )
    try:
        ava = users.get_user(db=db, username="ava")
        t0 = utcnow()
        raw, csrf = sessions.create_web_session(db, ava, now=t0)
        assert (
            sessions.resolve_web_session(db, raw, now=t0 + timedelta(seconds=590)).csrf_token
            == csrf
        )
        # That request refreshed last_seen, so 590 s later the session is still alive ...
        assert sessions.resolve_web_session(db, raw, now=t0 + timedelta(seconds=1180)) is not None
        # ... but not once idle for longer than 600 s, and the row is gone for good.
        assert sessions.resolve_web_session(db, raw, now=t0 + timedelta(seconds=1790)) is None
        assert sessions.resolve_web_session(db, raw, now=t0 + timedelta(seconds=1181)) is None
        # Absolute expiry holds however active the session is.
        raw2, _ = sessions.create_web_session(db, ava, now=t0)
        for minute in range(1, 30):
            assert sessions.resolve_web_session(db, raw2, now=t0 + timedelta(minutes=minute))
        assert sessions.resolve_web_session(db, raw2, now=t0 + timedelta(seconds=1801)) is None
    finally:
        db.dispose()


def test_nul_characters_are_client_errors_on_every_backend(api: Api, world: dict[str, Any]) -> None:
    """Postgres text cannot hold NUL: such input must be a 4xx, never a 500."""
    r = api.client.post("/api/v1/auth/token", data={"username": "a\x00b", "password": "x" * 9})
    assert r.status_code == 401
    line = {"query_id": "n1", "query": "nul \x00 here", "doc_id": "n-1"}
    r = api.post("admin", f"/api/v1/collections/{world['cid']}/import", content=ndjson([line]))
    assert r.status_code == 422 and r.json()["detail"][0]["line"] == 1
    r = api.post("admin", "/api/v1/collections", json={"name": "bad\x00name"})
    assert r.status_code == 422
    body = {
        "collection_id": world["cid"],
        "query_id": "s\x001",
        "assessor": "ava",
        "method": "topk",
    }
    assert api.post("admin", "/api/v1/tasks", json=body).status_code in (404, 422)


def test_secret_key_is_refused_outside_dev_and_demo(tmp_path: Any) -> None:
    from app.kernel.settings import DEV_SECRET_KEY, InsecureSettings, Settings
    from app.main import create_app

    url = f"sqlite:///{tmp_path / 'secret.db'}"
    for bad in (DEV_SECRET_KEY, "short-but-set"):
        with pytest.raises(InsecureSettings):
            create_app(Settings(database_url=url, secret_key=bad, dev=False, demo=False))
    for ok in (
        Settings(database_url=url, dev=True),
        Settings(database_url=url, demo=True),
        Settings(database_url=url, secret_key="k" * 32, dev=False, demo=False),
    ):
        create_app(ok).state.db.dispose()


def test_api_responses_are_not_cached_and_https_gets_hsts(api: Api, tmp_path: Any) -> None:
    from fastapi.testclient import TestClient

    from app.kernel.settings import Settings
    from app.main import create_app

    r = api.client.post(
        "/api/v1/auth/token", data={"username": "admin", "password": "pw-admin-secret"}
    )
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    assert api.get("admin", "/api/v1/collections").headers["cache-control"] == "no-store"
    assert "strict-transport-security" not in r.headers  # http origin
    https = create_app(
        Settings(
            database_url=f"sqlite:///{tmp_path / 'hsts.db'}",
            dev=True,
            public_origin="https://labels.example",
        )
    )
    with TestClient(https) as client:
        h = client.get("/healthz").headers
    assert h["strict-transport-security"].startswith("max-age=")
