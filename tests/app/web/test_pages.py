"""Web UI without a browser: login/logout, CSRF, throttling, CSP and the sandboxed frames.

Runs the real app (``create_app``) over a temporary SQLite file through Starlette's
TestClient. The browser-driven behaviour (keyboard loop, timer, hostile documents actually not
running) is in tests/e2e/test_web_browser.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.http.middleware import PAGE_CSP
from app.kernel.settings import Settings
from app.main import create_app
from tests.app.web.support import hidden_csrf, tags
from tests.e2e.web_support import add_user, init_db, relevance_docs, seed_task

HOSTILE_TITLE = '<img src=x onerror="document.title=\'pwned\'">Q&A "quoted"'
HOSTILE_HTML = '<script>parent.document.title="pwned"</script><p onclick="x()">hi</p>'


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[dict[str, Any]]:
    db_path = tmp_path / "web.db"
    db = init_db(db_path)
    alice = add_user(db, "alice", "correct horse battery")
    bob = add_user(db, "bob", "bob's long password")
    docs = relevance_docs(6)
    docs[0]["html"] = HOSTILE_HTML
    docs[0]["title"] = "<b>bold title</b>"
    task = seed_task(db, assessor_id=alice, docs=docs, k=2, query_title=HOSTILE_TITLE)
    other = seed_task(db, assessor_id=bob, docs=relevance_docs(4, prefix="b"), k=2)
    graded = seed_task(db, assessor_id=alice, docs=relevance_docs(3, prefix="g"), method="graded")
    settings = Settings(
        database_url=f"sqlite:///{db_path}",
        dev=True,
        public_origin="http://testserver",
        login_max_failures=3,
    )
    app = create_app(settings)
    with TestClient(app, base_url="http://testserver") as client:
        yield {"client": client, "db": db, "task": task, "other": other, "graded": graded}
    db.dispose()


def login(client: TestClient, username: str = "alice", password: str = "correct horse battery"):
    page = client.get("/login")
    token = hidden_csrf(page.text)
    return client.post(
        "/login",
        data={"username": username, "password": password, "csrf_token": token, "next": "/tasks"},
        follow_redirects=False,
    )


def test_login_page_has_strict_csp_and_no_inline_script(site: dict[str, Any]) -> None:
    resp = site["client"].get("/login")
    assert resp.status_code == 200
    csp = resp.headers["content-security-policy"]
    assert csp == PAGE_CSP
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["script-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["object-src"] == "'none'"
    assert "unsafe" not in directives["script-src"]
    assert directives["style-src"] == "'self'"  # the pages' styles are all in stylesheets
    for script in tags(resp.text, "script"):
        assert script.get("src") or script.get("type") == "application/json"
    assert not re.search(r"\son[a-z]+\s*=", resp.text), "inline event handler in the page"


def test_login_success_sets_httponly_lax_cookie_and_lists_tasks(site: dict[str, Any]) -> None:
    client = site["client"]
    resp = login(client)
    assert resp.status_code == 303
    assert resp.headers["location"] == "/tasks"
    cookie = resp.headers["set-cookie"]
    assert "heapjudge_session=" in cookie
    assert "HttpOnly" in cookie
    assert "samesite=lax" in cookie.lower()
    page = client.get("/tasks")
    assert page.status_code == 200
    assert f'href="/tasks/{site["task"].task_id}"' in page.text
    assert f'href="/tasks/{site["other"].task_id}"' not in page.text  # bob's task
    assert "&lt;img src=x" in page.text and "<img src=x" not in page.text


def test_bad_credentials_get_one_generic_message(site: dict[str, Any]) -> None:
    client = site["client"]
    wrong = login(client, "alice", "wrong password")
    unknown = login(client, "nobody", "wrong password")
    assert wrong.status_code == unknown.status_code == 401
    for resp in (wrong, unknown):
        assert "Unknown username or wrong password." in resp.text
        assert "heapjudge_session" not in resp.headers.get("set-cookie", "")


def test_repeated_failures_are_throttled_even_with_the_right_password(
    site: dict[str, Any],
) -> None:
    client = site["client"]
    for _ in range(3):  # login_max_failures=3
        assert login(client, "alice", "nope").status_code == 401
    throttled = login(client)  # right password, but locked out
    assert throttled.status_code == 429
    assert int(throttled.headers["retry-after"]) > 0
    assert "Too many failed attempts" in throttled.text
    assert "heapjudge_session" not in throttled.headers.get("set-cookie", "")
    assert login(client, "bob", "bob's long password").status_code == 303  # other user fine


def test_login_form_needs_its_csrf_token_and_same_origin(site: dict[str, Any]) -> None:
    client = site["client"]
    client.get("/login")
    missing = client.post(
        "/login",
        data={"username": "alice", "password": "correct horse battery"},
        follow_redirects=False,
    )
    assert missing.status_code == 403
    token = hidden_csrf(client.get("/login").text)
    cross = client.post(
        "/login",
        data={"username": "alice", "password": "correct horse battery", "csrf_token": token},
        headers={"Sec-Fetch-Site": "cross-site"},
        follow_redirects=False,
    )
    assert cross.status_code == 403
    foreign_origin = client.post(
        "/login",
        data={"username": "alice", "password": "correct horse battery", "csrf_token": token},
        headers={"Origin": "https://evil.example"},
        follow_redirects=False,
    )
    assert foreign_origin.status_code == 403


def test_open_redirect_after_login_is_refused(site: dict[str, Any]) -> None:
    client = site["client"]
    token = hidden_csrf(client.get("/login").text)
    resp = client.post(
        "/login",
        data={
            "username": "alice",
            "password": "correct horse battery",
            "csrf_token": token,
            "next": "//evil.example/x",
        },
        follow_redirects=False,
    )
    assert resp.status_code == 303
    assert resp.headers["location"] == "/tasks"


def test_logout_needs_csrf_and_kills_the_session(site: dict[str, Any]) -> None:
    client = site["client"]
    login(client)
    raw_cookie = client.cookies.get("heapjudge_session")
    page = client.get("/tasks")
    token = hidden_csrf(page.text)
    # Without the token, and with it from another site: refused, session still alive.
    assert client.post("/logout", follow_redirects=False).status_code == 403
    cross = client.post(
        "/logout",
        data={"csrf_token": token},
        headers={"Sec-Fetch-Site": "cross-site"},
        follow_redirects=False,
    )
    assert cross.status_code == 403
    assert client.get("/tasks", follow_redirects=False).status_code == 200
    resp = client.post("/logout", data={"csrf_token": token}, follow_redirects=False)
    assert resp.status_code == 303
    assert resp.headers["location"] == "/login"
    assert resp.headers["clear-site-data"] == '"cache"'  # the documents the browser kept
    # The old cookie value is useless now, even if the browser kept it.
    client.cookies.set("heapjudge_session", raw_cookie)
    again = client.get("/tasks", follow_redirects=False)
    assert again.status_code == 303
    assert again.headers["location"].startswith("/login")


def test_pages_redirect_to_login_when_anonymous(site: dict[str, Any]) -> None:
    client = site["client"]
    tid = site["task"].task_id
    resp = client.get(f"/tasks/{tid}", follow_redirects=False)
    assert resp.status_code == 303
    assert resp.headers["location"] == f"/login?next=/tasks/{tid}"


def test_foreign_and_missing_tasks(site: dict[str, Any]) -> None:
    client = site["client"]
    login(client)
    assert client.get(f"/tasks/{site['other'].task_id}").status_code == 403
    assert client.get("/tasks/999999").status_code == 404


def test_judging_page_sandboxes_documents_and_escapes_everything(site: dict[str, Any]) -> None:
    client = site["client"]
    login(client)
    resp = client.get(f"/tasks/{site['task'].task_id}")
    assert resp.status_code == 200
    # The one page policy: documents are their own responses
    # (tests/app/web/test_document_frames.py).
    assert resp.headers["content-security-policy"] == PAGE_CSP
    directives = dict(d.strip().split(" ", 1) for d in PAGE_CSP.split(";"))
    assert directives["style-src"] == "'self'"
    assert directives["script-src"] == "'self'"
    assert 'style="' not in resp.text.split("<iframe", 1)[0]  # none in the page's own markup
    frames = tags(resp.text, "iframe")
    assert len(frames) == 2
    for frame in frames:
        assert "sandbox" in frame and frame["sandbox"] == ""  # no tokens at all
        assert frame.get("srcdoc") is None
        assert str(frame.get("src")).startswith(f"/tasks/{site['task'].task_id}/document?doc=")
    raw_frames = re.findall(r"<iframe[^>]*>", resp.text)
    for raw in raw_frames:
        assert "allow-scripts" not in raw and "allow-same-origin" not in raw
        assert "<script" not in raw
    # The query title is escaped in the page body (and in the boot JSON).
    assert "<img src=x" not in resp.text
    assert "&lt;img src=x onerror=" in resp.text
    # The boot block is JSON, not script, and cannot break out of its element.
    boot = re.search(
        r'<script type="application/json" id="hj-boot">(.*?)</script>', resp.text, re.S
    )
    assert boot is not None
    assert "<" not in boot.group(1)
    # Every script is external (CSP script-src 'self').
    for script in tags(resp.text, "script"):
        assert script.get("src", "").startswith("/static/") or script.get("type") == (
            "application/json"
        )


def test_hostile_document_is_served_only_as_its_own_document(site: dict[str, Any]) -> None:
    """The hostile document d000 never appears in a page: its frame names its URL (escaped),
    and the text rendering escapes a plain-text document's markup."""
    from app.web.page_data import render_frame

    text_doc = render_frame(text="<script>x()</script> & more", html_body=None).markup
    assert "<script>" not in text_doc and "&lt;script&gt;x()&lt;/script&gt; &amp; more" in text_doc

    from app.web.templates import templates

    env = templates().env
    tmpl = env.from_string(
        '{% import "judging/_common.html" as c %}{{ c.frame("left", doc, "Left") }}'
    )

    class Doc:
        doc_id = "d000"
        title = "<b>bold</b>"
        src = '/tasks/1/document?doc=d"000&hl=1&v=abc'
        anchors = 1

    out = tmpl.render(doc=Doc())
    (frame,) = tags(out, "iframe")
    assert frame["src"] == Doc.src  # the browser gets exactly the URL back
    assert "srcdoc" not in frame
    assert "&lt;b&gt;bold&lt;/b&gt;" in out
    client = site["client"]
    login(client)
    page = client.get(f"/tasks/{site['task'].task_id}")
    assert "parent.document.title" not in page.text


