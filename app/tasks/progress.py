"""Use case: live progress of a collection's labeling, per query, per assessor and per task.

For every task: status, live judgments, active time (sum of ``active_ms``), the labeling core's
estimate of what remains (``expected_remaining`` and the worst-case ``max_remaining`` from
:meth:`JudgingSession.progress`, obtained by replaying the log: docs/architecture.md) and the
time of the last judgment. These are summed per query, per assessor and for the collection,
together with a timeline of judgments per time bucket and method (the admin page's chart).

Tasks with a machine judge also report its calls (``machine_calls``: calls, failed, timed out,
the last error) and the collection its open machine alarms (``machine_alarms``;
docs/machine-judges.md#when-the-machine-fails). Every top-k task a machine helped with also
reports the κ-NDCG@k loss its machine answers may have cost, with a 90% interval (``machine``:
:mod:`app.judging.uncertainty`), summed per query, assessor and collection (``machine``:
:class:`labeling.study.uncertainty.LossTotal`).

One read transaction; cost is one replay per unfinished task (well under a millisecond each),
plus, once per task and log version, the loss estimate of a task with machine answers.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from app.judging.loop import replay_task
from app.judging.uncertainty import task_machine_loss
from app.kernel.db import Database
from app.kernel.errors import NotFound
from app.kernel.models import TASK_STATUSES, Collection, Judgment, Query, Task, TaskMachine, User
from app.machine import alarms, health
from labeling.study.uncertainty import LossEstimate, total

#: Timeline bucket sizes to choose from (seconds): the smallest giving at most MAX_BUCKETS.
BUCKETS = (60, 300, 900, 3600, 6 * 3600, 86400, 7 * 86400)
MAX_BUCKETS = 60
#: An open task's loss estimate is reused while its log changed by fewer answers than this
#: (the estimate replays the log hundreds of times; the page refreshes every few seconds).
STALE_ANSWERS = 10


def _blank() -> dict[str, Any]:
    return {
        "tasks": dict.fromkeys(TASK_STATUSES, 0),
        "judgments": 0,
        "machine_answers": 0,
        "active_ms": 0,
        "expected_remaining": 0.0,
        "max_remaining": 0,
        "last_activity": None,
        "_losses": [],
    }


def _add(total: dict[str, Any], task: dict[str, Any]) -> None:
    total["tasks"][task["status"]] += 1
    total["judgments"] += task["judgments"]
    total["machine_answers"] += task["machine_answers"]
    total["active_ms"] += task["active_ms"]
    total["expected_remaining"] += task["expected_remaining"]
    total["max_remaining"] += task["max_remaining"]
    total["_losses"].append(task["_loss"])
    last = task["last_activity"]
    if last is not None and (total["last_activity"] is None or last > total["last_activity"]):
        total["last_activity"] = last


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def timeline(times: list[tuple[datetime, str]], *, now: datetime | None = None) -> dict[str, Any]:
    """Judgments per time bucket and method, from the first judgment to ``now``.

    The bucket is the smallest of :data:`BUCKETS` that keeps at most :data:`MAX_BUCKETS` bars;
    buckets are aligned to multiples of the bucket size since the epoch (UTC).
    """
    if not times:
        return {"bucket_seconds": BUCKETS[0], "points": []}
    start = min(t for t, _ in times)
    end = max(max(t for t, _ in times), now or start)
    span = (end - start).total_seconds()
    bucket = next((b for b in BUCKETS if span / b < MAX_BUCKETS), BUCKETS[-1])
    epoch = datetime(1970, 1, 1, tzinfo=UTC)

    def index(t: datetime) -> int:
        return int((t - epoch).total_seconds() // bucket)

    first, last = index(start), index(end)
    counts: dict[int, dict[str, int]] = {
        i: {"topk": 0, "graded": 0} for i in range(first, last + 1)
    }
    for t, method in times:
        counts[index(t)][method] += 1
    points = [
        {"t": (epoch + timedelta(seconds=i * bucket)).isoformat(), **counts[i]}
        for i in range(first, last + 1)
    ]
    return {"bucket_seconds": bucket, "points": points[-MAX_BUCKETS * 2 :]}


def _task_entry(
    db: Database,
    task: Task,
    log: list[Judgment],
    qid: str,
    qtitle: str,
    username: str,
    disabled: bool,
    audits: list[tuple[float, bool]] | None = None,
) -> dict[str, Any]:
    """One task's line of the report, from its live ``log`` (replayed while it is open)."""
    session = None
    if task.status in ("done", "cancelled"):
        expected, worst = 0.0, 0
    else:
        session = replay_task(task, log)
        p = session.progress()
        expected, worst = float(p.expected_remaining), int(p.max_remaining)
    loss: LossEstimate = task_machine_loss(
        db, task, log, session, stale=STALE_ANSWERS, audits=audits
    )
    return {
        "id": task.id,
        "query_id": qid,
        "query": qtitle,
        "assessor": username,
        "assessor_disabled": disabled,
        "method": task.method,
        "k": task.k,
        "n": len(task.doc_ids),
        "plan": task.plan,
        "status": task.status,
        "judgments": len(log),
        # Counts per source (docs/machine-judges.md#the-service): judgments counts every live
        # answer, machine_answers those a machine gave (people gave the rest).
        "machine_answers": sum(j.source == "machine" for j in log),
        "active_ms": sum(j.active_ms for j in log),
        "expected_remaining": expected,
        "max_remaining": worst,
        "last_activity": max((j.created_at for j in log), default=None),
        "created_at": task.created_at,
        "finished_at": task.finished_at,
        "machine": loss.to_json(),
        "_loss": loss,
    }


