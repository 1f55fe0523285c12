"""The job queue: training runs (and an ``llm`` task's pair opinions,
:func:`app.judging.opinions.prepare_llm_opinions`, and the LLM grades of the ``llm`` prior,
:func:`app.machine.grades.grade_documents`) execute in a worker process, never in the web
process.

The queue is huey (docs/training.md#queue): ``SqliteHuey`` in a file beside the SQLite
database for one machine (no extra service), ``RedisHuey`` when ``HEAPJUDGE_QUEUE_URL`` names a
Redis server (a team; docker-compose starts one). The web process only enqueues a run's id
(:func:`enqueue_training`) or a collection's features job (:func:`enqueue_features`);
``heapjudge worker`` (:func:`run_worker`) consumes the queue and calls
:func:`app.training.execution.execute_run` or
:func:`app.training.features.run_features_job`. The queue carries no state of its own: the
``training_run`` row is the truth, so a lost or duplicated message is harmless (a worker claims
a run only while it is ``queued``; the recovery sweep re-enqueues a queued run whose message
is gone). A features job's state is on its collection (``feature_job``); a lost one is
requested again.

Recovery needs no process probing: a running job's worker writes ``heartbeat_at`` every
``stale_seconds / 5``; :func:`app.training.service.recover_stalled`, swept by every worker
at start and every ``stale_seconds / 2``, retries (up to ``max_attempts`` executions) or fails
a run whose heartbeat is older than ``stale_seconds`` — e.g. after its worker was killed.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.judging.opinions import prepare_llm_opinions
from app.kernel.db import Database
from app.kernel.settings import Settings, load_settings
from app.machine.grades import grade_documents
from app.training.execution import execute_run
from app.training.features import run_features_job
from app.training.service import recover_stalled

if TYPE_CHECKING:
    from huey import Huey

log = logging.getLogger("heapjudge.jobs")
TRAIN_TASK = "heapjudge.train"
FEATURES_TASK = "heapjudge.features"
#: The job that prepares an ``llm`` task's pair opinions (docs/machine-judges.md#the-service).
OPINIONS_TASK = "heapjudge.machine_opinions"
#: The job that asks an LLM for the grade of a collection's documents (the ``llm`` prior).
GRADES_TASK = "heapjudge.llm_grades"
#: Seconds after which a pending opinions job's claim is taken as lost (its message gone).
STALE_CLAIM_SECONDS = 900.0


def queue_url(settings: Settings) -> str:
    """The queue's URL: ``HEAPJUDGE_QUEUE_URL``, else a SQLite file beside the database."""
    if settings.queue_url:
        return settings.queue_url
    path = settings.sqlite_path()
    if path is not None:
        return f"sqlite:///{path}.queue"
    return "sqlite:///./heapjudge-queue.db"


@cache
def get_queue(url: str) -> Huey:
    """The huey instance for ``url`` with the training task registered (one per URL)."""
    # huey (and redis, which it imports) is imported when the queue is first used, not with
    # the module, which the app imports at start: about 17 MB of resident memory
    # (docs/performance.md#imports).
    from huey import RedisHuey, SqliteHuey

    if url.startswith(("redis://", "rediss://", "unix://")):
        huey: Huey = RedisHuey("heapjudge", url=url, results=False)
    elif url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        huey = SqliteHuey("heapjudge", filename=str(path), results=False)
    else:
        raise ValueError(f"queue URL must start with redis:// or sqlite:///, got {url!r}")

    def train(run_id: int) -> None:
        execute_run(run_id, db=_worker_database())

    def features(collection_id: int, replace: bool) -> None:
        run_features_job(collection_id, replace, db=_worker_database())

    def opinions(task_id: int) -> None:
        db = _worker_database()
        run_opinions_job(db.settings, db, task_id)

    def grades(collection_id: int, query_ids: list[str] | None) -> None:
        grade_documents(_worker_database(), collection_id, query_ids)

    # Registered by a call, not as a decorator: huey has no type information, and its untyped
    # decorator would make `train` untyped too.
    huey.train_task = huey.task(name=TRAIN_TASK)(train)
    huey.features_task = huey.task(name=FEATURES_TASK)(features)
    huey.opinions_task = huey.task(name=OPINIONS_TASK)(opinions)
    huey.grades_task = huey.task(name=GRADES_TASK)(grades)
    return huey


def enqueue_training(settings: Settings, run_id: int) -> None:
    """Put run ``run_id`` on the queue (the web process's only part in executing it)."""
    get_queue(queue_url(settings)).train_task(run_id)


def enqueue_features(settings: Settings, collection_id: int, replace: bool) -> None:
    """Put a features job of collection ``collection_id`` on the queue
    (:func:`app.training.features.request_features` recorded it)."""
    get_queue(queue_url(settings)).features_task(collection_id, replace)


def opinions_claim(task_id: int) -> str:
    """The queue storage key that marks a pending opinions job of task ``task_id``."""
    return f"heapjudge.machine_opinions.pending.{task_id}"