def test_graded_page_shows_five_grade_buttons(site: dict[str, Any]) -> None:
    client = site["client"]
    login(client)
    resp = client.get(f"/tasks/{site['graded'].task_id}")
    assert resp.status_code == 200
    buttons = [
        b for b in tags(resp.text, "button") if (b.get("data-action") or "").startswith("grade")
    ]
    assert [b["data-action"] for b in buttons] == [f"grade{i}" for i in range(5)]
    assert [b["aria-keyshortcuts"] for b in buttons] == ["1", "2", "3", "4", "5"]
    assert len(tags(resp.text, "iframe")) == 1


def test_static_assets_are_served_locally(site: dict[str, Any]) -> None:
    client = site["client"]
    page = client.get("/login").text
    links = [a["href"] for a in tags(page, "link") if a.get("rel") == "stylesheet"]
    assert links and all(str(h).startswith("/static/") for h in links)
    assert client.get(str(links[0])).status_code == 200
    assert client.get("/static/js/judge/main.js").status_code == 200
    assert client.get("/static/js/admin/main.js").status_code == 200
    assert client.get("/static/css/admin.css").status_code == 200
    assert "http://" not in client.get("/static/css/app.css").text


def boot_data(html: str) -> dict[str, Any]:
    import json

    match = re.search(r'<script type="application/json" id="hj-boot">(.*?)</script>', html, re.S)
    assert match is not None
    return json.loads(match.group(1))


