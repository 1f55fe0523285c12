"""Prepared statements (app.kernel.prepared) and raw transactions (Database.raw_read/raw_write)
return what SQLAlchemy Core returns and map driver errors as Core does, on SQLite and
Postgres."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import exc as sa_exc

from app.auth import tokens
from app.judging import loop
from app.judging import repository as repo
from app.judging import service as judging
from app.kernel.db import Database
from app.kernel.models import utcnow
from app.kernel.prepared import Prepared
from labeling.protocol.types import GradeAnswer
from tests.app.conftest import Api
from tests.app.judging.support import make_collection, make_task, pool


@pytest.fixture(scope="module")
def seeded(api: Api) -> dict[str, Any]:
    api.add_user("prep")
    cid = make_collection(api, "prepared", pool("pq", 6))
    tid = make_task(api, cid, "pq", "prep", k=2, seed=5, options={"allow_ties": True})
    r = api.get("prep", f"/api/v1/tasks/{tid}/next")
    q = r.json()
    body = {"seq": 0, "left": q["pair"]["left"]["doc_id"], "right": q["pair"]["right"]["doc_id"]}
    assert api.post("prep", f"/api/v1/tasks/{tid}/judgments", json={**body, "outcome": "tie"})
    return {"task": tid, "cid": cid}


def core_rows(db: Database, stmt: Any, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    with db.read() as c:
        return [tuple(row) for row in c.execute(stmt, params)]


def prepared_rows(db: Database, stmt: Any, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    with db.raw_read() as cursor:
        return [tuple(row) for row in Prepared(stmt, db.engine.dialect).rows(cursor, params)]


@pytest.mark.parametrize(
    "name", ["TASK_ROW", "LIVE_LOG", "STATE_AND_VERSION", "LIVE_VERSION", "DOCUMENTS"]
)
def test_prepared_rows_equal_core_rows(api: Api, seeded: dict[str, Any], name: str) -> None:
    stmt = getattr(repo, name)
    params: dict[str, Any] = {"task_id": seeded["task"]}
    if name == "DOCUMENTS":  # one statement per dialect; the id list is one parameter
        stmt = stmt[api.db.dialect]
        with api.db.read() as c:
            params["query_id"] = c.execute(repo.TASK_ROW, params).one().query_id
        params["doc_ids"] = ["d001", "d003", "absent"]
    expected = core_rows(api.db, stmt, params)
    assert expected, "the statement should find something"
    assert prepared_rows(api.db, stmt, params) == expected
    if name == "DOCUMENTS":
        assert sorted(row[0] for row in expected) == ["d001", "d003"]


def test_documents_in_one_statement(api: Api, seeded: dict[str, Any]) -> None:
    """A pool's documents are read with one statement, whatever their number: opening a task
    on Postgres cost one round trip per document before."""
    with api.db.read() as c:
        query_id = c.execute(repo.TASK_ROW, {"task_id": seeded["task"]}).one().query_id
    ids = [f"d{i:03d}" for i in range(6)]
    executed: list[str] = []

    class Counting:
        """The transaction's cursor, counting the statements sent on it."""

        def __init__(self, cursor: Any) -> None:
            self.cursor = cursor

        def execute(self, sql: Any, *args: Any) -> Any:
            executed.append(str(sql))
            return self.cursor.execute(sql, *args)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.cursor, name)

    with api.db.raw_read() as cursor:
        store = repo.JudgmentStore(api.db, Counting(cursor))
        found = store.documents(query_id, [*ids, "absent"])
        assert store.documents(query_id, []) == {}
    assert len(executed) == 1
    assert sorted(found) == ids
    assert {d: row.title for d, row in found.items()} == {
        f"d{i:03d}": f"Document d{i}" for i in range(6)
    }
    assert all(row.external_id == d for d, row in found.items())


def test_typed_values_survive(api: Api, seeded: dict[str, Any]) -> None:
    """JSON columns come back decoded, datetimes as aware UTC, named like Core's rows."""
    with api.db.raw_read() as cursor:
        row = Prepared(repo.TASK_ROW, api.db.engine.dialect).one_or_none(
            cursor, {"task_id": seeded["task"]}
        )
    assert row.options["allow_ties"] is True and row.options["pair_cache"] is True
    assert isinstance(row.doc_ids, list) and len(row.doc_ids) == 6
    assert row.created_at.tzinfo is not None and row.created_at.utcoffset().total_seconds() == 0


def test_token_lookup_matches(api: Api) -> None:
    token = api.tokens["admin"]
    params = {"digest": tokens.hash_token(token)}
    assert prepared_rows(api.db, tokens._TOKEN_USER, params) == core_rows(
        api.db, tokens._TOKEN_USER, params
    )


def test_expanding_parameters_are_refused(api: Api) -> None:
    from sqlalchemy import bindparam, select

    docs = repo.D
    stmt = select(docs.c.title).where(docs.c.external_id.in_(bindparam("ids", expanding=True)))
    with pytest.raises(ValueError, match="expanding"):
        Prepared(stmt, api.db.engine.dialect)


