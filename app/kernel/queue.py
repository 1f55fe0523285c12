"""The job queues: one huey queue per kind of job, so that no kind can starve another
(docs/architecture.md#jobs).

Each concept defines its jobs in its own ``jobs`` module and registers them here
(:func:`register`): machine opinions (``app.judging.jobs``), LLM grades (``app.machine.jobs``),
text features and training runs (``app.training.jobs``). A job names its queue, one of
:data:`QUEUES`; ``heapjudge worker`` (:func:`run_worker`) consumes every queue with its own
worker thread(s), so a 6,750-prompt grades request waits behind grades only, and a training
fit never holds back a task's machine opinions.

The queues are huey (docs/training.md#queue): ``SqliteHuey`` in a file beside the SQLite
database (one table, one queue name per kind), ``RedisHuey`` when ``HEAPJUDGE_QUEUE_URL`` names
a Redis server. huey is imported when a queue is first used, not with this module (about
17 MB of resident memory, docs/performance.md#imports).

Liveness: a worker writes a heartbeat per queue it consumes into the queue's own storage every
``worker_stale_seconds / 5``; :func:`worker_status` reads them, and a queue whose last
heartbeat is older than ``worker_stale_seconds`` (or absent) is shown as "worker down" by the
admin pages and ``heapjudge admin progress``. ``heapjudge serve`` restarts a worker that dies
(:mod:`app.cli.supervise`).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.kernel.settings import Settings, load_settings

if TYPE_CHECKING:
    from huey import Huey

log = logging.getLogger("heapjudge.jobs")

#: The queues, one per kind of job: a task's machine opinions, LLM grades of a collection's
#: documents, a collection's text features (what ``cal`` pool builds read), training runs.
QUEUES = ("opinions", "grades", "features", "training")


def queue_url(settings: Settings) -> str:
    """The queues' URL: ``HEAPJUDGE_QUEUE_URL``, else a SQLite file beside the database."""
    if settings.queue_url:
        return settings.queue_url
    path = settings.sqlite_path()
    if path is not None:
        return f"sqlite:///{path}.queue"
    return "sqlite:///./heapjudge-queue.db"


@dataclass(frozen=True)
class Job:
    """A registered job: its queue, its name, the function a worker calls."""

    queue: str
    name: str
    fn: Callable[..., Any]

    def enqueue(self, settings: Settings, *args: Any) -> None:
        """Put a message for this job on its queue."""
        _wrapper(queue_url(settings), self)(*args)

    def huey(self, settings: Settings) -> Huey:
        """The huey instance of this job's queue."""
        return huey_for(queue_url(settings), self.queue)


_lock = threading.RLock()
_jobs: dict[str, Job] = {}
_instances: dict[tuple[str, str], Huey] = {}
_wrappers: dict[tuple[str, str], Any] = {}
#: Functions a worker runs in a thread of their own until the event is set (e.g. training's
#: recovery sweep), by name.
_services: dict[str, Callable[[threading.Event], None]] = {}


def register(queue: str, name: str, fn: Callable[..., Any]) -> Job:
    """Register job ``name`` on ``queue`` (idempotent); the :class:`Job`."""
    if queue not in QUEUES:
        raise ValueError(f"unknown queue {queue!r}; expected one of {', '.join(QUEUES)}")
    with _lock:
        job = _jobs.setdefault(name, Job(queue, name, fn))
        if job.queue != queue:
            raise ValueError(f"job {name!r} is registered on queue {job.queue!r} already")
    return job


def register_service(name: str, run: Callable[[threading.Event], None]) -> None:
    """A function every worker runs in its own thread until its event is set."""
    with _lock:
        _services[name] = run


def jobs_of(queue: str) -> list[Job]:
    with _lock:
        return [j for j in _jobs.values() if j.queue == queue]


def huey_for(url: str, queue: str) -> Huey:
    """The huey instance of ``queue`` at ``url`` (one per process), with its jobs."""
    with _lock:
        found = _instances.get((url, queue))
        if found is None:
            found = _instances[(url, queue)] = _make_huey(url, f"heapjudge.{queue}")
        return found


def _make_huey(url: str, name: str) -> Huey:
    from huey import RedisHuey, SqliteHuey

    if url.startswith(("redis://", "rediss://", "unix://")):
        return RedisHuey(name, url=url, results=False)
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        return SqliteHuey(name, filename=str(path), results=False)
    raise ValueError(f"queue URL must start with redis:// or sqlite:///, got {url!r}")


def _wrapper(url: str, job: Job) -> Any:
    """huey's task wrapper of ``job`` on its queue at ``url`` (registered on first use, by a
    call rather than huey's untyped decorator)."""
    with _lock:
        wrapped = _wrappers.get((url, job.name))
        if wrapped is None:
            wrapped = huey_for(url, job.queue).task(name=job.name)(job.fn)
            _wrappers[(url, job.name)] = wrapped
        return wrapped


def heartbeat_key(queue: str) -> str:
    return f"heapjudge.worker.heartbeat.{queue}"


