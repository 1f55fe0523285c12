"""The training concept's SQL: the ``training_run`` rows (the only state of a run; every
transition a worker or a sweep makes is a guarded UPDATE whose row count says whether this
caller won it) and the collection's documents and queries a run trains on. Every function runs
in the caller's session ``s``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CursorResult, Update, case, select, update
from sqlalchemy.orm import Session

from app.kernel.models import Collection, Document, Query, Task, TrainingRun, utcnow


def collection_exists(s: Any, collection_id: int) -> bool:
    return s.get(Collection, collection_id) is not None


def add_run(s: Any, run: TrainingRun) -> TrainingRun:
    """Insert ``run`` (flushed: it has its id)."""
    s.add(run)
    s.flush()
    return run


def run_by_id(s: Any, run_id: int) -> TrainingRun | None:
    return s.get(TrainingRun, run_id)  # type: ignore[no-any-return]


def runs(s: Any, collection_id: int | None = None) -> list[TrainingRun]:
    """Runs, newest first (of one collection, or all)."""
    query = select(TrainingRun).order_by(TrainingRun.id.desc())
    if collection_id is not None:
        query = query.where(TrainingRun.collection_id == collection_id)
    return list(s.scalars(query))


def stale_runs(s: Any, cutoff: datetime) -> list[tuple[int, str, int]]:
    """``(id, status, attempts)`` of queued or running runs whose heartbeat is older than
    ``cutoff``."""
    rows = s.execute(
        select(TrainingRun.id, TrainingRun.status, TrainingRun.attempts).where(
            TrainingRun.status.in_(("queued", "running")),
            TrainingRun.heartbeat_at < cutoff,
        )
    )
    return [(int(i), str(st), int(a)) for i, st, a in rows]


def _rows_updated(s: Session, stmt: Update) -> int:
    """Rows an UPDATE matched: its guard tells whether this caller won the transition."""
    result = s.execute(stmt)
    # Session.execute is typed as returning a Result; for DML without RETURNING it is a
    # CursorResult, which carries the rowcount.
    assert isinstance(result, CursorResult)
    return result.rowcount


def move_stale(
    s: Session, run_id: int, status: str, attempts: int, cutoff: datetime, values: dict[str, Any]
) -> bool:
    """Set ``values`` on a run still in ``status`` after ``attempts`` executions with a heartbeat
    older than ``cutoff``; False when it moved on meanwhile (another sweep acted)."""
    guard = (
        (TrainingRun.id == run_id)
        & (TrainingRun.status == status)
        & (TrainingRun.attempts == attempts)
        & (TrainingRun.heartbeat_at < cutoff)
    )
    return bool(_rows_updated(s, update(TrainingRun).where(guard).values(**values)))


def claim(s: Session, run_id: int, now: datetime) -> bool:
    """``queued -> running`` with one more attempt, in one UPDATE guarded by the status; False
    when the run is not queued (cancelled, or another worker claimed it)."""
    stmt = (
        update(TrainingRun)
        .where(
            TrainingRun.id == run_id,
            TrainingRun.status == "queued",
            TrainingRun.cancel_requested.is_(False),
        )
        .values(
            status="running",
            attempts=TrainingRun.attempts + 1,
            started_at=now,
            heartbeat_at=now,
            progress=None,
            error=None,
        )
    )
    return bool(_rows_updated(s, stmt))


def finish_attempt(s: Session, run_id: int, attempt: int, values: dict[str, Any]) -> bool:
    """Set ``values`` on a run still running its ``attempt``; False when it moved on
    (cancelled, or recovered by a sweep): the outcome is then dropped (docs/training.md)."""
    stmt = (
        update(TrainingRun)
        .where(
            TrainingRun.id == run_id,
            TrainingRun.status == "running",
            TrainingRun.attempts == attempt,
        )
        .values(**values)
    )
    return bool(_rows_updated(s, stmt))


def note_stopped(s: Session, run_id: int, attempt: int, now: datetime) -> None:
    """The last heartbeat of ``attempt`` of a run cancelled while it ran: when its worker
    stopped the fit (the run's status and ``finished_at`` stay the cancel's)."""
    s.execute(
        update(TrainingRun)
        .where(
            TrainingRun.id == run_id,
            TrainingRun.status == "cancelled",
            TrainingRun.attempts == attempt,
        )
        .values(heartbeat_at=now)
    )


def cancel(s: Session, run_id: int, now: datetime) -> bool:
    """``queued | running -> cancelled`` in one UPDATE guarded by the status; False when the
    run is missing or already ended. The cancel flag tells a running fit's worker to stop."""
    error = case(
        (TrainingRun.status == "queued", "cancelled before it started"),
        else_="cancelled while running",
    )
    stmt = (
        update(TrainingRun)
        .where(TrainingRun.id == run_id, TrainingRun.status.in_(("queued", "running")))
        .values(status="cancelled", cancel_requested=True, finished_at=now, error=error)
    )
    return bool(_rows_updated(s, stmt))


def cancel_requested(s: Any, run_id: int) -> bool:
    return bool(s.scalar(select(TrainingRun.cancel_requested).where(TrainingRun.id == run_id)))


def beat(s: Any, run_id: int, progress: dict[str, Any]) -> None:
    """A running run's heartbeat and progress."""
    s.execute(
        update(TrainingRun)
        .where(TrainingRun.id == run_id, TrainingRun.status == "running")
        .values(heartbeat_at=utcnow(), progress=progress)
    )


def documents(s: Any, collection_id: int) -> list[tuple[str, str, str, Any, Any]]:
    """``(query id, description, document id, features, grade)`` of every document of the
    collection, by query then document in insertion order."""
    rows = s.execute(
        select(
            Query.external_id,
            Query.description,
            Document.external_id,
            Document.features,
            Document.grade,
        )
        .join(Document, Document.query_id == Query.id)
        .where(Query.collection_id == collection_id)
        .order_by(Query.id, Document.id)
    )
    return list(rows)


def query_descriptions(s: Any, collection_id: int) -> dict[str, str]:
    """Each query's description by external id."""
    rows = s.execute(
        select(Query.external_id, Query.description).where(Query.collection_id == collection_id)
    ).all()
    return dict(rows)


def task_by_id(s: Any, task_id: int) -> Task | None:
    return s.get(Task, task_id)  # type: ignore[no-any-return]
