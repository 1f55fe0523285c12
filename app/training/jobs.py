"""The training concept's jobs (:mod:`app.kernel.queue`): training runs (queue ``training``,
:func:`app.training.execution.execute_run`) and a collection's text features (queue
``features``, :func:`app.training.features.run_features_job`). Each executes in a worker
process, never in the web process, on a queue of its own, so a long fit never holds back a
features job or another concept's jobs (docs/training.md#queue).

The web process only enqueues a run's id (:func:`enqueue_training`) or a collection's features
job (:func:`enqueue_features`). The queue carries no state of its own: the ``training_run``
row is the truth, so a lost or duplicated message is harmless (a worker claims a run only
while it is ``queued``; the recovery sweep re-enqueues a queued run whose message is gone). A
features job's state is on its collection (``feature_job``); a lost one is requested again.

Recovery needs no process probing: a running job's worker writes ``heartbeat_at`` every
``stale_seconds / 5``; :func:`app.training.service.recover_stalled`, swept by every worker
(a service of :mod:`app.kernel.queue`) at start and every ``stale_seconds / 2``, retries (up
to ``max_attempts`` executions) or fails a run whose heartbeat is older than
``stale_seconds`` — e.g. after its worker was killed; ``heapjudge serve`` restarts such a
worker (:mod:`app.cli.supervise`), whose sweep then retries the run.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from app.kernel import queue
from app.kernel.settings import Settings
from app.training.execution import execute_run
from app.training.features import run_features_job
from app.training.service import recover_stalled

if TYPE_CHECKING:
    from huey import Huey

log = logging.getLogger("heapjudge.jobs")
TRAIN_TASK = "heapjudge.train"
FEATURES_TASK = "heapjudge.features"


def _train(run_id: int) -> None:
    execute_run(run_id, db=queue.worker_database())


def _features(collection_id: int, replace: bool) -> None:
    run_features_job(collection_id, replace, db=queue.worker_database())


TRAINING = queue.register("training", TRAIN_TASK, _train)
FEATURES = queue.register("features", FEATURES_TASK, _features)


def enqueue_training(settings: Settings, run_id: int) -> None:
    """Put run ``run_id`` on the queue (the web process's only part in executing it)."""
    TRAINING.enqueue(settings, run_id)


def enqueue_features(settings: Settings, collection_id: int, replace: bool) -> None:
    """Put a features job of collection ``collection_id`` on the queue
    (:func:`app.training.features.request_features` recorded it)."""
    FEATURES.enqueue(settings, collection_id, replace)


def pending_run_ids(huey: Huey) -> set[int]:
    """Run ids whose message waits in the training queue (not yet taken by a worker)."""
    ids = set()
    for task in huey.pending():
        if task.name == TRAIN_TASK and task.args:
            ids.add(int(task.args[0]))
    return ids


def sweep(stop: threading.Event) -> None:
    """The recovery sweep (module docstring), until ``stop`` is set."""
    db = queue.worker_database()
    settings = db.settings
    huey = TRAINING.huey(settings)
    while True:
        try:
            recover_stalled(
                db=db,
                settings=settings,
                pending=lambda: pending_run_ids(huey),
                enqueue=lambda run_id: enqueue_training(db.settings, run_id),
            )
        except Exception:  # a sweep that fails (database restarting) tries again later
            log.exception("training recovery sweep failed")
        if stop.wait(settings.sweep_seconds):
            return


queue.register_service("training-recovery", sweep)