@dataclass(frozen=True)
class QueueStatus:
    """A queue's worker, as its last heartbeat tells: ``age`` seconds ago (None: never)."""

    queue: str
    age: float | None
    worker: str | None
    down: bool

    def text(self) -> str:
        if self.age is None:
            return f"{self.queue}: worker down (no heartbeat yet)"
        if self.down:
            return f"{self.queue}: worker down (last heartbeat {self.age:.0f} s ago)"
        return f"{self.queue}: up ({self.worker}, heartbeat {self.age:.0f} s ago)"


def worker_status(settings: Settings) -> list[QueueStatus]:
    """Each queue's worker status, from the heartbeats in the queues' storage."""
    url = queue_url(settings)
    now = time.time()
    out = []
    for name in QUEUES:
        beat = huey_for(url, name).get(heartbeat_key(name), peek=True)
        at = beat.get("at") if isinstance(beat, dict) else None
        age = None if not isinstance(at, float) else max(0.0, now - at)
        down = age is None or age > settings.worker_stale_seconds
        worker = beat.get("worker") if isinstance(beat, dict) else None
        out.append(QueueStatus(name, age, worker, down))
    return out


_down_cache: dict[str, tuple[float, list[QueueStatus]]] = {}


def workers_down(settings: Settings, *, max_age: float = 2.0) -> list[QueueStatus]:
    """The queues to show as "worker down" (each admin page asks: read at most every
    ``max_age`` seconds per queue URL). A queue whose storage cannot be read counts as down."""
    url = queue_url(settings)
    now = time.monotonic()
    found = _down_cache.get(url)
    if found is not None and now - found[0] < max_age:
        return found[1]
    try:
        down = [s for s in worker_status(settings) if s.down]
    except Exception:  # a queue server that is down means no worker can run either
        log.exception("could not read the workers' heartbeats")
        down = [QueueStatus(q, None, None, True) for q in QUEUES]
    _down_cache[url] = (now, down)
    return down


def _heartbeat(url: str, names: Sequence[str], every: float, stop: threading.Event) -> None:
    worker = f"{socket.gethostname()}:{os.getpid()}"
    while True:
        for name in names:
            try:
                huey_for(url, name).put(heartbeat_key(name), {"at": time.time(), "worker": worker})
            except Exception:  # the queue's storage restarting: the next beat tries again
                log.exception("could not write the heartbeat of queue %s", name)
        if stop.wait(every):
            return


def _watch_parent(parent: int, stop: threading.Event) -> None:
    """Stop the worker when the process that started it (``serve``) is gone: its children
    are re-parented, so ``getppid`` changes."""
    while not stop.wait(1.0):
        if os.getppid() != parent:
            log.warning("parent process %s is gone; the worker stops", parent)
            os._exit(0)


def run_worker(
    settings: Settings,
    *,
    queues: Sequence[str] = QUEUES,
    threads: int = 1,
    parent: int | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Consume ``queues`` (each with ``threads`` worker threads of its own) until SIGTERM or
    SIGINT (in the main thread) or ``stop`` is set, with a heartbeat per queue and the
    registered services (``heapjudge worker``)."""
    global _settings
    _settings = settings
    url = queue_url(settings)
    stop = stop or threading.Event()
    consumers = []
    for name in queues:
        huey = huey_for(url, name)
        for job in jobs_of(name):
            _wrapper(url, job)
        consumers.append(
            huey.create_consumer(
                workers=threads,
                worker_type="thread",
                periodic=False,
                initial_delay=0.05,
                backoff=1.5,
                max_delay=0.5,  # an idle queue is looked at at least twice a second
            )
        )
    background: list[tuple[Callable[..., None], tuple[Any, ...]]] = [
        (_heartbeat, (url, list(queues), settings.worker_stale_seconds / 5, stop)),
        *((run, (stop,)) for run in list(_services.values())),
    ]
    if parent is not None:
        background.append((_watch_parent, (parent, stop)))
    for target, args in background:
        threading.Thread(target=target, args=args, daemon=True).start()
    for consumer in consumers:
        for _, thread in consumer.worker_threads:
            thread.start()
        # The scheduler runs delayed tasks (retries with a delay, work enqueued for later);
        # started here, not left for the first health check to find dead and restart.
        consumer.scheduler.start()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    log.info("heapjudge worker on %s: queues %s, %d thread(s) each", url, queues, threads)
    try:
        while not stop.wait(1.0):
            for consumer in consumers:
                consumer.check_worker_health()  # a worker thread that died is replaced
    finally:
        for consumer in consumers:
            consumer.stop(graceful=False)


_db_lock = threading.Lock()
_db: Any = None
#: The worker's settings, given to :func:`run_worker` (read once by ``heapjudge worker``).
_settings: Settings | None = None


def worker_database() -> Any:
    """The worker process's one :class:`app.kernel.db.Database` (created on first use, from
    the settings :func:`run_worker` was given, else the environment's, read as the server
    reads them)."""
    from app.kernel.db import Database

    global _db
    with _db_lock:
        if _db is None:
            _db = Database(_settings or load_settings())
        return _db
