"""Security review of the admin surface: the web pages' authorisation matrix and CSRF (walked
from ``app.routes``, so a new page cannot forget them), the headers of every HTML response, and
malformed input on the admin/export endpoints (a 4xx with a reason, never a 500; the test
client re-raises server errors, so a 500 fails loudly)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from app.auth import sessions as web_sessions
from app.users import service as users
from tests.app.admin_support import make_collection, ndjson
from tests.app.conftest import Api, concrete

#: Larger than any 64-bit integer column can hold.
BIG = "99999999999999999999"
#: Web pages under /admin that are reachable without an admin session (none).
PUBLIC_ADMIN_PAGES: set[tuple[str, str]] = set()


def web_routes(app: Any) -> list[tuple[str, str]]:
    """(method, path) of every HTML route (not the JSON API, docs or static files)."""
    try:
        from fastapi.routing import iter_route_contexts

        routes = [(ctx.path, ctx.route) for ctx in iter_route_contexts(app.routes)]
    except ImportError:  # older FastAPI: flat routes
        routes = [(getattr(r, "path", ""), r) for r in app.routes]
    out = []
    for path, route in routes:
        if path.startswith(("/api/", "/docs", "/openapi", "/redoc", "/static", "/healthz")):
            continue
        for method in sorted(getattr(route, "methods", None) or ()):
            if method != "HEAD":
                out.append((method, path))
    return out


@pytest.fixture(scope="module")
def site(api: Api) -> dict[str, Any]:
    api.add_user("assessor1")
    cid, _ = make_collection(api, "sec-admin", queries=1, docs=4)
    sessions = {}
    for name in ("admin", "assessor1"):
        user = users.get_user(db=api.db, username=name)
        raw, csrf = web_sessions.create_web_session(api.db, user)
        sessions[name] = ({"Cookie": f"{web_sessions.SESSION_COOKIE}={raw}"}, csrf)
    return {"cid": cid, "sessions": sessions}


def test_every_web_admin_page_needs_an_admin_session(api: Api, site: dict[str, Any]) -> None:
    routes = [(m, p) for m, p in web_routes(api.client.app) if p.startswith("/admin")]
    methods = {m for m, _ in routes}
    assert {"GET", "POST"} <= methods and len(routes) >= 10, routes
    assessor, assessor_csrf = site["sessions"]["assessor1"]
    for method, path in routes:
        if (method, path) in PUBLIC_ADMIN_PAGES:
            continue
        url = concrete(path)
        anonymous = api.client.request(method, url, follow_redirects=False)
        if method == "GET" and path.endswith("-fragment"):
            # fetched by script: a redirect would swap the login page into the admin page
            assert anonymous.status_code == 401, (method, path, anonymous.status_code)
        elif method == "GET":
            assert anonymous.status_code == 303, (method, path, anonymous.status_code)
            assert anonymous.headers["location"].startswith("/login")
        else:
            assert anonymous.status_code in (401, 403), (method, path, anonymous.status_code)
        # An assessor with a valid session and CSRF token is still refused.
        data = {"csrf_token": assessor_csrf} if method == "POST" else None
        r = api.client.request(
            method,
            url,
            headers={**assessor, "Origin": "http://testserver"},
            data=data,
            follow_redirects=False,
        )
        assert r.status_code == 403, (method, path, r.status_code)


def test_every_state_changing_web_route_checks_csrf(api: Api, site: dict[str, Any]) -> None:
    """With the admin's cookie but a missing, wrong or cross-site token: 403, nothing done."""
    admin, csrf = site["sessions"]["admin"]
    unsafe = [(m, p) for m, p in web_routes(api.client.app) if m not in ("GET", "HEAD")]
    assert ("POST", "/admin/collections") in unsafe and ("POST", "/logout") in unsafe
    before = api.get("admin", "/api/v1/collections").json()
    for method, path in unsafe:
        if path == "/login":  # no session yet: it has its own login CSRF cookie (web tests)
            continue
        url = concrete(path)
        data = {"name": "csrf-victim", "username": "csrf-victim", "password": "long enough 1"}
        for headers, form in [
            (admin, data),
            (admin, {**data, "csrf_token": "forged"}),
            ({**admin, "Sec-Fetch-Site": "cross-site"}, {**data, "csrf_token": csrf}),
            ({**admin, "Origin": "https://evil.example"}, {**data, "csrf_token": csrf}),
        ]:
            r = api.client.request(method, url, headers=headers, data=form, follow_redirects=False)
            assert r.status_code == 403, (method, path, r.status_code, headers.keys())
    assert api.get("admin", "/api/v1/collections").json() == before
    assert api.get("admin", "/api/v1/users/me").status_code == 200  # not logged out either


