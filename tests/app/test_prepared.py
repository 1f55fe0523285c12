"""Prepared statements (app.prepared) and raw transactions (Database.raw_read/raw_write)
return what SQLAlchemy Core returns and map driver errors as Core does, on SQLite and
Postgres."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import exc as sa_exc

from app import security
from app.db import Database
from app.prepared import Prepared
from app.services import judging
from tests.app.conftest import Api
from tests.app.test_service_api import make_collection, make_task, pool


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
    "name", ["_TASK_ROW", "_LIVE_LOG", "_STATE_AND_VERSION", "_LIVE_VERSION", "_DOCUMENT"]
)
def test_prepared_rows_equal_core_rows(api: Api, seeded: dict[str, Any], name: str) -> None:
    stmt = getattr(judging, name)
    params = {"task_id": seeded["task"], "query_id": 1, "doc_id": "d001"}
    if name == "_DOCUMENT":
        with api.db.read() as c:
            params["query_id"] = c.execute(judging._TASK_ROW, params).one().query_id
    expected = core_rows(api.db, stmt, params)
    assert expected, "the statement should find something"
    assert prepared_rows(api.db, stmt, params) == expected


def test_typed_values_survive(api: Api, seeded: dict[str, Any]) -> None:
    """JSON columns come back decoded, datetimes as aware UTC, named like Core's rows."""
    with api.db.raw_read() as cursor:
        row = Prepared(judging._TASK_ROW, api.db.engine.dialect).one_or_none(
            cursor, {"task_id": seeded["task"]}
        )
    assert row.options["allow_ties"] is True and row.options["pair_cache"] is True
    assert isinstance(row.doc_ids, list) and len(row.doc_ids) == 6
    assert row.created_at.tzinfo is not None and row.created_at.utcoffset().total_seconds() == 0


def test_token_lookup_matches(api: Api) -> None:
    token = api.tokens["admin"]
    params = {"digest": security.hash_token(token)}
    assert prepared_rows(api.db, security._TOKEN_USER, params) == core_rows(
        api.db, security._TOKEN_USER, params
    )


def test_expanding_parameters_are_refused(api: Api) -> None:
    from sqlalchemy import bindparam, select

    docs = judging._D
    stmt = select(docs.c.title).where(docs.c.external_id.in_(bindparam("ids", expanding=True)))
    with pytest.raises(ValueError, match="expanding"):
        Prepared(stmt, api.db.engine.dialect)


def test_driver_errors_are_sqlalchemy_errors_and_roll_back(
    api: Api, seeded: dict[str, Any]
) -> None:
    insert = Prepared(judging._INSERT[api.db.dialect], api.db.engine.dialect)
    values = judging._row_values(
        seeded["task"], 99, judging.GradeAnswer("d001", 2), 0, judging.utcnow()
    )
    # An out-of-range integer: Postgres says DataError (wrapped); SQLite's driver refuses to
    # bind it (OverflowError); the app answers 422 for both.
    with pytest.raises((sa_exc.DataError, OverflowError)), api.db.raw_write() as cursor:
        insert.one_or_none(cursor, {**values, "active_ms": 2**70})
    # A foreign key violation: IntegrityError (409 in the app), and nothing stays behind.
    with pytest.raises(sa_exc.IntegrityError), api.db.raw_write() as cursor:
        insert.one_or_none(cursor, {**values, "task_id": 10**9})
    with api.db.read() as c:
        assert c.execute(judging._LIVE_VERSION, {"task_id": seeded["task"]}).one().live == 1


def test_nowait_write_never_waits_and_changes_nothing(api: Api, seeded: dict[str, Any]) -> None:
    """``submit_judgment(nowait=True)`` (the event-loop fast path) raises WouldBlock, with
    nothing stored and the cached session kept, whenever it would have to wait: another
    thread of the process writing, another process (connection) holding SQLite's write lock,
    no cached session, or Postgres. The ordinary call then stores the judgment once."""
    import sqlite3
    import threading

    from app.db import WouldBlock
    from app.security import BearerToken

    tid = make_task(api, seeded["cid"], "pq", "prep", k=2, seed=9)
    caller = BearerToken(api.tokens["prep"])
    with pytest.raises(WouldBlock):  # nothing cached for this task yet
        judging.submit_judgment(db=api.db, user=caller, task_id=tid, data={"seq": 0}, nowait=True)
    q = judging.next_question(db=api.db, user=caller, task_id=tid)  # caches the session
    data = {"seq": 0, "left": q["pair"]["left"]["doc_id"], "right": q["pair"]["right"]["doc_id"]}
    data |= {"outcome": "left", "active_ms": 5}

    def attempt() -> None:
        with pytest.raises(WouldBlock):
            judging.submit_judgment(db=api.db, user=caller, task_id=tid, data=data, nowait=True)

    if not api.db.is_sqlite:
        attempt()
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
        path = api.db.engine.url.database
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            attempt()
        finally:
            other.rollback()
            other.close()
        # Free: the fast path itself answers.
        body = judging.submit_judgment(db=api.db, user=caller, task_id=tid, data=data, nowait=True)
        assert body["seq"] == 1
    if not api.db.is_sqlite:
        body = judging.submit_judgment(db=api.db, user=caller, task_id=tid, data=data)
        assert body["seq"] == 1
    # Exactly one judgment stored, and the retry is still recognised as one.
    again = judging.submit_judgment(db=api.db, user=caller, task_id=tid, data=data)
    assert again["seq"] == 1
    with api.db.read() as c:
        assert c.execute(judging._LIVE_VERSION, {"task_id": tid}).one().live == 1


def test_slow_sessions_leave_the_event_loop(api: Api, seeded: dict[str, Any]) -> None:
    """A session whose last submit cost more CPU than NOWAIT_MAX_SECONDS is not run on the
    event loop (WouldBlock, not busy), and stays cached for the ordinary call."""
    from app.db import WouldBlock
    from app.security import BearerToken

    tid = make_task(api, seeded["cid"], "pq", "prep", k=2, seed=10)
    caller = BearerToken(api.tokens["prep"])
    q = judging.next_question(db=api.db, user=caller, task_id=tid)
    data = {"seq": 0, "left": q["pair"]["left"]["doc_id"], "right": q["pair"]["right"]["doc_id"]}
    data |= {"outcome": "left"}
    cache = judging._caches(api.db).replay
    entry = cache.get(tid)
    entry.cost = 10 * judging.NOWAIT_MAX_SECONDS
    with pytest.raises(WouldBlock) as info:
        judging.submit_judgment(db=api.db, user=caller, task_id=tid, data=data, nowait=True)
    assert info.value.busy is False and cache.get(tid) is entry
    body = judging.submit_judgment(db=api.db, user=caller, task_id=tid, data=data)
    assert body["seq"] == 1
    after = cache.get(tid)
    assert after is entry and 0 <= after.cost < 1  # measured again (CPU seconds)
