"""The judged documents as their own responses, and one page policy without inline styles.

Every page (walked from the app's routes, as an admin, as an assessor and anonymously) sends
the one page policy, :data:`app.http.middleware.PAGE_CSP`, with ``style-src 'self'`` and no
``'unsafe-inline'`` anywhere; the judging pages' documents are loaded from
``GET /tasks/{id}/document`` and ``/second-opinions/{id}/document``, checked as their page is,
answered with their own sandboxing policy and cache headers (docs/security.md#html-from-users).
Real app over a temporary SQLite file (Starlette's TestClient); the browser side is in
tests/e2e/test_document_frames_browser.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient

from app.auth import sessions as web_sessions
from app.auth.tokens import Identity
from app.http.middleware import DOCUMENT_CSP, PAGE_CSP
from app.kernel.settings import Settings
from app.main import create_app
from app.users import service as users
from tests.app.auth.test_admin_pages_security import web_routes
from tests.app.web.support import tags
from tests.e2e.web_support import add_user, init_db, oracle_scores, relevance_docs, seed_task

HOSTILE_HTML = '<p style="color:#a00">styled</p><script>parent.document.title="x"</script>'
#: The routes that answer a judged document (their own policy), not a page.
DOCUMENT_ROUTES = {"/tasks/{task_id}/document", "/second-opinions/{item_id}/document"}


def routed_second_opinion(db: Any, owner: Identity, second: str) -> tuple[int, int, list[str]]:
    """(task id, second-opinion id, task doc ids): ``owner``'s tournament+robust task, answered
    by the hidden relevance order until a repeat is routed to ``second``."""
    from app.judging import service as judging

    seeded = seed_task(
        db,
        assessor_id=owner.id,
        docs=relevance_docs(10, prefix="r"),
        k=3,
        seed=3,
        options={"strategy": "tournament+robust", "second_assessor": [second]},
    )
    scores = oracle_scores(seeded.doc_ids)
    body = judging.next_question(db=db, user=owner, task_id=seeded.task_id)
    while "waiting" not in body:
        assert not body["done"]
        left, right = body["pair"]["left"]["doc_id"], body["pair"]["right"]["doc_id"]
        outcome = "left" if scores[left] > scores[right] else "right"
        data = {"seq": body["seq"], "left": left, "right": right, "outcome": outcome}
        body = judging.submit_judgment(db=db, user=owner, task_id=seeded.task_id, data=data)
    return seeded.task_id, int(body["waiting"]["second_opinion_id"]), seeded.doc_ids


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp: Path = tmp_path_factory.mktemp("frames")
    db = init_db(tmp / "frames.db")
    add_user(db, "chief", "chief password 12", role="admin")
    ann = add_user(db, "ann", "ann password 12")
    zed = add_user(db, "zed", "zed password 12")
    docs = relevance_docs(6)
    docs[0]["html"] = HOSTILE_HTML
    task = seed_task(db, assessor_id=ann, docs=docs, k=2)
    graded = seed_task(db, assessor_id=ann, docs=relevance_docs(3, prefix="g"), method="graded")
    other = seed_task(db, assessor_id=zed, docs=relevance_docs(4, prefix="z"), k=2)
    zed_task, item, zed_docs = routed_second_opinion(db, Identity(zed, "zed", "assessor"), "ann")
    settings = Settings(database_url=f"sqlite:///{tmp / 'frames.db'}", dev=True)
    cookies = {}
    for name in ("chief", "ann", "zed"):
        raw, _csrf = web_sessions.create_web_session(db, users.get_user(db=db, username=name))
        cookies[name] = {"Cookie": f"{web_sessions.SESSION_COOKIE}={raw}"}
    with TestClient(create_app(settings), base_url="http://testserver") as client:
        yield {
            "client": client,
            "cookies": cookies,
            "task": task,
            "graded": graded,
            "other": other,
            "zed_task": zed_task,
            "item": item,
            "zed_docs": zed_docs,
            "collection": 1,
        }
    db.dispose()


def _get(site: dict[str, Any], url: str, who: str | None, **headers: str) -> Any:
    cookie = site["cookies"][who] if who else {}
    return site["client"].get(url, headers={**cookie, **headers}, follow_redirects=False)


def _frame_srcs(html: str) -> list[str]:
    frames = tags(html, "iframe")
    assert frames and all(f.get("srcdoc") is None for f in frames)
    return [str(f["src"]) for f in frames]


def test_every_page_sends_one_policy_without_inline_styles(site: dict[str, Any]) -> None:
    ids = {
        "task_id": site["task"].task_id,
        "item_id": site["item"],
        "collection_id": site["collection"],
    }
    directives = dict(d.strip().split(" ", 1) for d in PAGE_CSP.split(";"))
    assert directives["style-src"] == "'self'" and directives["script-src"] == "'self'"
    assert "unsafe-inline" not in PAGE_CSP
    routes = [p for m, p in web_routes(site["client"].app) if m == "GET"]
    assert "/tasks/{task_id}" in routes and "/second-opinions/{item_id}" in routes
    seen: dict[tuple[str, str | None], int] = {}
    for path in routes:
        if path in DOCUMENT_ROUTES:
            continue
        url = re.sub(r"\{(\w+)\}", lambda m: str(ids.get(m.group(1), 1)), path)
        for who in ("chief", "ann", None):
            r = _get(site, url, who)
            seen[(path, who)] = r.status_code
            if not r.headers.get("content-type", "").startswith("text/html"):
                continue
            csp = r.headers["content-security-policy"]
            assert csp == PAGE_CSP, (path, who)
            assert "unsafe-inline" not in csp, (path, who)
    # The pages that used to allow inline styles were really rendered.
    assert seen[("/tasks/{task_id}", "ann")] == 200
    assert seen[("/second-opinions/{item_id}", "ann")] == 200
    assert seen[("/admin", "chief")] == 200
    page = _get(site, f"/tasks/{site['graded'].task_id}", "ann")
    assert page.headers["content-security-policy"] == PAGE_CSP


def test_the_judging_page_frames_documents_by_url(site: dict[str, Any]) -> None:
    tid = site["task"].task_id
    page = _get(site, f"/tasks/{tid}", "ann")
    srcs = _frame_srcs(page.text)
    assert len(srcs) == 2
    for frame in tags(page.text, "iframe"):
        assert frame["sandbox"] == ""  # no allow-scripts, no allow-same-origin
    for src in srcs:
        parts = urlsplit(src)
        assert parts.path == f"/tasks/{tid}/document"
        query = parse_qs(parts.query)
        assert query["doc"][0] in site["task"].doc_ids and query["hl"] == ["1"]
        assert re.fullmatch(r"[0-9a-f]{16}", query["v"][0])


def test_a_document_is_its_own_sandboxed_cacheable_response(site: dict[str, Any]) -> None:
    tid = site["task"].task_id
    src = f"/tasks/{tid}/document?doc=d000&hl=0"
    first = _get(site, src, "ann")
    assert first.status_code == 200
    assert first.headers["content-type"].startswith("text/html")
    h = first.headers
    assert h["content-security-policy"] == DOCUMENT_CSP
    policy = dict((d.strip() + " ").split(" ", 1) for d in DOCUMENT_CSP.split(";"))
    assert policy["sandbox"] == ""  # sandboxed without any token
    assert policy["default-src"].strip() == "'none'"
    assert policy["style-src"].strip() == "'unsafe-inline'"
    assert policy["frame-ancestors"].strip() == "'self'"
    assert h["x-content-type-options"] == "nosniff"
    assert h["x-frame-options"] == "SAMEORIGIN"
    assert h["referrer-policy"] == "no-referrer"
    # The stored HTML, as stored (the sandbox, not an edit, keeps its script from running).
    assert '<p style="color:#a00">' in first.text and "styled" in first.text
    # Without its version: the browser must revalidate; the ETag gives a 304.
    assert h["cache-control"] == "private, no-cache"
    etag = h["etag"]
    again = _get(site, src, "ann", **{"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["content-security-policy"] == DOCUMENT_CSP
    # With its version (as the page names it): kept by this browser.
    version = etag.strip('"')
    kept = _get(site, f"{src}&v={version}", "ann")
    assert kept.headers["cache-control"] == "private, max-age=86400, immutable"
    assert kept.text == first.text
    # Another rendering (highlighting on) is another version.
    marked = _get(site, f"/tasks/{tid}/document?doc=d001&hl=1", "ann")
    plain = _get(site, f"/tasks/{tid}/document?doc=d001&hl=0", "ann")
    assert "<mark>" in marked.text and "<mark>" not in plain.text
    assert marked.headers["etag"] != plain.headers["etag"]


def test_the_page_names_the_versions_the_documents_are_served_with(site: dict[str, Any]) -> None:
    page = _get(site, f"/tasks/{site['task'].task_id}", "ann")
    for src in _frame_srcs(page.text):
        r = _get(site, src, "ann")
        assert r.status_code == 200
        assert r.headers["cache-control"] == "private, max-age=86400, immutable"
    frames = _get(site, f"/tasks/{site['task'].task_id}/frames?ids=d002&ids=d003&hl=1", "ann")
    docs = frames.json()["docs"]
    assert [d["doc_id"] for d in docs] == ["d002", "d003"]
    for d in docs:
        assert set(d) == {"doc_id", "title", "src", "anchors"} and d["anchors"] >= 1
        assert _get(site, d["src"], "ann").headers["cache-control"].endswith("immutable")


def test_the_document_url_refuses_what_its_page_refuses(site: dict[str, Any]) -> None:
    tid, other = site["task"].task_id, site["other"].task_id
    assert _get(site, f"/tasks/{tid}/document?doc=d000", None).status_code == 401
    assert _get(site, f"/tasks/{other}/document?doc=z000", "ann").status_code == 403
    assert _get(site, f"/tasks/{tid}/document?doc=z000", "ann").status_code == 404  # not its
    assert _get(site, f"/tasks/{tid}/document?doc=nope", "ann").status_code == 404
    assert _get(site, "/tasks/999999/document?doc=d000", "ann").status_code == 404
    assert _get(site, f"/tasks/{tid}/document?doc=d000", "chief").status_code == 403
    assert _get(site, f"/tasks/{tid}/document", "ann").status_code == 422  # no doc named
    for r in (
        _get(site, f"/tasks/{other}/document?doc=z000", "ann"),
        _get(site, f"/tasks/{tid}/document?doc=nope", "ann"),
    ):
        assert r.headers["cache-control"] == "no-store"
        assert "<p" not in r.text


def test_a_second_opinion_serves_only_its_pair_to_its_assignee(site: dict[str, Any]) -> None:
    item = site["item"]
    page = _get(site, f"/second-opinions/{item}", "ann")
    assert page.status_code == 200
    srcs = _frame_srcs(page.text)
    shown = {parse_qs(urlsplit(s).query)["doc"][0] for s in srcs}
    assert len(shown) == 2
    for src in srcs:
        assert urlsplit(src).path == f"/second-opinions/{item}/document"
        r = _get(site, src, "ann")
        assert r.status_code == 200 and r.headers["content-security-policy"] == DOCUMENT_CSP
        assert _get(site, src, "zed").status_code == 403  # the task's owner is not the assignee
        assert _get(site, src, "chief").status_code == 403
    hidden = next(d for d in site["zed_docs"] if d not in shown)
    assert _get(site, f"/second-opinions/{item}/document?doc={hidden}", "ann").status_code == 404
    assert _get(site, "/second-opinions/999999/document?doc=r000", "ann").status_code == 404
    # Nor does zed's own task page lend ann its documents.
    url = f"/tasks/{site['zed_task']}/document?doc={hidden}"
    assert _get(site, url, "ann").status_code == 403
