"""Use case: the κ-NDCG@k loss a top-k task's machine answers may have cost its result, with
its 90% interval (:mod:`labeling.study.uncertainty`,
docs/machine-judges.md#the-uncertainty-the-machine-leaves), for the admin's progress report
and the exports (never for an assessor: judging stays blind).

The estimate replays the log a few hundred times (tenths of a second for a pool of 50, seconds
for one of 1,000), so it is kept per (task, ``created_at``, log version): a new answer or an
undo changes the version (:func:`app.judging.repository.log_version`) and the next call
estimates afresh; the Monte Carlo seed is the task's seed, so the same log always gives the
same figures. A progress report, refreshed every few seconds while people answer, may take
``stale`` > 0: the task's last estimate is then reused while its log has grown or shrunk by
fewer than ``stale`` answers (a finished task's is always exact).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.judging.loop import replay_task
from app.judging.repository import log_version
from app.kernel.caches import LRU, Slot
from app.kernel.db import Database
from labeling.protocol.topk import TopKSession
from labeling.study.uncertainty import LossEstimate, estimate_loss, machine_log, none_estimate

#: Estimates kept per database (one per task and log version).
_ESTIMATES: Slot[LRU] = Slot("machine-loss-estimates", lambda _db: LRU(4096))


def task_machine_loss(
    db: Database | None,
    task: Any,
    rows: Sequence[Any],
    session: Any = None,
    *,
    stale: int = 0,
    audits: Sequence[tuple[float, bool]] | None = None,
) -> LossEstimate:
    """The loss estimate of ``task`` (an ORM Task or a task row) from its live log ``rows``:
    :func:`labeling.study.uncertainty.none_estimate` when no machine answered (or the task
    grades documents). ``session``: the task's replayed session when the caller has it;
    ``db``: the database whose cache keeps the estimate (None: no cache); ``stale``: the module
    docstring; ``audits``: the study's audits of the task's machine
    (:func:`app.machine.alarms.task_audits`: stated P(right), right), which give the audited
    interval (docs/machine-judges.md#the-uncertainty-the-machine-leaves); None: the stated
    probabilities only."""
    if task.method != "topk" or not any(r.source == "machine" for r in rows):
        return none_estimate()
    cache = _ESTIMATES.of(db) if db is not None else None
    version = (*log_version(rows), -1 if audits is None else len(audits))
    key = (task.id, task.created_at)
    if cache is not None:
        found: tuple[Any, LossEstimate] | None = cache.get(key)
        if found is not None:
            (length, newest, audited), estimate = found
            if (length, newest, audited) == version:
                return estimate
            if (
                stale > 0
                and task.status != "done"
                and abs(length - version[0]) < stale
                and audited == version[2]
            ):
                return estimate
    if session is None:
        session = replay_task(task, rows)
    assert isinstance(session, TopKSession)
    estimate = estimate_loss(
        machine_log(session), seed=int(task.seed), audits=None if audits is None else list(audits)
    )
    if cache is not None:
        cache.put(key, (version, estimate))
    return estimate
