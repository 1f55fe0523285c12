"""Postgres connections: a pooled connection is pinged only after sitting idle
(``app.kernel.db._install_idle_ping``), a dead one is replaced, and a warm judgment on the general
path (``judging.submit_judgment``, on a worker thread) is three round trips
(``JudgmentStore.locked_state`` pipelines the lock, the log version and the token). The
one-round-trip submit on the event loop is ``tests/app/judging/test_submit_on_loop.py``'s."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from app.kernel.db import _IDLE_SINCE, PING_AFTER_IDLE_SECONDS, Database, normalise_url
from tests.app.conftest import fresh_database, postgres_base_url

pytestmark = pytest.mark.postgres


@pytest.fixture()
def pg_db() -> Iterator[Database]:
    db = Database.from_url(postgres_base_url(), db_pool_size=1, db_max_overflow=0)
    yield db
    db.dispose()


def backend_pid(db: Database) -> int:
    with db.read() as s:
        return int(s.execute(text("SELECT pg_backend_pid()")).scalar_one())


def terminate(pid: int) -> None:
    """End a server backend from another connection (as a server restart would)."""
    admin = create_engine(normalise_url(postgres_base_url()), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            assert conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid}).scalar()
    finally:
        admin.dispose()


def age_pooled_connection(db: Database, seconds: float) -> None:
    """Make the one pooled connection look idle for ``seconds``."""
    records = [db.engine.pool._pool.queue[0]]  # type: ignore[attr-defined]
    for record in records:
        record.info[_IDLE_SINCE] -= seconds


def test_a_dead_idle_connection_is_replaced_before_use(pg_db: Database) -> None:
    first = backend_pid(pg_db)
    terminate(first)
    age_pooled_connection(pg_db, PING_AFTER_IDLE_SECONDS + 1)
    second = backend_pid(pg_db)  # the ping failed at checkout: a new connection answered
    assert second != first


def test_a_connection_in_steady_use_is_not_pinged(pg_db: Database) -> None:
    pings: list[int] = []
    original = pg_db.engine.dialect.do_ping

    def counting_ping(dbapi_connection: Any) -> bool:
        pings.append(1)
        return original(dbapi_connection)

    pg_db.engine.dialect.do_ping = counting_ping  # type: ignore[method-assign]
    first = backend_pid(pg_db)
    for _ in range(5):
        assert backend_pid(pg_db) == first
    assert pings == []
    age_pooled_connection(pg_db, PING_AFTER_IDLE_SECONDS + 1)
    assert backend_pid(pg_db) == first  # alive: pinged once, kept
    assert pings == [1]


def test_a_recently_used_dead_connection_fails_once_then_is_replaced(pg_db: Database) -> None:
    from sqlalchemy.exc import OperationalError

    first = backend_pid(pg_db)
    terminate(first)
    with pytest.raises(OperationalError):  # answered 503 "retry" by app.http.errors
        backend_pid(pg_db)
    assert backend_pid(pg_db) != first


def test_a_warm_submit_sends_lock_version_and_token_together(tmp_path: Path) -> None:
    """The client waits for the server (a Sync or Flush message, or a simple Query) once
    before the insert, not after each of the three statements (libpq's protocol trace)."""
    import migrations

    with fresh_database("postgres", tmp_path) as url:
        migrations.upgrade(url)
        db = Database.from_url(url)
        try:
            messages = _traced_submit(db, tmp_path / "trace.txt")
        finally:
            db.dispose()
    kinds = [
        "wait" if kind in ("Sync", "Flush", "Query") else text_of(detail)
        for kind, detail in messages
        if kind in ("Sync", "Flush", "Query", "Parse")
    ]
    first = {k: kinds.index(k) for k in ("lock", "version", "token", "insert")}
    assert "ping" not in kinds
    assert "wait" not in kinds[first["lock"] : first["token"]]  # one round trip for the three
    assert first["lock"] < first["version"] < first["token"] < first["insert"]


def _traced_submit(db: Database, trace: Path) -> list[tuple[str, str]]:
    """The frontend messages (kind, detail) of one warm submit, from libpq's trace."""
    from sqlalchemy import event

    from app.auth import tokens
    from app.collections import service as collections
    from app.judging import service as judging
    from app.tasks import service as tasks
    from app.users import service as users

    user = users.create_user(db=db, username="rt", password="round-trips-pw-1")
    caller = tokens.BearerToken(tokens.create_api_token(db, user.id))
    coll = collections.create_collection(db=db, name="rt")
    lines = [f'{{"query_id":"q","query":"q","doc_id":"d{i}","title":"t"}}' for i in range(6)]
    collections.import_ndjson(db=db, collection_id=coll.id, data="\n".join(lines).encode())
    task = tasks.create_task(
        db=db, collection_id=coll.id, query_id="q", assessor="rt", method="topk", k=2, seed=1
    )
    q = judging.next_question(db=db, user=caller, task_id=task.id)

    def submit() -> dict[str, Any]:
        pair = q["pair"]
        data = {"seq": q["seq"], "left": pair["left"]["doc_id"], "right": pair["right"]["doc_id"]}
        data["outcome"] = "left"
        return judging.submit_judgment(db=db, user=caller, task_id=task.id, data=data)

    q = submit()  # the next one is warm: the session is cached
    traced: list[Any] = []
    with trace.open("w") as out:

        def on_checkout(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
            dbapi_connection.pgconn.trace(out.fileno())
            traced.append(dbapi_connection.pgconn)

        event.listen(db.engine, "checkout", on_checkout)
        try:
            submit()
        finally:
            event.remove(db.engine, "checkout", on_checkout)
            for pgconn in traced:
                pgconn.untrace()
    # One message per entry: a timestamp, F(rontend) or B(ackend), length, kind, detail (a
    # statement's text may span lines).
    entries = re.split(r"\n(?=\d{4}-\d\d-\d\d )", trace.read_text())
    fields = [entry.split("\t", 4) for entry in entries]
    return [(f[3], f[4] if len(f) > 4 else "") for f in fields if len(f) > 3 and f[1] == "F"]


def text_of(parse_detail: str) -> str:
    """What a traced ``Parse`` message's statement is, in the terms of the test above."""
    if "FOR UPDATE" in parse_detail:
        return "lock"
    if "count(*)" in parse_detail:
        return "version"
    if "api_token" in parse_detail:
        return "token"
    if "INSERT INTO judgment" in parse_detail:
        return "insert"
    if "SELECT 1" in parse_detail:
        return "ping"
    return "other"
