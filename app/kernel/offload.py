"""Where a judging-loop call runs: on the event loop thread, or on a worker thread.

The use cases of :mod:`app.judging.service` are blocking functions (DB-API calls). An async
endpoint runs one through :func:`run`, which decides where, in this one place:

- **worker threads** (the default): a small pool of its own, :data:`THREADS` per process and
  shared by the apps of the process. SQLite admits one writer at a time, and more threads than
  this only contended for the GIL and the write lock (Starlette's default pool has 40);
- **the event loop thread itself**, for a call marked with a ``cost_key`` (a submit, keyed
  by task) whose previous run under that key took at most :data:`INLINE_MAX_SECONDS` of CPU,
  on SQLite: the call runs inside :meth:`Database.no_wait <app.kernel.db.Database.no_wait>`, so it
  never waits there. If the write lock is taken (by another thread or process) it raises
  :class:`~app.kernel.db.WouldBlock` with nothing done, and is tried again after short pauses in
  which the loop serves other requests (:data:`PAUSES`, up to the SQLite busy timeout), then
  handed to the pool. Handing a cheap submit to a thread and back cost more than the work
  (``docs/architecture.md#where-a-call-runs``, measured in docs/performance.md).

On Postgres, where every statement is a network round trip, the common submit has an
asynchronous form (:func:`app.judging.service.submit_on_loop`): one round trip on an
asynchronous connection of
:attr:`Database.loop_connections <app.kernel.db.Database.loop_connections>`,
awaited on the loop, so the request never leaves the loop thread (no hand-over to a worker and
back, no contention for the GIL with the workers). Where it does not apply (no cached session, a
retry or conflict, the log moved on) it stores nothing and the call goes to a worker as usual.

Costs are CPU seconds, measured on every run under a key, so a task whose protocol step
grows expensive (a huge pool or heap) leaves the event loop by itself. On a worker they are
``time.thread_time`` (waiting for a lock or I/O does not count); on the loop, where nothing
waits, the wall clock, a tenth of the price (a run the OS preempted may look costly once: the
next run, on a worker, measures it again). A key seen for the first time runs on a worker.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from app.kernel.caches import LRU, Slot
from app.kernel.db import Database, WouldBlock

T = TypeVar("T")

#: Worker threads per process.
THREADS = 8

#: A call runs on the event loop only if its previous run took at most this much CPU:
#: typical submits take 0.1-0.5 ms; what takes longer goes to a worker thread.
INLINE_MAX_SECONDS = 0.002

#: Pauses (s) between attempts on the event loop while another thread or process writes: a
#: judging write holds the lock for ~0.3 ms, so the first pauses are short; then every 4 ms.
#: The call keeps waiting here rather than going to the pool: calls that went to the pool when
#: they found the lock taken made the pool's writes keep it taken for the next ones, and under
#: 32 assessors the process flipped for good into that slower path (half the rate).
PAUSES = (0.0005, 0.001, 0.002, 0.004)

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def executor() -> ThreadPoolExecutor:
    """The process's worker pool (created on first use; threads start lazily)."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="judging")
        return _executor


#: CPU seconds of the last run per cost key, for each database (bounded).
_COSTS: Slot[LRU] = Slot("offload costs", lambda db: LRU(1024))


def _measured(
    work: Callable[[], T], costs: LRU, key: Hashable | None, clock: Callable[[], float]
) -> Callable[[], T]:
    """``work`` recording its cost under ``key``, measured with ``clock`` (not for an attempt
    that would block: it did nothing)."""

    def run() -> T:
        started = clock()
        try:
            result = work()
        except WouldBlock:
            raise
        except BaseException:
            if key is not None:
                costs.put(key, clock() - started)
            raise
        if key is not None:
            costs.put(key, clock() - started)
        return result

    return run


async def run(
    db: Database,
    work: Callable[[], T],
    *,
    cost_key: Hashable | None = None,
    on_loop: Callable[[], Awaitable[T | None]] | None = None,
) -> T:
    """``work()``'s result, computed on the event loop or a worker thread (module docstring).

    ``cost_key`` marks a call that may run on the event loop (see above); None: always on a
    worker thread. ``on_loop`` (Postgres) is tried first, on the loop: its result if not None,
    else ``work()`` as without it."""
    if on_loop is not None and db.loop_connections is not None:
        found = await on_loop()
        if found is not None:
            return found
    costs = _COSTS.of(db)
    if cost_key is not None and db.is_sqlite:
        cost = costs.get(cost_key)
        if cost is not None and cost <= INLINE_MAX_SECONDS:
            # On the loop the call never waits (no_wait), so its wall time is its CPU time,
            # and perf_counter costs a tenth of thread_time (a system call on some VMs).
            inline = _measured(work, costs, cost_key, time.perf_counter)
            waited, step = 0.0, 0
            patience = db.settings.sqlite_busy_timeout_ms / 1000
            while True:
                try:
                    with db.no_wait():
                        return inline()
                except WouldBlock as exc:
                    if not exc.busy or waited >= patience:
                        break
                pause = PAUSES[min(step, len(PAUSES) - 1)]
                step += 1
                await asyncio.sleep(pause)
                waited += pause
    measured = _measured(work, costs, cost_key, time.thread_time)
    return await asyncio.get_running_loop().run_in_executor(executor(), measured)
