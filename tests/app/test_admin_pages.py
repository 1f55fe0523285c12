"""Admin pages over a real app and SQLite file (TestClient, cookie session + CSRF forms):
create a collection, import, plan, watch progress move, export; assessors get 403."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.services import collections
from app.settings import Settings
from tests.app.test_web_pages import hidden_csrf
from tests.e2e.web_support import add_user, init_db

TOPICS = b"<top>\n<num> 1\n<title> heaps\n</top>\n<top>\n<num> 2\n<title> pairs\n</top>\n"
DOCS = b"".join(
    b'{"doc_id": "d%d", "title": "Doc %d", "text": "text %d"}\n' % (i, i, i) for i in range(6)
)
QRELS = b"".join(b"%d 0 d%d %d\n" % (q, i, (i + q) % 3) for q in (1, 2) for i in range(6))


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[dict[str, Any]]:
    db_path = tmp_path / "admin.db"
    db = init_db(db_path)
    add_user(db, "boss", "boss password 1", role="admin")
    for name in ("ann", "ben", "cat", "dan"):
        add_user(db, name, f"{name} password 1")
    settings = Settings(
        database_url=f"sqlite:///{db_path}", dev=True, public_origin="http://testserver"
    )
    app = create_app(settings)
    with TestClient(app, base_url="http://testserver") as client:
        yield {"client": client, "db": db}
    db.dispose()


def login(client: TestClient, username: str, password: str) -> None:
    token = hidden_csrf(client.get("/login").text)
    r = client.post(
        "/login",
        data={"username": username, "password": password, "csrf_token": token, "next": "/admin"},
        follow_redirects=False,
    )
    assert r.status_code == 303, r.text


def test_admin_workflow_in_pages(site: dict[str, Any]) -> None:
    client: TestClient = site["client"]
    login(client, "boss", "boss password 1")
    home = client.get("/admin")
    assert home.status_code == 200 and "Collections" in home.text
    csrf = hidden_csrf(home.text)
    # Create a collection.
    r = client.post("/admin/collections", data={"name": "study", "csrf_token": csrf})
    assert r.status_code == 200  # followed the 303 to the collection page
    cid = int(re.search(r"/admin/collections/(\d+)/progress-fragment", r.text).group(1))
    # Import TREC topics + JSONL documents + qrels (multipart form with the CSRF field).
    r = client.post(
        f"/admin/collections/{cid}/import",
        data={"csrf_token": csrf, "action": "import", "kind": "trec", "pairing": "qrels"},
        files={
            "topics": ("topics.txt", TOPICS, "text/plain"),
            "documents": ("docs.jsonl", DOCS, "application/json"),
            "qrels": ("qrels.txt", QRELS, "text/plain"),
        },
    )
    assert r.status_code == 200 and "Imported 12 rows" in r.text
    # A corrupted file is rejected with its line, and nothing more is stored.
    r = client.post(
        f"/admin/collections/{cid}/import",
        data={"csrf_token": csrf, "action": "import", "kind": "trec"},
        files={
            "topics": ("topics.txt", TOPICS, "text/plain"),
            "documents": ("docs.jsonl", DOCS + b"{oops\n", "application/json"),
            "qrels": ("qrels.txt", QRELS, "text/plain"),
        },
    )
    assert "Nothing was imported" in r.text and "docs.jsonl:7" in r.text
    assert collections.get_collection(db=site["db"], collection_id=cid).documents == 12
    # Plan: preview (grid), then create.
    plan = {
        "csrf_token": csrf,
        "assessors": ["ann", "ben", "cat", "dan"],
        "scheme": "rotation",
        "shifts": "0",
        "k": "2",
        "opt_pair_cache": "1",
        "pool_mode": "all",
        "seed": "1",
        "name": "pilot",
    }
    refused = client.post(f"/admin/collections/{cid}/plan", data=plan)
    # The rotation needs as many queries as assessors: 2 queries for 4 assessors is refused.
    assert "The plan was not created" in refused.text
    assert "at least as many queries as assessors" in refused.text
    balanced = {**plan, "scheme": "balanced", "per_topk": "1", "per_graded": "1"}
    preview = client.post(f"/admin/collections/{cid}/plan", data=balanced)
    assert preview.status_code == 200
    assert "Plan preview: pilot" in preview.text and "Create 4 tasks" in preview.text
    created = client.post(f"/admin/collections/{cid}/plan", data={**balanced, "create": "1"})
    assert "Created 4 tasks (plan &#39;pilot&#39;)" in created.text


def test_rotation_plan_and_progress_fragment(site: dict[str, Any]) -> None:
    client: TestClient = site["client"]
    login(client, "boss", "boss password 1")
    csrf = hidden_csrf(client.get("/admin").text)
    r = client.post("/admin/collections", data={"name": "rot", "csrf_token": csrf})
    cid = int(re.search(r"/admin/collections/(\d+)/progress-fragment", r.text).group(1))
    topics = b"".join(b"<top>\n<num> %d\n<title> q%d\n</top>\n" % (q, q) for q in range(1, 9))
    qrels = b"".join(b"%d 0 d%d 1\n" % (q, i) for q in range(1, 9) for i in range(6))
    r = client.post(
        f"/admin/collections/{cid}/import",
        data={"csrf_token": csrf, "action": "import", "kind": "trec"},
        files={
            "topics": ("t.txt", topics, "text/plain"),
            "documents": ("d.jsonl", DOCS, "application/json"),
            "qrels": ("q.txt", qrels, "text/plain"),
        },
    )
    assert "Imported 48 rows" in r.text
    plan = {
        "csrf_token": csrf,
        "assessors": ["ann", "ben", "cat", "dan"],
        "scheme": "rotation",
        "shifts": "0,2",
        "k": "2",
        "pool_mode": "all",
        "name": "rot",
    }
    preview = client.post(f"/admin/collections/{cid}/plan", data=plan)
    assert "All constraints hold" in preview.text and "Create 32 tasks" in preview.text
    created = client.post(f"/admin/collections/{cid}/plan", data={**plan, "create": "1"})
    assert "Created 32 tasks" in created.text
    fragment = client.get(f"/admin/collections/{cid}/progress-fragment")
    assert fragment.status_code == 200
    assert 'data-testid="judgments-total">0<' in fragment.text
    assert "32 pending" in fragment.text
    # Pairs CSV download link works with the cookie session (GET, admin).
    csv_resp = client.get(f"/api/v1/admin/collections/{cid}/export-extra?format=pairs-csv")
    assert csv_resp.status_code == 200 and csv_resp.text.startswith("query_id,")


def test_assessor_gets_403_on_admin_pages(site: dict[str, Any]) -> None:
    client: TestClient = site["client"]
    login(client, "ann", "ann password 1")
    csrf = hidden_csrf(client.get("/tasks").text)
    for path in ("/admin", "/admin/collections/1", "/admin/collections/1/progress-fragment"):
        assert client.get(path).status_code == 403, path
    for path in (
        "/admin/collections",
        "/admin/collections/1/settings",
        "/admin/collections/1/import",
        "/admin/collections/1/plan",
        "/admin/users",
        "/admin/users/ben/disable",
    ):
        r = client.post(path, data={"csrf_token": csrf, "name": "x"})
        assert r.status_code == 403, path
    # Without the CSRF field, an admin's form post is refused too.
    client.cookies.clear()
    login(client, "boss", "boss password 1")
    assert client.post("/admin/collections", data={"name": "nocsrf"}).status_code == 403
    anonymous = TestClient(client.app, base_url="http://testserver")
    assert anonymous.get("/admin", follow_redirects=False).status_code == 303
