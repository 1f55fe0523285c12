"""Migrations up -> down -> up on SQLite and Postgres, the schema equals the models, the
database enforces its invariants, and docker-compose.yml agrees with the settings."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError, SAWarning

import migrations
from app.kernel.db import Database, make_engine
from app.kernel.models import Base
from app.kernel.settings import Settings
from tests.app.conftest import BACKENDS, fresh_database

REPO = Path(__file__).resolve().parents[3]
HEAD = "0034_pool_status"  # the newest migration
TABLES = {
    "user",
    "api_token",
    "web_session",
    "login_attempt",
    "collection",
    "query",
    "document",
    "task",
    "judgment",
    "training_run",
    "second_opinion",
    "llm_response",
    "machine_alarm",
    "machine_gold",
    "machine_failure_alarm",
    "machine_audit",
    "llm_usage",
    "run",
    "run_query",
    "pool",
    "pool_document",
    "task_machine",
    "machine_score",
    "machine_opinion",
    "unpooled_grade",
}


@pytest.fixture(params=BACKENDS)
def empty_url(request: pytest.FixtureRequest, tmp_path: Path):
    with fresh_database(request.param, tmp_path) as url:
        yield url


def _tables(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


# compare_metadata reflects the whole schema, and SQLAlchemy cannot reflect the expression
# index on lower(username): it says so and skips it (the models declare it; the migration
# that creates it is tested in test_account_usernames), and alembic says it cannot compare
# it. Only those two warnings about that one index are ignored.
@pytest.mark.filterwarnings(
    "ignore:Skipped unsupported reflection of expression-based index uq_user_username_lower"
)
@pytest.mark.filterwarnings("ignore:autogenerate skipping .* 'uq_user_username_lower'")
def test_migrations_up_down_up_match_the_models(empty_url: str) -> None:
    migrations.upgrade(empty_url)
    assert _tables(empty_url) == TABLES
    assert migrations.current(empty_url) == HEAD
    migrations.downgrade(empty_url, "base")
    assert _tables(empty_url) == set()
    assert migrations.current(empty_url) is None
    migrations.upgrade(empty_url)
    assert _tables(empty_url) == TABLES
    engine = make_engine(empty_url)
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            assert compare_metadata(ctx, Base.metadata) == []
            views = inspect(conn).get_view_names()
            assert "grade" in views
    finally:
        engine.dispose()


def test_database_enforces_invariants(empty_url: str) -> None:
    migrations.upgrade(empty_url)
    db = Database(Settings(database_url=empty_url, dev=True))
    now = datetime.now(UTC)
    try:
        with db.write() as s:
            s.execute(
                text(
                    'INSERT INTO "user" (id, username, password_hash, role, disabled, created_at) '
                    "VALUES (1, 'u', 'h', 'assessor', false, :now)"
                ),
                {"now": now},
            )
            s.execute(
                text("INSERT INTO collection (id, name, created_at) VALUES (1, 'c', :now)"),
                {"now": now},
            )
            s.execute(
                text(
                    "INSERT INTO query (id, collection_id, external_id, title) "
                    "VALUES (1, 1, 'q', 't')"
                )
            )
            s.execute(
                text(
                    "INSERT INTO task (id, collection_id, query_id, assessor_id, method, k, seed, "
                    "options, doc_ids, status, created_at) VALUES (1, 1, 1, 1, 'topk', 2, 0, "
                    "'{}', '[\"a\", \"b\"]', 'pending', :now)"
                ),
                {"now": now},
            )
        insert = (
            "INSERT INTO judgment (task_id, seq, left_doc, right_doc, outcome, doc_id, grade, "
            "active_ms, created_at, undone) VALUES (:t, :seq, :l, :r, :o, :d, :g, :ms, :now, :u)"
        )
        ok = {"t": 1, "seq": 0, "l": "a", "r": "b", "o": "left", "d": None, "g": None, "ms": 0}
        with db.write() as s:
            s.execute(text(insert), {**ok, "now": now, "u": False})
        bad_rows = [
            {**ok},  # a second live answer for seq 0
            {**ok, "seq": 1, "o": "sideways"},
            {**ok, "seq": 1, "ms": -1},
            {**ok, "seq": -1},
            {**ok, "seq": 1, "d": "a", "g": 2},  # both shapes at once
            {**ok, "seq": 1, "l": None, "r": None, "o": None, "d": "a", "g": 5},
            {**ok, "seq": 1, "t": 99},  # no such task (foreign key)
        ]
        for row in bad_rows:
            with pytest.raises(IntegrityError), db.write() as s:
                s.execute(text(insert), {**row, "now": now, "u": False})
        with db.write() as s:  # an undone row may share its seq with the live one
            s.execute(text(insert), {**ok, "o": "right", "now": now, "u": True})
        # Broken documents (docs/protocols.md#broken-documents): doc_id and a reason, with the
        # pair shown (topk) or without one (graded); never with a grade.
        with_reason = (
            "INSERT INTO judgment (task_id, seq, left_doc, right_doc, outcome, doc_id, grade, "
            "active_ms, created_at, undone, reason, comment) "
            "VALUES (:t, :seq, :l, :r, :o, :d, :g, :ms, :now, :u, :why, :note)"
        )
        broken = {**ok, "seq": 1, "o": "broken", "d": "a", "why": "empty page", "note": None}
        with db.write() as s:
            s.execute(text(with_reason), {**broken, "now": now, "u": False})
            s.execute(
                text(with_reason),
                {**broken, "seq": 2, "l": None, "r": None, "now": now, "u": False},
            )
            s.execute(
                text(with_reason),
                {**ok, "seq": 3, "why": None, "note": "hm", "now": now, "u": False},
            )
        bad_broken = [
            {**broken, "seq": 4, "why": None},  # no reason
            {**broken, "seq": 4, "d": None},  # names no document
            {**broken, "seq": 4, "g": 2},  # a grade too
            {**broken, "seq": 4, "r": None},  # half a pair
            {**ok, "seq": 4, "why": "x", "note": None},  # a reason on a pair answer
        ]
        for row in bad_broken:
            with pytest.raises(IntegrityError), db.write() as s:
                s.execute(text(with_reason), {**row, "now": now, "u": False})
        for stmt in [
            "UPDATE \"user\" SET role = 'root' WHERE id = 1",
            "UPDATE task SET method = 'coinflip' WHERE id = 1",
            "UPDATE task SET k = 0 WHERE id = 1",
            "UPDATE task SET status = 'lost' WHERE id = 1",
        ]:
            with pytest.raises(IntegrityError), db.write() as s:
                s.execute(text(stmt))
    finally:
        db.dispose()


def test_sqlite_connections_get_the_pragmas(tmp_path: Path) -> None:
    db = Database(Settings(database_url=f"sqlite:///{tmp_path / 'p.db'}", dev=True))
    try:
        with db.read() as s:
            assert s.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert s.execute(text("PRAGMA foreign_keys")).scalar() == 1
            assert s.execute(text("PRAGMA busy_timeout")).scalar() == 10_000
            assert s.execute(text("PRAGMA synchronous")).scalar() == 1  # NORMAL
    finally:
        db.dispose()


def test_docker_compose_is_consistent_with_the_settings() -> None:
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    services = compose["services"]
    assert set(services) == {"app", "db", "redis", "worker"}
    app, db = services["app"], services["db"]
    env = app["environment"]
    known = {f"HEAPJUDGE_{name.upper()}" for name in Settings.model_fields}
    assert set(env) <= known, set(env) - known
    # The training worker shares the app's database and queue; the app starts none itself.
    worker = services["worker"]
    assert set(worker["environment"]) <= known
    for name in ("HEAPJUDGE_DATABASE_URL", "HEAPJUDGE_QUEUE_URL"):
        assert worker["environment"][name] == env[name]
    assert env["HEAPJUDGE_QUEUE_URL"].startswith("redis://redis:6379")
    assert worker["command"] == ["heapjudge", "worker"]
    assert "--no-training-worker" in app["command"]
    assert "healthcheck" in services["redis"]
    url = env["HEAPJUDGE_DATABASE_URL"]
    assert url.startswith("postgresql+psycopg://")
    user, password = url.split("://", 1)[1].split("@")[0].split(":")
    host_db = url.split("@", 1)[1]
    assert host_db == f"db:5432/{db['environment']['POSTGRES_DB']}"
    assert (user, password) == (
        db["environment"]["POSTGRES_USER"],
        db["environment"]["POSTGRES_PASSWORD"],
    )
    assert int(env["HEAPJUDGE_MAX_BODY_BYTES"]) > 0
    assert "HEAPJUDGE_SECRET_KEY" in env
    assert app["depends_on"]["db"]["condition"] == "service_healthy"
    assert "healthcheck" in db and "healthcheck" in app
    assert "/healthz" in " ".join(app["healthcheck"]["test"])
    volume = db["volumes"][0].split(":")[0]
    assert volume in compose["volumes"]
    assert app["ports"] == ["8000:8000"] and "8000" in " ".join(app["command"])
    assert (REPO / "Dockerfile").is_file()


def test_regular_install_ships_every_template(monkeypatch: pytest.MonkeyPatch) -> None:
    """``pip install .`` (not editable) copies templates/ via pyproject ``data-files`` to
    ``<prefix>/share/heapjudge/templates``; every template file must be declared there, and
    the lookup (``app.kernel.settings.templates_dir``) must honour its override."""
    import glob
    import tomllib

    from app.kernel.settings import INSTALLED_TEMPLATES, TEMPLATES_DIR_ENV, templates_dir

    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    data_files = config["tool"]["setuptools"]["data-files"]
    shipped: set[str] = set()
    for target, patterns in data_files.items():
        if not target.startswith(str(INSTALLED_TEMPLATES)):
            continue
        for pattern in patterns:
            for src in glob.glob(str(REPO / pattern)):
                rel = Path(target).relative_to(INSTALLED_TEMPLATES) / Path(src).name
                shipped.add(rel.as_posix())
    templates = REPO / "templates"
    present = {p.relative_to(templates).as_posix() for p in templates.rglob("*") if p.is_file()}
    assert present and present == shipped, present ^ shipped

    assert templates_dir() == templates  # a checkout / editable install reads the source tree
    monkeypatch.setenv(TEMPLATES_DIR_ENV, str(templates / "admin"))
    with pytest.raises(FileNotFoundError, match=r"base\.html"):
        templates_dir()
    monkeypatch.setenv(TEMPLATES_DIR_ENV, str(templates))
    assert templates_dir() == templates


def test_dockerfile_installs_regularly() -> None:
    text_ = (REPO / "Dockerfile").read_text()
    assert "pip install ." in text_ and "pip install -e" not in text_


def test_migrations_print_no_sqlalchemy_warning(tmp_path: Path) -> None:
    """Upgrading, downgrading and upgrading again print no SAWarning: the SQLite batch copies
    must not reflect the ``user`` table, whose expression index SQLAlchemy cannot reflect."""
    url = f"sqlite:///{tmp_path / 'w.db'}"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        migrations.upgrade(url)
        migrations.downgrade(url, "0022_pools")
        migrations.upgrade(url)
    assert [str(w.message) for w in caught if issubclass(w.category, SAWarning)] == []


def test_the_event_loops_commits_never_checkpoint_and_hand_it_to_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write connection of ``db.no_wait()`` (its commits run on the event loop) has
    SQLite's automatic checkpoint off; every ``LOOP_CHECKPOINT_EVERY`` commits a passive
    checkpoint runs on a thread of its own and copies the WAL back
    (docs/performance.md#pool-builds)."""
    import threading

    from app.kernel import db as kernel_db

    monkeypatch.setattr(kernel_db, "LOOP_CHECKPOINT_EVERY", 3)
    db = Database(Settings(database_url=f"sqlite:///{tmp_path / 'c.db'}", dev=True))
    try:
        with db.raw_write() as c:
            c.execute("CREATE TABLE t (x INTEGER)")
        for x in range(2):
            with db.no_wait(), db.raw_write() as c:
                c.execute("INSERT INTO t VALUES (?)", (x,))
        assert db.checkpointer is None  # two commits: not yet
        assert db._nowait.driver_connection.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
        with db.no_wait(), db.raw_write() as c:
            c.execute("INSERT INTO t VALUES (2)")
        thread = db.checkpointer
        assert thread is not None and thread is not threading.current_thread()
        assert db._checkpoint_done.wait(timeout=60)  # a bound for a hung test, not a timing
        assert db.checkpoints == 1 and db.last_checkpoint is not None
        busy, frames, copied = db.last_checkpoint
        assert busy == 0 and frames == copied > 0  # all copied back, by that thread
        with db.read() as s:  # the pool's connections keep SQLite's default
            assert s.execute(text("PRAGMA wal_autocheckpoint")).scalar() == 1000
            assert s.execute(text("SELECT count(*) FROM t")).scalar() == 3
    finally:
        db.dispose()
