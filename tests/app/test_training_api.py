"""``POST/GET /api/v1/training-runs``: train on a collection's top-k truth in the background."""

from __future__ import annotations

import os

import numpy as np
import pytest
from sqlalchemy import select

from app.models import Document
from app.services.analysis import StudyConfig, run_simulated_study
from tests.app.conftest import Api

TINY = StudyConfig(assessors=4, queries=4, docs=6, k=3, seed=5, collection="training-study")


@pytest.fixture(scope="module")
def study(api: Api) -> int:
    summary = run_simulated_study(db=api.db, config=TINY)
    rng = np.random.default_rng(0)
    with api.db.write() as s:
        for doc in s.scalars(
            select(Document).where(Document.collection_id == summary.collection_id)
        ):
            doc.features = rng.random(4).round(6).tolist()
    api.add_user("dora")
    return summary.collection_id


def test_admin_trains_a_model_and_gets_it_back(api: Api, study: int) -> None:
    r = api.post(
        "admin",
        "/api/v1/training-runs",
        json={"collection_id": study, "model": "focusednet", "params": {"beta": 0.5, "epochs": 20}},
    )
    assert r.status_code == 202, r.text
    run = r.json()
    assert run["status"] == "queued" and run["model_json"] is None
    # TestClient runs background tasks before returning, so the run is finished now.
    got = api.get("admin", f"/api/v1/training-runs/{run['id']}").json()
    assert got["status"] == "done", got["error"]
    assert got["metrics"]["k"] == 3
    assert 0.0 <= got["metrics"]["kappa_ndcg@10"] <= 1.0
    assert got["metrics"]["train_queries"] + got["metrics"]["valid_queries"] == TINY.queries
    from ranking.estimators import Ranker

    model = Ranker.from_dict(got["model_json"])
    assert model.predict(np.zeros((2, 4))).shape == (2,)


def test_bad_requests(api: Api, study: int) -> None:
    assert (
        api.post(
            "admin", "/api/v1/training-runs", json={"collection_id": study, "model": "nope"}
        ).status_code
        == 422
    )
    bad = api.post(
        "admin",
        "/api/v1/training-runs",
        json={"collection_id": study, "model": "focusednet", "params": {"gamma": 1}},
    )
    assert bad.status_code == 422 and "gamma" in bad.json()["detail"]
    assert (
        api.post(
            "admin", "/api/v1/training-runs", json={"collection_id": 99999, "model": "ranknet"}
        ).status_code
        == 404
    )
    assert api.get("admin", "/api/v1/training-runs/99999").status_code == 404
    assert (
        api.post(
            "dora", "/api/v1/training-runs", json={"collection_id": study, "model": "ranknet"}
        ).status_code
        == 403
    )


def test_missing_features_fail_the_run_not_the_api(api: Api) -> None:
    from app.services.collections import create_collection

    empty = create_collection(db=api.db, name="no-topk-yet")
    r = api.post(
        "admin", "/api/v1/training-runs", json={"collection_id": empty.id, "model": "ranknet"}
    )
    assert r.status_code == 202
    got = api.get("admin", f"/api/v1/training-runs/{r.json()['id']}").json()
    assert got["status"] == "failed" and "no finished top-k task" in got["error"]


def _stored_run(api: Api, collection_id: int, status: str, worker: object) -> int:
    from app.models import TrainingRun

    with api.db.write() as s:
        run = TrainingRun(
            collection_id=collection_id,
            model="ranknet",
            params={},
            status=status,
            metrics={"worker": worker},
        )
        s.add(run)
        s.flush()
        return run.id


def test_runs_orphaned_by_a_dead_server_process_are_failed(api: Api, study: int) -> None:
    import subprocess
    import sys

    from app.services import training

    me = training.WORKER
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    cases = {
        # (status, worker) -> expected status after a GET
        "restarted as the same pid": ("running", {**me, "boot": "earlier-life"}, "failed"),
        "pid no longer exists": ("queued", {**me, "pid": dead.pid, "boot": "x"}, "failed"),
        "ours but not executing": ("running", me, "failed"),
        "ours, waiting for its task": ("queued", me, "queued"),
        "live sibling worker": (
            "running",
            {**me, "pid": os.getppid(), "started": training._start_time(os.getppid()), "boot": "y"},
            "running",
        ),
        "pid reused by a newer process": (
            "running",
            {**me, "pid": os.getppid(), "started": "0", "boot": "z"},
            "failed",
        ),
        "other host": ("running", {**me, "host": "elsewhere", "boot": "w"}, "running"),
    }
    for name, (status, worker, expected) in cases.items():
        run_id = _stored_run(api, study, status, worker)
        got = api.get("admin", f"/api/v1/training-runs/{run_id}").json()
        assert got["status"] == expected, name
        if expected == "failed":
            assert got["error"].startswith("orphaned:") and str(worker["pid"]) in got["error"]
            assert got["finished_at"] is not None and got["metrics"] is None
    # A run this process is executing right now is never reaped, and the sweep counts.
    busy = _stored_run(api, study, "running", me)
    stale = _stored_run(api, study, "running", {**me, "boot": "old"})
    with training._active_lock:
        training._active.add(busy)
    try:
        assert training.reap_orphans(db=api.db) >= 1
        assert api.get("admin", f"/api/v1/training-runs/{busy}").json()["status"] == "running"
        assert api.get("admin", f"/api/v1/training-runs/{stale}").json()["status"] == "failed"
    finally:
        with training._active_lock:
            training._active.discard(busy)


def test_server_start_fails_runs_orphaned_by_an_earlier_server(api: Api, study: int) -> None:
    """The lifespan sweep: a run left 'running' by a dead process is failed when a new app
    starts, before anyone asks for it."""
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.models import TrainingRun
    from app.services import training

    stale = _stored_run(api, study, "running", {**training.WORKER, "boot": "previous-server"})
    with TestClient(create_app(api.settings)):
        pass
    with api.db.read() as s:
        run = s.get(TrainingRun, stale)
        assert run is not None
        assert run.status == "failed" and run.error.startswith("orphaned:")