def _assert_page_headers(r: Any, what: str) -> None:
    h = r.headers
    assert h.get("x-content-type-options") == "nosniff", what
    assert h.get("referrer-policy") in ("no-referrer", "same-origin"), what
    csp = h.get("content-security-policy", "")
    assert "frame-ancestors 'none'" in csp and "default-src" in csp, what
    assert "unsafe-inline" not in csp.split("script-src", 1)[1].split(";")[0], what


def test_every_html_response_has_the_security_headers(api: Api, site: dict[str, Any]) -> None:
    admin, _ = site["sessions"]["admin"]
    cid = site["cid"]
    pages = [
        "/login",
        "/admin",
        f"/admin/collections/{cid}",
        f"/admin/collections/{cid}/progress-fragment",
        f"/admin/collections/{cid}/analysis",
        f"/admin/collections/{cid}/analysis/calibration",
        "/admin/collections/424242",  # error page
        "/admin/collections/424242/analysis/calibration",
        "/admin/collections/424242/progress-fragment",
        "/tasks",
        "/docs",
    ]
    for url in pages:
        r = api.client.get(url, headers=admin, follow_redirects=False)
        assert r.status_code < 500, url
        _assert_page_headers(r, url)
    # The assessor's 403 page and a redirect carry them too.
    assessor, _ = site["sessions"]["assessor1"]
    _assert_page_headers(api.client.get("/admin", headers=assessor), "403 page")
    _assert_page_headers(api.client.get("/admin", follow_redirects=False), "redirect")


