"""Database fixtures for service tests: a real SQLite file, and a real Postgres server.

Postgres: ``HEAPJUDGE_TEST_POSTGRES_URL`` names the server's test database. Each test module
gets its own freshly created schema (``search_path`` set through the connection's
``options``), dropped afterwards, so modules (and other engineers' tests sharing the server)
never see each other's tables. Without the URL the Postgres cases skip with a reason, unless
``HEAPJUDGE_REQUIRE_POSTGRES=1`` (CI), which turns the skip into a failure.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

PG_ENV = "HEAPJUDGE_TEST_POSTGRES_URL"
REQUIRE_PG_ENV = "HEAPJUDGE_REQUIRE_POSTGRES"

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def concrete(path: str) -> str:
    """A route template with every ``{param}`` replaced by ``1`` (a requestable URL)."""
    return re.sub(r"\{[^}]+\}", "1", path)


def postgres_base_url() -> str:
    """The test server URL, or skip (fail when Postgres is required)."""
    url = os.environ.get(PG_ENV)
    if not url:
        reason = f"{PG_ENV} is not set (no Postgres test server)"
        if os.environ.get(REQUIRE_PG_ENV) == "1":
            pytest.fail(f"{REQUIRE_PG_ENV}=1 but {reason}")
        pytest.skip(reason)
    return url


@contextmanager
def fresh_database(backend: str, directory: Path) -> Iterator[str]:
    """An empty database URL of ``backend``: a new SQLite file, or a new Postgres schema."""
    if backend == "sqlite":
        yield f"sqlite:///{directory / f'hj-{uuid.uuid4().hex[:8]}.db'}"
        return
    from sqlalchemy import create_engine, text

    from app.kernel.db import normalise_url

    base = normalise_url(postgres_base_url())
    schema = f"hjtest_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        sep = "&" if "?" in base else "?"
        yield f"{base}{sep}options={quote(f'-csearch_path={schema}')}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(scope="module", params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A migrated, empty database per test module and backend."""
    import migrations

    with fresh_database(request.param, tmp_path_factory.mktemp("db")) as url:
        migrations.upgrade(url)
        yield url


@dataclass
class Api:
    """A TestClient over a real app plus the tokens of the users it created."""

    client: TestClient
    db: Any
    settings: Any
    tokens: dict[str, str] = field(default_factory=dict)

    def auth(self, username: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[username]}"}

    def add_user(self, username: str, role: str = "assessor", password: str | None = None) -> str:
        """Create a user (service layer) and log in through the API; returns the token."""
        from app.users import service as users

        password = password or f"pw-{username}-secret"
        users.create_user(db=self.db, username=username, password=password, role=role)
        r = self.client.post(
            "/api/v1/auth/token", data={"username": username, "password": password}
        )
        assert r.status_code == 200, r.text
        self.tokens[username] = r.json()["access_token"]
        return self.tokens[username]

    def get(self, user: str, path: str, **kw: Any) -> Any:
        return self.client.get(path, headers=self.auth(user), **kw)

    def post(self, user: str, path: str, **kw: Any) -> Any:
        headers = {**self.auth(user), **kw.pop("headers", {})}
        return self.client.post(path, headers=headers, **kw)


@pytest.fixture(scope="module")
def api(database_url: str) -> Iterator[Api]:
    """The app over the module's database, with an ``admin`` user logged in."""
    from app.kernel.settings import Settings
    from app.main import create_app

    settings = Settings(
        database_url=database_url, dev=True, public_origin="http://testserver", max_body_bytes=65536
    )
    app = create_app(settings)
    with TestClient(app, base_url="http://testserver") as client:
        a = Api(client=client, db=app.state.db, settings=settings)
        a.add_user("admin", role="admin")
        yield a
        check_stored_specs(a.db)


def check_stored_specs(db: Any) -> None:
    """Every task stored in a test database parses to its spec
    (docs/architecture.md#the-task-spec): run when each module's database is done with, so
    every path the module's tests made tasks by is covered (a ConfigError names the task's
    bad option)."""
    from sqlalchemy import select

    from app.kernel.models import Task
    from labeling.errors import ConfigError
    from labeling.protocol.spec import parse_spec

    with db.read() as s:
        rows = list(s.execute(select(Task.id, Task.method, Task.k, Task.seed, Task.options)))
    for task_id, method, k, seed, options in rows:
        try:
            parse_spec(method, options, k=k, seed=seed)
        except ConfigError as err:
            raise AssertionError(f"stored task {task_id} does not parse: {err}") from None


@pytest.fixture()
def admin_site(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The app over a fresh SQLite file with an admin ``boss`` and four assessors (ann, ben,
    cat, dan; passwords ``<name> password 1``): the admin pages' tests."""
    from tests.app.web.support import served
    from tests.e2e.web_support import add_user, init_db

    db_path = tmp_path / "admin.db"
    db = init_db(db_path)
    add_user(db, "boss", "boss password 1", role="admin")
    for name in ("ann", "ben", "cat", "dan"):
        add_user(db, name, f"{name} password 1")
    with served(db_path) as client:
        yield {"client": client, "db": db}
    db.dispose()


@pytest.fixture()
def campaign_site(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The app over a fresh SQLite file holding the campaign collection ``camp`` (graded
    documents of the runs tests' queries) and its runs as TREC files, an admin ``boss`` and
    an assessor ``ann``: the runs and pools pages' tests."""
    import json

    from app.collections import service as collections
    from ranking.io.trec import write_run
    from tests.app.runs.support import QUERIES, campaign_grades, campaign_runs
    from tests.app.web.support import served
    from tests.e2e.web_support import add_user, init_db

    db_path = tmp_path / "runs.db"
    db = init_db(db_path)
    add_user(db, "boss", "boss password 1", role="admin")
    add_user(db, "ann", "ann password 1")
    grades = campaign_grades()
    rows = [
        {"query_id": q, "query": f"query {q}", "doc_id": d, "text": d, "grade": g}
        for q in QUERIES
        for d, g in grades[q].items()
    ]
    cid = collections.create_collection(db=db, name="camp").id
    collections.import_ndjson(
        db=db, collection_id=cid, data="\n".join(json.dumps(r) for r in rows).encode()
    )
    runs = {}
    for name, run in campaign_runs(grades).items():
        write_run(tmp_path / name, run, tag=name)
        runs[name] = (tmp_path / name).read_bytes()
    with served(db_path) as client:
        yield {"client": client, "db": db, "cid": cid, "runs": runs}
    db.dispose()