def _groups(
    tasks: list[dict[str, Any]], queries: list[Any]
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """The totals, per query and per assessor sums of the task entries (each task entry's
    times turned to ISO strings, its private loss dropped)."""
    totals = _blank()
    # The study's queries only (those with a task), in import order: a collection of 225
    # queries with a study of 10 lists 10.
    studied = {t["query_id"] for t in tasks}
    by_query: dict[str, dict[str, Any]] = {}
    for qid, title in queries:
        if qid in studied:
            by_query[qid] = {"query_id": qid, "query": title, **_blank()}
    by_assessor: dict[str, dict[str, Any]] = {}
    for t in tasks:
        _add(totals, t)
        _add(by_query[t["query_id"]], t)
        entry = by_assessor.setdefault(
            t["assessor"],
            {"assessor": t["assessor"], "disabled": t["assessor_disabled"], **_blank()},
        )
        _add(entry, t)
    for group in (totals, *by_query.values(), *by_assessor.values()):
        group["last_activity"] = _iso(group["last_activity"])
        group["expected_remaining"] = round(group["expected_remaining"], 2)
        n_tasks = sum(group["tasks"].values())
        group["done_fraction"] = (group["tasks"]["done"] / n_tasks) if n_tasks else None
        group["machine"] = total(group.pop("_losses")).to_json()
    for t in tasks:
        del t["_loss"]
        t["last_activity"] = _iso(t["last_activity"])
        t["created_at"] = _iso(t["created_at"])
        t["finished_at"] = _iso(t["finished_at"])
        t["expected_remaining"] = round(t["expected_remaining"], 2)
    return totals, by_query, by_assessor


def collection_progress(*, db: Database, collection_id: int) -> dict[str, Any]:
    """The progress report of a collection (see the module docstring)."""
    with db.read() as s:
        coll = s.get(Collection, collection_id)
        if coll is None:
            raise NotFound(f"no collection with id {collection_id}")
        rows = s.execute(
            select(Task, Query.external_id, Query.title, User.username, User.disabled)
            .join(Query, Query.id == Task.query_id)
            .join(User, User.id == Task.assessor_id)
            .where(Task.collection_id == collection_id)
            .order_by(Task.id)
        ).all()
        logs: dict[int, list[Judgment]] = defaultdict(list)
        for j in s.scalars(
            select(Judgment)
            .join(Task, Task.id == Judgment.task_id)
            .where(Task.collection_id == collection_id, Judgment.undone.is_(False))
            .order_by(Judgment.task_id, Judgment.seq)
            .execution_options(yield_per=2000)
        ):
            logs[j.task_id].append(j)
        queries = list(
            s.execute(
                select(Query.external_id, Query.title)
                .where(Query.collection_id == collection_id)
                .order_by(Query.id)
            )
        )
        calls = health.task_calls(s, collection_id)
        # The loss estimate of a task with a machine takes its study's audits (the audited
        # interval, docs/machine-judges.md#the-uncertainty-the-machine-leaves).
        audits = alarms.collection_audits(s, collection_id)
        judges = dict(
            s.execute(
                select(TaskMachine.task_id, TaskMachine.judge)
                .join(Task, Task.id == TaskMachine.task_id)
                .where(Task.collection_id == collection_id)
            ).all()
        )
    tasks: list[dict[str, Any]] = []
    times: list[tuple[datetime, str]] = []
    for task, qid, qtitle, username, disabled in rows:
        log = logs.get(task.id, [])
        times.extend((j.created_at, task.method) for j in log)
        judge = judges.get(task.id)
        audited = None if judge is None else audits.get(str(judge), [])
        entry = _task_entry(db, task, log, qid, qtitle, username, bool(disabled), audited)
        # the machine's calls for the task (docs/machine-judges.md#when-the-machine-fails)
        entry["machine_calls"] = calls.get(task.id)
        tasks.append(entry)
    totals, by_query, by_assessor = _groups(tasks, queries)
    return {
        "collection": {"id": coll.id, "name": coll.name, "archived": coll.archived},
        "generated_at": datetime.now(UTC).isoformat(),
        "totals": totals,
        "by_query": list(by_query.values()),
        "by_assessor": sorted(by_assessor.values(), key=lambda a: a["assessor"]),
        "tasks": tasks,
        "timeline": timeline(times, now=datetime.now(UTC)),
        "machine_alarms": health.open_alarms(db, collection_id),
    }