def test_templates_never_mark_data_safe() -> None:
    """No ``|safe``, ``autoescape false`` or ``Markup`` in any template (Jinja comments, which
    may mention them, are left out)."""
    from app.kernel.settings import templates_dir

    offenders = []
    for path in templates_dir().rglob("*.html"):
        code = re.sub(r"\{#.*?#\}", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
        for line in code.splitlines():
            if re.search(r"\|\s*safe\b|autoescape\s+false|Markup\(", line):
                offenders.append(f"{path.name}: {line.strip()}")
    assert offenders == []


@pytest.mark.parametrize(
    "url",
    [
        f"/api/v1/collections/{BIG}",
        f"/api/v1/collections/{BIG}/queries",
        f"/api/v1/collections/{BIG}/export",
        f"/api/v1/collections/{BIG}/analysis",
        f"/api/v1/admin/collections/{BIG}/progress",
        f"/api/v1/training-runs/{BIG}",
        f"/api/v1/tasks/{BIG}",
    ],
)
def test_out_of_range_ids_are_client_errors(api: Api, url: str) -> None:
    r = api.get("admin", url)
    assert r.status_code in (404, 422), r.text
    assert "detail" in r.json()


def test_out_of_range_ids_in_writes_and_pages(api: Api, site: dict[str, Any]) -> None:
    admin, csrf = site["sessions"]["admin"]
    r = api.client.patch(
        f"/api/v1/admin/collections/{BIG}", headers=api.auth("admin"), json={"name": "x"}
    )
    assert r.status_code in (404, 422), r.text
    r = api.post("admin", f"/api/v1/collections/{BIG}/import", content=b'{"a": 1}')
    assert r.status_code in (404, 422), r.text
    body = {"collection_id": int(BIG), "assessors": ["assessor1"]}
    assert api.post("admin", "/api/v1/admin/plans/preview", json=body).status_code in (404, 422)
    for url in (f"/admin/collections/{BIG}", f"/admin/collections/{BIG}/progress-fragment"):
        assert api.client.get(url, headers=admin).status_code in (404, 422), url
    form = {"csrf_token": csrf, "name": "x", "assessors": "assessor1"}
    for action in ("settings", "plan", "import"):
        r = api.client.post(
            f"/admin/collections/{BIG}/{action}", headers=admin, data=form, follow_redirects=False
        )
        assert r.status_code in (303, 404, 422), (action, r.status_code)


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        (b'{"query_id": "j", "query": "q", "doc_id": "d", "features": [' + b"9" * 400 + b"]}", ""),
        (b'{"query_id": "j", "query": "q", "doc_id": "d", "grade": ' + b"7" * 5000 + b"}", ""),
        (b'{"query_id": "j", "query": "q", "doc_id": "d", "x": ' + b"[" * 20000 + b"}", ""),
    ],
    ids=["huge-int-feature", "5000-digit-int", "deep-nesting"],
)
def test_malformed_ndjson_values_are_line_errors(
    api: Api, site: dict[str, Any], line: bytes, needle: str
) -> None:
    cid = site["cid"]
    before = api.get("admin", f"/api/v1/collections/{cid}").json()
    ok = ndjson([{"query_id": "j0", "query": "fine", "doc_id": "j0"}]) + b"\n"
    r = api.post("admin", f"/api/v1/collections/{cid}/import", content=ok + line + b"\n")
    assert r.status_code == 422, r.text
    assert [e["line"] for e in r.json()["detail"]] == [2]
    assert api.get("admin", f"/api/v1/collections/{cid}").json() == before


def test_nul_in_collection_names_is_refused(api: Api, site: dict[str, Any]) -> None:
    """Postgres cannot store NUL and SQLite would: refuse it on every backend alike."""
    cid = site["cid"]
    r = api.client.patch(
        f"/api/v1/admin/collections/{cid}", headers=api.auth("admin"), json={"name": "a\x00b"}
    )
    assert r.status_code == 422, r.text
    r = api.client.patch(
        f"/api/v1/admin/collections/{cid}",
        headers=api.auth("admin"),
        json={"description": "a\x00b"},
    )
    assert r.status_code == 422, r.text
    admin, csrf = site["sessions"]["admin"]
    r = api.client.post(
        f"/admin/collections/{cid}/settings",
        headers=admin,
        data={"csrf_token": csrf, "name": "a\x00b", "description": "d\x00"},
        follow_redirects=False,
    )
    assert r.status_code == 422 and "must not contain NUL" in r.text
    r = api.client.post(
        "/admin/collections", headers=admin, data={"csrf_token": csrf, "name": "n\x00"}
    )
    stored = api.get("admin", "/api/v1/collections").json()
    assert not [c for c in stored if "\x00" in c["name"] + (c["description"] or "")]


@pytest.mark.parametrize("field", ["run_depth", "unjudged_grade"])
def test_web_import_with_odd_digits_is_an_error_message(
    api: Api, site: dict[str, Any], field: str
) -> None:
    """'²'.isdigit() is True but int('²') fails: the form must answer with a message."""
    admin, csrf = site["sessions"]["admin"]
    cid = site["cid"]
    r = api.client.post(
        f"/admin/collections/{cid}/import",
        headers=admin,
        data={"csrf_token": csrf, "kind": "smart", "pairing": "all", field: "²"},
        files={
            "documents": ("docs", b".I 1\n.W\nx\n"),
            "queries": ("qry", b".I 1\n.W\nx\n"),
        },
        follow_redirects=False,
    )
    # The collection page comes back with the message and the form as posted.
    assert r.status_code == 422, r.text
    assert field in r.text and "must be an integer" in r.text
    assert '<option value="smart" selected>' in r.text
    assert api.get("admin", f"/api/v1/collections/{cid}").json()["queries"] == 1


