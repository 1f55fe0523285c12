"""A pool build computes with no write transaction open (SQLite and Postgres): while its picks
are computed, another connection can start a write at once (SQLite: ``BEGIN IMMEDIATE`` with
no wait; Postgres: no session of the database is idle inside a transaction), so judging
submits never queue behind a build's computation. The build's result is unchanged by the
split (the same rows as the one-transaction build stored), and a name taken while the build
computed is refused at the write with nothing stored.

Failed before the split: the build computed inside its write transaction (SQLite's write lock
held, Postgres's ``FOR NO KEY UPDATE`` open). The read and the computation run in the build
process (``compute_rows``, docs/performance.md#pool-builds): the probes wrap that seam, and a
test checks that the rows were computed in another process (before: in the web process, whose
interpreter lock the judging loop waited for)."""

from __future__ import annotations

import os
import sqlite3
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from app.campaign_pools import service as pools
from tests.app.admin_support import make_collection
from tests.app.conftest import Api

RUN_A = "101 Q0 d0 1 9 A\n101 Q0 d2 2 8 A\n101 Q0 d1 3 7 A\n102 Q0 d5 1 1 A\n"
RUN_B = "101 Q0 d6 1 9 B\n101 Q0 d4 2 8 B\n102 Q0 d5 1 5 B\n102 Q0 d3 2 4 B\n"


def _no_writer_open(api: Api) -> bool:
    """Whether another connection could write now, without waiting."""
    url = api.settings.database_url
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.split(":///", 1)[1], timeout=0, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")  # raises "database is locked" while a writer is open
            conn.execute("ROLLBACK")
            return True
        except sqlite3.OperationalError:
            return False
        finally:
            conn.close()
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            open_tx = conn.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()"
                )
            )
        return open_tx == 0
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def collection(api: Api) -> int:
    return make_collection(api, "pool-tx", queries=2, docs=8, features=False)[0]


@pytest.mark.parametrize("method", ["depth", "mtf"])
def test_the_build_computes_with_no_write_transaction_open(
    api: Api, collection: int, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    with api.db.write() as s:  # the probe sees an open write transaction
        s.execute(text("SELECT 1"))
        assert not _no_writer_open(api)
    seen: list[bool] = []
    compute = pools.compute_rows

    def probed(*args: Any, **kwargs: Any) -> Any:
        seen.append(_no_writer_open(api))
        picked = compute(*args, **kwargs)
        seen.append(_no_writer_open(api))
        pids.append(picked.pid)
        return picked

    pids: list[int] = []
    monkeypatch.setattr(pools, "compute_rows", probed)
    spec = pools.BuildSpec(
        collection_id=collection,
        runs={"A": RUN_A, "B": RUN_B},
        method=method,
        depth=2,
        budget=2,
        name=f"tx-{method}",
    )
    view = pools.build_pool(db=api.db, spec=spec)
    assert seen == [True, True]
    assert pids and pids[0] != os.getpid()  # computed in the build process
    assert _no_writer_open(api)  # and nothing left open afterwards
    # The stored pool is the depth-2 union: 101 {d0, d2, d6, d4}, 102 {d5, d3}.
    assert view.documents == 6 and view.summary["queries"] == 2
    stored, rows = pools.get_pool(db=api.db, pool_id=view.id)
    assert stored.documents == 6
    assert {(r.query_id, r.doc_id) for r in rows} == {
        ("101", "d0"),
        ("101", "d2"),
        ("101", "d6"),
        ("101", "d4"),
        ("102", "d5"),
        ("102", "d3"),
    }


def test_a_name_taken_during_the_computation_is_refused_at_the_write(
    api: Api, collection: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    compute = pools.compute_rows
    spec = pools.BuildSpec(collection_id=collection, runs={"A": RUN_A}, depth=2, name="raced")

    def racing(*args: Any, **kwargs: Any) -> Any:
        picked = compute(*args, **kwargs)
        monkeypatch.setattr(pools, "compute_rows", compute)
        pools.build_pool(db=api.db, spec=spec)  # another build takes the name meanwhile
        return picked

    monkeypatch.setattr(pools, "compute_rows", racing)
    before = len(pools.list_pools(db=api.db, collection_id=collection))
    with pytest.raises(pools.Invalid, match="pool named 'raced' already"):
        pools.build_pool(db=api.db, spec=spec)
    assert len(pools.list_pools(db=api.db, collection_id=collection)) == before + 1
