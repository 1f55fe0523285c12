"""The machine-opinions job (queue ``opinions``, :mod:`app.kernel.queue`): an ``llm`` task's
pair opinions prepared on a worker, never in a judging request
(docs/machine-judges.md#the-service).

A job asks at most the task's lookahead of questions (:data:`app.judging.opinions.LOOKAHEAD`,
two prompts each when both orders are asked): that is its prompt cap. At most one job per task
waits at a time: the claim is a key in the queue's own storage (:func:`opinions_claim`, set
with huey's atomic ``put_if_empty``, so two web processes cannot both enqueue); the job takes
it back when it starts (:func:`run_opinions_job`), so answers given while a job runs may
enqueue the next one. A claim older than :data:`STALE_CLAIM_SECONDS` (its message lost) is
replaced.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from app.judging.opinions import prepare_llm_opinions
from app.kernel import queue
from app.kernel.db import Database
from app.kernel.settings import Settings

log = logging.getLogger("heapjudge.jobs")

#: The job's name on its queue.
OPINIONS_TASK = "heapjudge.machine_opinions"
#: Seconds after which a pending opinions job's claim is taken as lost (its message gone).
STALE_CLAIM_SECONDS = 900.0


def _opinions(task_id: int) -> None:
    db = queue.worker_database()
    run_opinions_job(db.settings, db, task_id)


OPINIONS = queue.register("opinions", OPINIONS_TASK, _opinions)


def opinions_claim(task_id: int) -> str:
    """The queue storage key that marks a pending opinions job of task ``task_id``."""
    return f"heapjudge.machine_opinions.pending.{task_id}"


def enqueue_opinions(settings: Settings, task_id: int) -> bool:
    """Put the preparation of an ``llm`` task's pair opinions on the queue unless one is
    pending already (module docstring). Whether a job was enqueued."""
    huey = OPINIONS.huey(settings)
    key = opinions_claim(task_id)
    if not huey.put_if_empty(key, time.time()):
        since = huey.get(key, peek=True)
        if isinstance(since, float) and time.time() - since < STALE_CLAIM_SECONDS:
            return False
        huey.get(key)  # stale: take it, then claim anew
        if not huey.put_if_empty(key, time.time()):
            return False
    OPINIONS.enqueue(settings, task_id)
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
    """The opinions job: take back the task's claim, then
    :func:`app.judging.opinions.prepare_llm_opinions`; the pairs stored."""
    OPINIONS.huey(settings).get(opinions_claim(task_id))
    return prepare_llm_opinions(db=db, task_id=task_id)
