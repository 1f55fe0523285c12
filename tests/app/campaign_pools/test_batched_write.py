"""A pool is written in batches, each its own short transaction, and no reader sees it before
its last batch (docs/performance.md#pool-builds), on SQLite and Postgres: between two batches
the pool is listed as ``building`` with counts 0 (REST and the service), shows no documents,
and a plan from it is refused, while part of its rows are stored already; a build that fails
between its batches leaves nothing; a build that died (its pool left ``building``) is shown as
``failed``, never planned from, and the collection's next build deletes it.

Failed before the batches: the pool and its rows were one transaction (a hook between batches
never ran), the pool had no status (the REST list had no ``status``), and a pool left without
its rows would have been planned from."""

from __future__ import annotations

import os
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import func, select

from app.campaign_pools import build_priority, repository
from app.campaign_pools import service as pools
from app.campaign_pools.build_priority import BUILD_NICENESS
from app.kernel.errors import Invalid
from app.kernel.models import CampaignPool, PoolDocument, utcnow
from tests.app.admin_support import make_collection
from tests.app.conftest import Api

RUN_A = "101 Q0 d0 1 9 A\n101 Q0 d2 2 8 A\n101 Q0 d1 3 7 A\n102 Q0 d5 1 1 A\n102 Q0 d3 2 0 A\n"
RUN_B = "101 Q0 d6 1 9 B\n101 Q0 d4 2 8 B\n101 Q0 d7 3 7 B\n102 Q0 d5 1 5 B\n102 Q0 d2 2 4 B\n"
#: The depth-3 union: 101 {d0, d2, d1, d6, d4, d7}, 102 {d5, d3, d2}.
POOLED = 9
USERS = ["batch1", "batch2"]


@pytest.fixture(scope="module")
def collection(api: Api) -> int:
    for u in USERS:
        api.add_user(u)
    return make_collection(api, "pool-batches", queries=2, docs=8, features=False)[0]


def _spec(collection: int, name: str) -> pools.BuildSpec:
    return pools.BuildSpec(
        collection_id=collection, runs={"A": RUN_A, "B": RUN_B}, depth=3, name=name
    )


def _stored_rows(api: Api, pool_id: int) -> int:
    with api.db.read() as s:
        return int(s.scalar(select(func.count()).where(PoolDocument.pool_id == pool_id)) or 0)


def _plan(api: Api, collection: int, pool_id: int) -> Any:
    body = {
        "collection_id": collection,
        "assessors": USERS,
        "name": f"from-pool-{pool_id}",
        "scheme": "balanced",
        "per_query": {"topk": 1, "graded": 1},
        "k": 2,
        "pool": {"mode": "runs", "pool_id": pool_id},
    }
    return api.post("admin", "/api/v1/admin/plans/preview", json=body)


def _listed(api: Api, collection: int, name: str) -> dict[str, Any]:
    listed = api.get("admin", f"/api/v1/admin/collections/{collection}/pools").json()
    return next(p for p in listed if p["name"] == name)


def test_between_batches_the_pool_is_invisible_and_unusable(
    api: Api, collection: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pools, "BATCH_ROWS", 2)
    seen: list[dict[str, Any]] = []

    def between(_seconds: float) -> None:  # the pause between two batches
        with api.db.read() as s:
            pool = s.scalars(select(CampaignPool).where(CampaignPool.name == "batched")).one()
        listed = _listed(api, collection, "batched")
        shown = api.get("admin", f"/api/v1/admin/pools/{pool.id}").json()
        with api.db.read() as s, pytest.raises(Invalid, match="still being built"):
            pools.plan_pools(s, collection, pool.id, ["101", "102"])
        seen.append(
            {
                "stored": _stored_rows(api, pool.id),
                "listed": (listed["status"], listed["documents"], listed["picked"]),
                "shown": (shown["status"], shown["documents"], shown["documents_shown"]),
                "plan": _plan(api, collection, pool.id).status_code,
            }
        )

    monkeypatch.setattr(pools, "time", SimpleNamespace(sleep=between))
    view = pools.build_pool(db=api.db, spec=_spec(collection, "batched"))
    # 9 rows in batches of 2: four pauses, each after 2, 4, 6 and 8 rows were stored.
    assert [s["stored"] for s in seen] == [2, 4, 6, 8]
    for s in seen:
        assert s["listed"] == ("building", 0, 0)
        assert s["shown"] == ("building", 0, [])
        assert s["plan"] == 422
    assert view.status == "ready" and view.documents == POOLED
    assert _listed(api, collection, "batched")["status"] == "ready"
    assert _listed(api, collection, "batched")["documents"] == POOLED
    assert _stored_rows(api, view.id) == POOLED
    assert _plan(api, collection, view.id).status_code == 200