def test_judging_api_with_the_session_cookie_needs_the_pages_csrf_token(
    site: dict[str, Any],
) -> None:
    """The page's JavaScript posts judgments with the cookie and X-CSRF-Token
    (docs/security.md#csrf)."""
    client = site["client"]
    login(client)
    tid = site["task"].task_id
    boot = boot_data(client.get(f"/tasks/{tid}").text)
    q = boot["question"]
    body = {
        "seq": q["seq"],
        "left": q["pair"]["left"]["doc_id"],
        "right": q["pair"]["right"]["doc_id"],
        "outcome": "left",
        "active_ms": 1234,
    }
    url = f"/api/v1/tasks/{tid}/judgments"
    assert client.post(url, json=body).status_code == 403  # no token
    wrong = client.post(url, json=body, headers={"X-CSRF-Token": "not-the-token"})
    assert wrong.status_code == 403
    cross = client.post(
        url,
        json=body,
        headers={"X-CSRF-Token": boot["csrf_token"], "Sec-Fetch-Site": "cross-site"},
    )
    assert cross.status_code == 403
    ok = client.post(url, json=body, headers={"X-CSRF-Token": boot["csrf_token"]})
    assert ok.status_code == 200, ok.text
    assert ok.json()["seq"] == q["seq"] + 1
    # The same judgment again (a retry) stores nothing and answers the same.
    again = client.post(url, json=body, headers={"X-CSRF-Token": boot["csrf_token"]})
    assert again.status_code == 200 and again.json()["seq"] == q["seq"] + 1
    # The page now resumes at the next question, with the stored time counted.
    boot2 = boot_data(client.get(f"/tasks/{tid}").text)
    assert boot2["question"]["seq"] == q["seq"] + 1
    assert boot2["active_ms"] == 1234