def enqueue_grades(settings: Settings, collection_id: int, query_ids: list[str] | None) -> None:
    """Put :func:`app.machine.grades.grade_documents` of the collection's queries (all when
    None) on the queue: the LLM grades of the ``llm`` prior. A job asked twice costs its
    requests once (the replies are cached)."""
    get_queue(queue_url(settings)).grades_task(collection_id, query_ids)


def enqueue_opinions(settings: Settings, task_id: int) -> bool:
    """Put the preparation of an ``llm`` task's pair opinions on the queue (model calls run on
    the workers, never in a judging request), unless one is pending already: **at most one
    pending job per task**. The claim is a key in the queue's own storage
    (:func:`opinions_claim`, set with huey's atomic ``put_if_empty``, so two web processes
    cannot both enqueue); the job takes it back when it starts (:func:`run_opinions_job`),
    so answers given while a job runs may enqueue the next one. A claim older than
    :data:`STALE_CLAIM_SECONDS` (its message lost) is replaced. Whether a job was enqueued."""
    huey = get_queue(queue_url(settings))
    key = opinions_claim(task_id)
    if not huey.put_if_empty(key, time.time()):
        since = huey.get(key, peek=True)
        if isinstance(since, float) and time.time() - since < STALE_CLAIM_SECONDS:
            return False
        huey.get(key)  # stale: take it, then claim anew
        if not huey.put_if_empty(key, time.time()):
            return False
    huey.opinions_task(task_id)
    return True


_enqueuer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="heapjudge-enqueue")


def enqueue_opinions_later(settings: Settings) -> Callable[[int], None]:
    """``want_opinions`` for the judging loop (``app.main`` installs it as
    ``Database.want_opinions``): :func:`enqueue_opinions` on one background thread, so the
    request that asked (possibly on the event loop) never waits for the queue's writes;
    failures are logged. :func:`flush_enqueues` waits for the ones asked so far."""

    def want(task_id: int) -> None:
        _enqueuer.submit(_enqueue_logged, settings, task_id)

    return want


def _enqueue_logged(settings: Settings, task_id: int) -> None:
    try:
        enqueue_opinions(settings, task_id)
    except Exception:  # the queue is best effort: the next answer asks again
        log.exception("could not enqueue task %s's machine opinions", task_id)


def flush_enqueues() -> None:
    """Wait until every enqueue asked of :func:`enqueue_opinions_later` so far is done (one
    thread: a no-op submitted now runs after them)."""
    _enqueuer.submit(lambda: None).result()


def run_opinions_job(settings: Settings, db: Database, task_id: int) -> int:
    """The opinions job (``heapjudge.machine_opinions``): take back the task's claim, then
    :func:`app.judging.opinions.prepare_llm_opinions`; the pairs stored."""
    get_queue(queue_url(settings)).get(opinions_claim(task_id))
    return prepare_llm_opinions(db=db, task_id=task_id)


def pending_run_ids(huey: Huey) -> set[int]:
    """Run ids whose message waits in the queue (not yet taken by a worker)."""
    ids = set()
    for task in huey.pending():
        if task.name == TRAIN_TASK and task.args:
            ids.add(int(task.args[0]))
    return ids


_db_lock = threading.Lock()
_db: Any = None
#: The worker's settings, given to :func:`run_worker` (read once by ``heapjudge worker``).
_settings: Settings | None = None


def _worker_database() -> Any:
    """The worker process's one :class:`app.kernel.db.Database` (created on first use) over
    the settings :func:`run_worker` was given (else the environment's)."""
    global _db
    with _db_lock:
        if _db is None:
            _db = Database(_settings or load_settings())
        return _db


def _sweep(huey: Huey, jobs: Settings, stop: threading.Event) -> None:
    while True:
        try:
            recover_stalled(
                db=_worker_database(),
                settings=jobs,
                pending=lambda: pending_run_ids(huey),
                enqueue=lambda run_id: huey.train_task(run_id),
            )
        except Exception:  # a sweep that fails (database restarting) tries again later
            log.exception("training recovery sweep failed")
        if stop.wait(jobs.sweep_seconds):
            return


def _watch_parent(parent: int, stop: threading.Event) -> None:
    """Stop the worker when the process that started it (``serve``) is gone: its children
    are re-parented, so ``getppid`` changes."""
    while not stop.wait(1.0):
        if os.getppid() != parent:
            log.warning("parent process %s is gone; the worker stops", parent)
            os._exit(0)


def run_worker(settings: Settings, *, threads: int = 1, parent: int | None = None) -> None:
    """Consume the training queue until interrupted (``heapjudge worker``)."""
    global _settings
    _settings = settings
    url = queue_url(settings)
    huey = get_queue(url)
    stop = threading.Event()
    threading.Thread(target=_sweep, args=(huey, settings, stop), daemon=True).start()
    if parent is not None:
        threading.Thread(target=_watch_parent, args=(parent, stop), daemon=True).start()
    consumer = huey.create_consumer(
        workers=threads,
        worker_type="thread",
        periodic=False,
        initial_delay=0.05,
        backoff=1.5,
        max_delay=0.5,  # an idle worker looks at the queue at least twice a second
        check_worker_health=True,
    )
    log.info("heapjudge worker on %s (%d thread(s))", url, threads)
    try:
        consumer.run()
    finally:
        stop.set()