def test_a_build_failing_between_batches_leaves_nothing(
    api: Api, collection: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pools, "BATCH_ROWS", 2)
    insert = repository.insert_pool_rows
    calls: list[int] = []

    def failing(s: Any, pool_id: int, params: Any) -> None:
        calls.append(pool_id)
        if len(calls) == 3:
            raise RuntimeError("the disk is full")
        insert(s, pool_id, params)

    monkeypatch.setattr(repository, "insert_pool_rows", failing)
    before = pools.list_pools(db=api.db, collection_id=collection)
    with pytest.raises(RuntimeError, match="disk is full"):
        pools.build_pool(db=api.db, spec=_spec(collection, "crashed"))
    assert len(calls) == 3
    assert pools.list_pools(db=api.db, collection_id=collection) == before
    assert _stored_rows(api, calls[0]) == 0
    monkeypatch.setattr(repository, "insert_pool_rows", insert)
    again = pools.build_pool(db=api.db, spec=_spec(collection, "crashed"))  # the name is free
    assert again.documents == POOLED and _stored_rows(api, again.id) == POOLED


def _left_building(api: Api, collection: int, name: str, age: timedelta) -> int:
    """A pool as a build that died after its first batch leaves it."""
    with api.db.write() as s:
        pool = CampaignPool(
            collection_id=collection,
            name=name,
            pool_method="depth",
            depth=3,
            fusion=pools.FUSION,
            runs=["A"],
            summary={},
            created_at=utcnow() - age,
        )
        pool_id = repository.add_building_pool(s, pool)
        query_id = repository.queries_by_id(s, collection)["101"].id
        repository.insert_pool_rows(s, pool_id, [(query_id, "d0", 0, 0, 1 / 61, "[]")])
    return pool_id


def test_a_dead_build_is_shown_failed_never_used_and_deleted_by_the_next(
    api: Api, collection: int
) -> None:
    dead = _left_building(api, collection, "dead", pools.STALE_BUILD + timedelta(minutes=1))
    assert _listed(api, collection, "dead")["status"] == "failed"
    assert _listed(api, collection, "dead")["documents"] == 0
    shown = api.get("admin", f"/api/v1/admin/pools/{dead}").json()
    assert (shown["status"], shown["documents_shown"]) == ("failed", [])
    assert _plan(api, collection, dead).status_code == 422
    # The next build of the collection deletes it and may take its name.
    view = pools.build_pool(db=api.db, spec=_spec(collection, "dead"))
    assert view.documents == POOLED and view.status == "ready"
    with api.db.read() as s:  # the dead pool and its row are gone (SQLite may reuse its id)
        named = s.scalars(select(CampaignPool).where(CampaignPool.name == "dead")).all()
        assert [(p.id, p.status) for p in named] == [(view.id, "ready")]
        assert dead == view.id or s.get(CampaignPool, dead) is None
    assert _stored_rows(api, view.id) == POOLED


def test_a_build_in_progress_keeps_its_name(api: Api, collection: int) -> None:
    alive = _left_building(api, collection, "writing", timedelta(seconds=1))
    assert _listed(api, collection, "writing")["status"] == "building"
    with pytest.raises(Invalid, match="pool named 'writing' already"):
        pools.build_pool(db=api.db, spec=_spec(collection, "writing"))
    pools.build_pool(db=api.db, spec=_spec(collection, "other"))  # not deleted: not stale
    with api.db.read() as s:
        found = s.get(CampaignPool, alive)
        assert found is not None and found.status == "building"


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
def test_the_build_process_runs_at_the_idle_priority() -> None:
    """A waking judgment thread preempts the build at once (sched(7), SCHED_IDLE)."""
    worker = pools._build_executor()
    assert worker.submit(os.sched_getscheduler, 0).result() == os.SCHED_IDLE
    assert worker.submit(os.getpriority, os.PRIO_PROCESS, 0).result() == BUILD_NICENESS
    assert os.sched_getscheduler(0) != os.SCHED_IDLE  # this process keeps its priority


def test_the_build_process_lowers_its_priority_before_it_imports_the_service() -> None:
    """The process pool imports its initializer's module before running it: the service's
    imports (SQLAlchemy, the pooling cores) come after the priority is lowered, not beside the
    judging loop at the web process's priority (docs/performance.md#pool-builds)."""
    worker = pools._build_executor()
    before = worker.submit(build_priority.imported_at_lowering).result()
    assert "app.campaign_pools.build_priority" in before  # it ran, in that process
    assert not {"app.campaign_pools.service", "app.kernel.db", "sqlalchemy", "labeling"} & before
    assert not any(name.startswith(("sqlalchemy.", "labeling.")) for name in before)
