"""The job queues (app/kernel/queue.py): a job that holds its queue's worker thread does not
hold back another queue's jobs; each queue's worker writes a heartbeat, and a queue whose
heartbeat is absent or stale is shown as "worker down" on the admin pages and by
``heapjudge admin progress``; every concept's jobs are registered from its own folder.

Each failed before the queues were split: one thread ran every job in order, and nothing
said when no worker ran."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import cli
from app.cli.worker import register_all
from app.kernel import queue
from tests.app.conftest import Api
from tests.app.machine.test_judges_as_priors import web_admin

RELEASE = threading.Event()
BLOCKING = threading.Event()
QUICK_DONE = threading.Event()


def _blocking() -> None:
    BLOCKING.set()
    RELEASE.wait(60)


def _quick() -> None:
    QUICK_DONE.set()


BLOCK = queue.register("training", "test.blocking", _blocking)
QUICK = queue.register("opinions", "test.quick", _quick)


@pytest.fixture
def queue_env(api: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh SQLite queue file for this test, heartbeats stale after 1 s: in the server's
    settings object and in the environment (which a CLI command reads)."""
    path = tmp_path / "queue.db"
    monkeypatch.setenv("HEAPJUDGE_QUEUE_URL", f"sqlite:///{path}")
    monkeypatch.setenv("HEAPJUDGE_WORKER_STALE_SECONDS", "1")
    monkeypatch.setattr(api.db.settings, "queue_url", f"sqlite:///{path}")
    monkeypatch.setattr(api.db.settings, "worker_stale_seconds", 1.0)
    queue._down_cache.clear()
    yield path
    queue._down_cache.clear()


def _wait(event: threading.Event, what: str) -> None:
    assert event.wait(30), f"{what} did not happen within 30 s"


def test_a_busy_queue_does_not_hold_back_another(api: Api, queue_env: Path) -> None:
    RELEASE.clear(), BLOCKING.clear(), QUICK_DONE.clear()
    settings = api.db.settings
    stop = threading.Event()
    worker = threading.Thread(
        target=queue.run_worker, args=(settings,), kwargs={"stop": stop}, daemon=True
    )
    worker.start()
    try:
        BLOCK.enqueue(settings)
        _wait(BLOCKING, "the blocking job's start")
        QUICK.enqueue(settings)
        _wait(QUICK_DONE, "the other queue's job")  # while the first still holds its thread
        assert not RELEASE.is_set() and BLOCKING.is_set()
        status = {s.queue: s for s in queue.worker_status(settings)}
        assert set(status) == set(queue.QUEUES) and not any(s.down for s in status.values())
    finally:
        RELEASE.set()
        stop.set()
        worker.join(30)
    assert not worker.is_alive()


def test_every_concept_registers_its_jobs_on_its_queue() -> None:
    register_all()
    by_queue = {q: {j.name for j in queue.jobs_of(q)} for q in queue.QUEUES}
    assert "heapjudge.machine_opinions" in by_queue["opinions"]
    assert "heapjudge.llm_grades" in by_queue["grades"]
    assert "heapjudge.features" in by_queue["features"]
    assert "heapjudge.train" in by_queue["training"]
    modules = {
        j.fn.__module__ for q in queue.QUEUES for j in queue.jobs_of(q) if j.name.startswith("heap")
    }
    assert modules == {"app.judging.jobs", "app.machine.jobs", "app.training.jobs"}


def _beat(api: Api, name: str, age: float) -> None:
    huey = queue.huey_for(queue.queue_url(api.db.settings), name)
    huey.put(queue.heartbeat_key(name), {"at": time.time() - age, "worker": "test:1"})


def test_a_stale_heartbeat_shows_worker_down_on_the_pages_and_in_progress(
    api: Api, queue_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEAPJUDGE_WORKER_STALE_SECONDS", "60")
    monkeypatch.setattr(api.db.settings, "worker_stale_seconds", 60.0)
    web = web_admin(api)
    page = web.get("/admin")  # no worker ever ran on this queue file
    assert "Worker down" in page.text and "training: worker down (no heartbeat yet)" in page.text
    for name in queue.QUEUES:
        _beat(api, name, 0.0)
    queue._down_cache.clear()
    page = web.get("/admin")
    assert page.status_code == 200 and "Worker down" not in page.text
    _beat(api, "training", 120.0)  # the training worker stopped two minutes ago
    queue._down_cache.clear()
    page = web.get("/admin")
    assert page.status_code == 200 and "Worker down" in page.text
    assert re.search(r"training: worker down \(last heartbeat 12\d s ago\)", page.text)
    assert "opinions: worker down" not in page.text

    r = api.post("admin", "/api/v1/collections", json={"name": "progress-workers"})
    assert r.status_code == 201, r.text
    url = api.settings.database_url
    out = CliRunner().invoke(cli, ["admin", "progress", "progress-workers", "--database-url", url])
    assert out.exit_code == 0, out.output
    assert "workers: DOWN on some queues" in out.output
    assert re.search(r"training: worker down \(last heartbeat 12\d s ago\)", out.output)
    assert "grades: up (test:1" in out.output
    out = CliRunner().invoke(
        cli, ["admin", "progress", "progress-workers", "--json", "--database-url", url]
    )
    workers = {w["queue"]: w for w in json.loads(out.output)["workers"]}
    assert workers["training"]["down"] is True and workers["grades"]["down"] is False
