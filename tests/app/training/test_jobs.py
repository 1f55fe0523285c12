"""Training jobs on the real queue with real worker processes: a worker killed with SIGKILL
mid-fit leaves no run stuck "running" (retried, then failed), cancel stops a running fit within
a second, the time limit stops a fit, a queued run is cancelled before any worker takes it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select

from app.analysis.study import StudyConfig, run_simulated_study
from app.kernel.models import Document, TrainingRun
from tests.app.conftest import Api
from tests.app.training.support import Worker, finished, fitting, wait_for

TINY = StudyConfig(assessors=4, queries=4, docs=6, k=3, seed=3, collection="jobs-study")
# A fit that runs until stopped: ~10^6 cheap epochs, no early stop before the end.
ENDLESS = {"epochs": 1_000_000, "eval_every": 1_000_000, "lr": 0.001}
JOB_ENV = {"HEAPJUDGE_TRAINING_STALE_SECONDS": "2", "HEAPJUDGE_TRAINING_MAX_ATTEMPTS": "2"}


@pytest.fixture(scope="module")
def queue(api: Api, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp = tmp_path_factory.mktemp("jobs")
    url = f"sqlite:///{tmp / 'queue.db'}"
    saved = {k: os.environ.get(k) for k in ("HEAPJUDGE_QUEUE_URL", *JOB_ENV)}
    os.environ.update({"HEAPJUDGE_QUEUE_URL": url, **JOB_ENV})  # the workers' environment
    mp = pytest.MonkeyPatch()
    mp.setattr(api.db.settings, "queue_url", url)  # the app's settings, read once
    try:
        yield url, tmp
    finally:
        mp.undo()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def worker_factory(api: Api, queue: tuple[str, Path]) -> Iterator[type]:
    started: list[Worker] = []
    url, tmp = queue

    class Factory:
        @staticmethod
        def start(**env: str) -> Worker:
            w = Worker(
                api.settings.database_url, url, tmp / "worker.log", **{**JOB_ENV, **env}
            ).start()
            started.append(w)
            return w

    yield Factory
    for w in started:
        w.stop()


@pytest.fixture(scope="module")
def study(api: Api) -> int:
    summary = run_simulated_study(db=api.db, config=TINY)
    rng = np.random.default_rng(1)
    with api.db.write() as s:
        for doc in s.scalars(
            select(Document).where(Document.collection_id == summary.collection_id)
        ):
            doc.features = rng.random(4).round(6).tolist()
    return summary.collection_id


def _endless(api: Api, study: int, **extra: object) -> int:
    r = api.post(
        "admin",
        "/api/v1/training-runs",
        json={"collection_id": study, "model": "focusednet", "params": ENDLESS, **extra},
    )
    assert r.status_code == 202, r.text
    return r.json()["id"]


def test_killed_worker_run_is_retried_then_failed_never_stuck(
    api: Api, study: int, worker_factory: type
) -> None:
    run_id = _endless(api, study)
    first = worker_factory.start()
    wait_for(api, run_id, fitting, timeout=60)
    first.kill9()
    # A new worker's sweep sees the heartbeat stop (2 s) and queues the run again: attempt 2.
    second = worker_factory.start()
    again = wait_for(api, run_id, lambda r: r["attempts"] == 2 and fitting(r), timeout=60)
    assert again["status"] == "running"
    second.kill9()
    # The last allowed attempt lost its worker too: the next sweep fails the run.
    worker_factory.start()
    got = wait_for(api, run_id, finished, timeout=60)
    assert got["status"] == "failed" and got["attempts"] == 2
    assert "worker stopped during attempt 2 of 2" in got["error"]
    assert got["finished_at"] is not None


def test_cancel_stops_a_running_fit_within_a_second(
    api: Api, study: int, worker_factory: type
) -> None:
    run_id = _endless(api, study)
    worker_factory.start()
    wait_for(api, run_id, fitting, timeout=60)
    from app.kernel.models import utcnow

    asked = utcnow()
    r = api.post("admin", f"/api/v1/training-runs/{run_id}/cancel")
    assert r.status_code == 200 and r.json()["cancel_requested"] is True
    assert r.json()["status"] == "cancelled" and r.json()["error"] == "cancelled while running"
    # The worker's last heartbeat, written when it stopped the fit: within a second.
    got = wait_for(api, run_id, lambda run: run["heartbeat_at"] > r.json()["heartbeat_at"])
    assert got["status"] == "cancelled" and got["metrics"] is None
    with api.db.read() as s:
        run = s.get(TrainingRun, run_id)
        assert run is not None and run.heartbeat_at is not None
        stopped_after = (run.heartbeat_at - asked).total_seconds()
    assert stopped_after < 1.0, stopped_after  # the worker's own clock: fit stopped in < 1 s
    # Cancelling again is harmless; a finished run cannot be cancelled into another state.
    assert api.post("admin", f"/api/v1/training-runs/{run_id}/cancel").json()["status"] == (
        "cancelled"
    )


def test_time_limit_fails_the_run(api: Api, study: int, worker_factory: type) -> None:
    run_id = _endless(api, study, time_limit_seconds=1)
    worker_factory.start()
    got = wait_for(api, run_id, finished, timeout=60)
    assert got["status"] == "failed" and got["error"] == "time limit of 1 s reached"
    assert api.post("admin", f"/api/v1/training-runs/{run_id}/cancel").status_code == 409


def test_queued_run_cancelled_before_a_worker_takes_it(
    api: Api, study: int, worker_factory: type
) -> None:
    run_id = _endless(api, study)
    r = api.post("admin", f"/api/v1/training-runs/{run_id}/cancel")
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    worker_factory.start()
    probe = api.post(
        "admin",
        "/api/v1/training-runs",
        json={"collection_id": study, "model": "ranknet", "params": {"epochs": 5}},
    ).json()["id"]
    assert wait_for(api, probe, finished)["status"] == "done"  # the worker passed by
    got = api.get("admin", f"/api/v1/training-runs/{run_id}").json()
    assert got["status"] == "cancelled" and got["attempts"] == 0


def test_sweep_requeues_a_queued_run_whose_message_is_lost(api: Api, study: int) -> None:
    from datetime import timedelta

    from app.kernel.models import utcnow
    from app.kernel.settings import Settings
    from app.training.service import recover_stalled

    jobs = Settings(training_stale_seconds=2, training_max_attempts=2)
    with api.db.write() as s:
        old = utcnow() - timedelta(seconds=10)
        lost = TrainingRun(
            collection_id=study,
            model="ranknet",
            params={},
            options={},
            status="queued",
            heartbeat_at=old,
        )
        waiting = TrainingRun(
            collection_id=study,
            model="ranknet",
            params={},
            options={},
            status="queued",
            heartbeat_at=old,
        )
        s.add_all([lost, waiting])
        s.flush()
        lost_id, waiting_id = lost.id, waiting.id
    enqueued: list[int] = []
    out = recover_stalled(
        db=api.db, settings=jobs, pending=lambda: {waiting_id}, enqueue=enqueued.append
    )
    assert lost_id in out["requeued"] and waiting_id not in out["requeued"]
    assert lost_id in enqueued and waiting_id not in enqueued
    # A second sweep right after finds nothing to do (the heartbeat was renewed).
    again: list[int] = []
    recover_stalled(db=api.db, settings=jobs, pending=lambda: {waiting_id}, enqueue=again.append)
    assert lost_id not in again
    with api.db.write() as s:
        for rid in (lost_id, waiting_id):
            run = s.get(TrainingRun, rid)
            assert run is not None
            run.status, run.error = "cancelled", "test row"


def test_a_supervised_worker_killed_with_sigkill_is_restarted_and_its_run_retried(
    api: Api, study: int, queue: tuple[str, Path]
) -> None:
    """``heapjudge serve``'s supervisor (app/cli/supervise.py) starts the worker again after
    SIGKILL; the restarted worker's sweep retries the run the dead one left running."""
    import signal
    import sys

    from app.cli.supervise import Supervisor

    url, _tmp = queue
    command = [sys.executable, "-m", "app.cli", "worker"]
    command += ["--database-url", api.settings.database_url, "--queue-url", url]
    supervisor = Supervisor(command, env={**os.environ, "HEAPJUDGE_DEV": "1", **JOB_ENV})
    supervisor.start()
    try:
        run_id = _endless(api, study)
        wait_for(api, run_id, fitting, timeout=60)
        assert supervisor.proc is not None
        first = supervisor.proc.pid
        supervisor.proc.send_signal(signal.SIGKILL)
        again = wait_for(api, run_id, lambda r: r["attempts"] == 2 and fitting(r), timeout=90)
        assert again["status"] == "running"  # retried by the restarted worker, not stuck
        assert supervisor.restarts == 1 and supervisor.proc.pid != first
        r = api.post("admin", f"/api/v1/training-runs/{run_id}/cancel")
        assert r.status_code == 200, r.text
    finally:
        supervisor.stop()
    assert supervisor.proc.poll() is not None  # stopped, and not started again