def test_non_utf8_form_fields_and_uploads(api: Api, site: dict[str, Any]) -> None:
    admin, csrf = site["sessions"]["admin"]
    cid = site["cid"]
    r = api.client.post(
        "/admin/collections",
        headers={**admin, "Content-Type": "application/x-www-form-urlencoded"},
        content=b"csrf_token=" + csrf.encode() + b"&name=%ff%fe",
        follow_redirects=False,
    )
    assert r.status_code in (303, 400, 422)
    r = api.post(
        "admin",
        f"/api/v1/admin/collections/{cid}/import-files?kind=letor",
        files={"features": ("f\xe9.txt", b"\xff\xfe 1 qid:1 1:0.5 #docid = x\n")},
    )
    assert r.status_code == 422 and r.json()["detail"][0]["line"] == 1
    r = api.post(
        "admin",
        f"/api/v1/admin/collections/{cid}/attach-grades",
        files={"qrels": ("q", b"101 0 d1 \xff\n")},
    )
    assert r.status_code == 422 and r.json()["detail"][0]["line"] == 1


def test_export_headers_survive_any_query_id(api: Api) -> None:
    """Query ids are free text: a non-Latin-1 id, or one with the header's own separators,
    must neither break the ``X-Heapjudge-Sources`` header (500) nor make it ambiguous.
    (An id with CR/LF never reaches it: qrels refuses such ids, see
    tests/app/exports/test_hostile_identifiers.py.)"""
    from urllib.parse import unquote

    from tests.app.admin_support import judge_task
    from tests.app.judging.support import make_task

    api.add_user("hdr")
    r = api.post("admin", "/api/v1/collections", json={"name": "odd-ids"})
    cid = r.json()["id"]
    odd = "查询:a,b%20"
    rows = [{"query_id": odd, "query": "q", "doc_id": f"e{i}"} for i in range(3)]
    assert api.post("admin", f"/api/v1/collections/{cid}/import", content=ndjson(rows)).is_success
    tid = make_task(api, cid, odd, "hdr", k=1)
    judge_task(api, "hdr", tid, {"e0": 3.0, "e1": 2.0, "e2": 1.0})
    r = api.get("admin", f"/api/v1/collections/{cid}/export?format=qrels")
    assert r.status_code == 200, r.text
    sources = r.headers["x-heapjudge-sources"]
    assert sources.isascii()
    qid, assessor, task = (unquote(part) for part in sources.split(":"))
    assert (qid, assessor, task) == (odd, "hdr", str(tid))
    assert r.text.splitlines()[0] == f"{odd} 0 e0 1"


def test_web_import_limits_the_number_of_files(api: Api, site: dict[str, Any]) -> None:
    """The CSRF dependency parses the form first (Starlette caches it), so the route's own
    ``max_files`` never applies; the route must count the parts itself."""

    admin, csrf = site["sessions"]["admin"]
    cid = site["cid"]
    files = [(f"f{i}", (f"f{i}.txt", b"1 qid:1 1:0.5 #docid = z\n")) for i in range(30)]
    r = api.client.post(
        f"/admin/collections/{cid}/import",
        headers=admin,
        data={"csrf_token": csrf, "kind": "letor"},
        files=files,
        follow_redirects=False,
    )
    assert r.status_code == 413
    assert "too many files" in r.text.lower()

    # The REST import, with the cookie and the token as a form field, counts too.
    r = api.client.post(
        f"/api/v1/admin/collections/{cid}/import-files?kind=letor",
        headers={**admin, "Origin": "http://testserver"},
        data={"csrf_token": csrf},
        files=files,
    )
    assert r.status_code == 422 and "too many parts" in r.text