def test_driver_errors_are_sqlalchemy_errors_and_roll_back(
    api: Api, seeded: dict[str, Any]
) -> None:
    insert = Prepared(repo.INSERT[api.db.dialect], api.db.engine.dialect)
    values = repo.row_values(seeded["task"], 99, GradeAnswer("d001", 2), 0, utcnow())
    # An out-of-range integer: Postgres says DataError (wrapped); SQLite's driver refuses to
    # bind it (OverflowError); the app answers 422 for both.
    with pytest.raises((sa_exc.DataError, OverflowError)), api.db.raw_write() as cursor:
        insert.one_or_none(cursor, {**values, "active_ms": 2**70})
    # A foreign key violation: IntegrityError (409 in the app), and nothing stays behind.
    with pytest.raises(sa_exc.IntegrityError), api.db.raw_write() as cursor:
        insert.one_or_none(cursor, {**values, "task_id": 10**9})
    with api.db.read() as c:
        assert c.execute(repo.LIVE_VERSION, {"task_id": seeded["task"]}).one().live == 1


def test_no_wait_never_waits_and_changes_nothing(api: Api, seeded: dict[str, Any]) -> None:
    """Inside ``db.no_wait()`` (how app.kernel.offload runs a submit on the event loop), the use
    case raises WouldBlock, with nothing stored, whenever it would have to wait: another thread of
    the process writing, another process (connection) holding SQLite's write lock, or
    Postgres. The cached session survives; the ordinary call then stores the judgment once."""
    import sqlite3
    import threading

    from app.auth.tokens import BearerToken
    from app.kernel.db import WouldBlock

    tid = make_task(api, seeded["cid"], "pq", "prep", k=2, seed=9)
    caller = BearerToken(api.tokens["prep"])
    q = judging.next_question(db=api.db, user=caller, task_id=tid)  # caches the session
    data = {"seq": 0, "left": q["pair"]["left"]["doc_id"], "right": q["pair"]["right"]["doc_id"]}
    data |= {"outcome": "left", "active_ms": 5}
    cached = loop.LOOP_CACHES.of(api.db).sessions

    def attempt() -> None:
        entry = cached.get(tid)
        with pytest.raises(WouldBlock), api.db.no_wait():
            judging.submit_judgment(db=api.db, user=caller, task_id=tid, data=data)
        assert cached.get(tid) is entry is not None  # untouched, back in the cache

    if not api.db.is_sqlite:
        attempt()
        body = judging.submit_judgment(db=api.db, user=caller, task_id=tid, data=data)
    else:
        # Another thread of this process is writing.
        holding, release = threading.Event(), threading.Event()

        def writer() -> None:
            with api.db.raw_write():
                holding.set()
                release.wait(10)

        thread = threading.Thread(target=writer)
        thread.start()
        assert holding.wait(10)
        try:
            attempt()
        finally:
            release.set()
            thread.join()
        # Another process (here: another connection, outside the process lock) holds it.
        other = sqlite3.connect(api.db.engine.url.database, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            attempt()
        finally:
            other.rollback()
            other.close()
        with api.db.no_wait():  # free: it runs without waiting
            body = judging.submit_judgment(db=api.db, user=caller, task_id=tid, data=data)
    assert body["seq"] == 1
    # Exactly one judgment stored, and the retry is still recognised as one.
    again = judging.submit_judgment(db=api.db, user=caller, task_id=tid, data=data)
    assert again["seq"] == 1
    with api.db.read() as c:
        assert c.execute(repo.LIVE_VERSION, {"task_id": tid}).one().live == 1


def test_offload_runs_cheap_keyed_calls_on_the_event_loop(api: Api) -> None:
    """app.kernel.offload: a keyed call runs on a worker thread the first time, then on the event
    loop thread while its last run was cheap (SQLite only), and goes back to a worker once a
    run costs more than INLINE_MAX_SECONDS of CPU; unkeyed calls always run on a worker."""
    import asyncio
    import threading
    import time

    from app.kernel import offload

    def work(cpu_seconds: float = 0.0) -> str:
        started = time.thread_time()
        while time.thread_time() - started < cpu_seconds:
            pass
        return threading.current_thread().name

    async def where(key: Any, cpu_seconds: float = 0.0) -> str:
        loop_thread = threading.current_thread().name
        name = await offload.run(api.db, lambda: work(cpu_seconds), cost_key=key)
        return "loop" if name == loop_thread else "worker"

    async def scenario() -> list[str]:
        key = ("test", object())
        return [
            await where(key),  # unknown cost
            await where(key, 3 * offload.INLINE_MAX_SECONDS),  # cheap so far: the loop
            await where(key),  # the last run was costly
            await where(key),  # cheap again
            await where(None),
        ]

    places = asyncio.run(scenario())
    if api.db.is_sqlite:
        assert places == ["worker", "loop", "worker", "loop", "worker"]
    else:
        assert places == ["worker"] * 5