def test_lookahead_lists_the_possible_next_documents(site: dict[str, Any]) -> None:
    from labeling.protocol.session import open_session
    from labeling.protocol.types import PairAnswer

    client = site["client"]
    login(client)
    task = site["task"]
    tid = task.task_id
    boot = boot_data(client.get(f"/tasks/{tid}").text)
    q = boot["question"]
    resp = client.get(f"/tasks/{tid}/lookahead", params={"seq": q["seq"]})
    assert resp.status_code == 200
    got = [d["doc_id"] for d in resp.json()["docs"]]
    # Independent expectation: replay the labeling core with each possible answer.
    shown = {q["pair"]["left"]["doc_id"], q["pair"]["right"]["doc_id"]}
    expected: list[str] = []
    for outcome in ("left", "right"):
        s = open_session("topk", task.doc_ids, k=2, seed=7)
        s.submit(PairAnswer(q["pair"]["left"]["doc_id"], q["pair"]["right"]["doc_id"], outcome))
        nxt = s.pending
        assert nxt is not None
        expected += [d for d in (nxt.left, nxt.right) if d not in shown and d not in expected]
    assert got == expected
    # URLs of the rendered documents (the frames preload them), not their text.
    assert all(set(d) == {"doc_id", "title", "src", "anchors"} for d in resp.json()["docs"])
    # A stale seq gets nothing; someone else's task is refused.
    stale = client.get(f"/tasks/{tid}/lookahead", params={"seq": q["seq"] + 5})
    assert stale.status_code == 200 and stale.json()["docs"] == []
    foreign = client.get(f"/tasks/{site['other'].task_id}/lookahead", params={"seq": 0})
    assert foreign.status_code == 403
