"""Helpers of the page tests (web, runs, pools, planning, auth): reading a page's tags and
its CSRF token, logging in through the form, a collection made through the admin pages, and
an app served over a SQLite file."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from app.kernel.settings import Settings
from app.main import create_app

TOPICS = b"<top>\n<num> 1\n<title> heaps\n</top>\n<top>\n<num> 2\n<title> pairs\n</top>\n"
DOCS = b"".join(
    b'{"doc_id": "d%d", "title": "Doc %d", "text": "text %d"}\n' % (i, i, i) for i in range(6)
)
QRELS = b"".join(b"%d 0 d%d %d\n" % (q, i, (i + q) % 3) for q in (1, 2) for i in range(6))


class _Collect(HTMLParser):
    """Collects start tags with their attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags(html: str, name: str) -> list[dict[str, str | None]]:
    parser = _Collect()
    parser.feed(html)
    return [attrs for tag, attrs in parser.tags if tag == name]


def hidden_csrf(html: str) -> str:
    for attrs in tags(html, "input"):
        if attrs.get("name") == "csrf_token":
            return str(attrs.get("value"))
    raise AssertionError("no csrf_token field in the page")


def login(client: TestClient, username: str, password: str) -> None:
    """Log in through the form (its CSRF token included), landing on /admin."""
    token = hidden_csrf(client.get("/login").text)
    r = client.post(
        "/login",
        data={"username": username, "password": password, "csrf_token": token, "next": "/admin"},
        follow_redirects=False,
    )
    assert r.status_code == 303, r.text


def trec_collection(client: TestClient, csrf: str, name: str) -> int:
    """A collection made through the admin pages from TOPICS, DOCS and QRELS (TREC files, the
    qrels paired): its id."""
    r = client.post("/admin/collections", data={"name": name, "csrf_token": csrf})
    assert r.status_code == 200  # followed the 303 to the collection page
    found = re.search(r"/admin/collections/(\d+)/progress-fragment", r.text)
    assert found is not None, r.text[:500]
    cid = int(found.group(1))
    r = client.post(
        f"/admin/collections/{cid}/import",
        data={"csrf_token": csrf, "action": "import", "kind": "trec", "pairing": "qrels"},
        files={
            "topics": ("topics.txt", TOPICS, "text/plain"),
            "documents": ("docs.jsonl", DOCS, "application/json"),
            "qrels": ("qrels.txt", QRELS, "text/plain"),
        },
    )
    assert r.status_code == 200 and "Imported 12 query–document pairs" in r.text
    return cid


@contextmanager
def served(db_path: Path, **settings: Any) -> Iterator[TestClient]:
    """The app over the SQLite file ``db_path`` in dev mode, as the test server's origin."""
    config = Settings(
        database_url=f"sqlite:///{db_path}", dev=True, public_origin="http://testserver", **settings
    )
    with TestClient(create_app(config), base_url="http://testserver") as client:
        yield client


def upload_runs(client: TestClient, cid: int, runs: dict[str, bytes]) -> str:
    """Upload ``runs`` (name → TREC file) through the collection's runs page form; the
    page's CSRF token."""
    csrf = hidden_csrf(client.get(f"/admin/collections/{cid}/runs").text)
    files = [("run", (name, content, "text/plain")) for name, content in runs.items()]
    r = client.post(
        f"/admin/collections/{cid}/runs",
        data={"csrf_token": csrf},
        files=files,
        follow_redirects=False,
    )
    assert r.status_code == 303, r.text
    return csrf
