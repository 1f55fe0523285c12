"""Postgres connections: a pooled connection is pinged only after sitting idle
(``app.db._install_idle_ping``), a dead one is replaced, and a warm judgment is three round
trips (``JudgmentStore.locked_state`` pipelines the lock, the log version and the token)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from app.db import _IDLE_SINCE, PING_AFTER_IDLE_SECONDS, Database, normalise_url
from tests.app.conftest import postgres_base_url

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
    with pytest.raises(OperationalError):  # answered 503 "retry" by app.errors
        backend_pid(pg_db)
    assert backend_pid(pg_db) != first
