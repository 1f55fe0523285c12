"""The training concept's SQL: the ``training_run`` rows (the only state of a run; every
transition a worker or a sweep makes is a guarded UPDATE whose row count says whether this
caller won it), the collection's documents and queries a run trains on, and the text features:
what the extractor reads, which rows carry vectors, the write of the vectors, the collection's
feature set and its features job. Every function runs
in the caller's transaction ``tx``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import CursorResult, Text, Update, and_, case, cast, func, select, update
from sqlalchemy.orm import Session

from app.kernel.models import Collection, Document, Query, Task, TrainingRun, utcnow


def collection_exists(tx: Any, collection_id: int) -> bool:
    return tx.get(Collection, collection_id) is not None


def add_run(tx: Any, run: TrainingRun) -> TrainingRun:
    """Insert ``run`` (flushed: it has its id)."""
    tx.add(run)
    tx.flush()
    return run


def run_by_id(tx: Any, run_id: int) -> TrainingRun | None:
    return tx.get(TrainingRun, run_id)  # type: ignore[no-any-return]


def runs(tx: Any, collection_id: int | None = None) -> list[TrainingRun]:
    """Runs, newest first (of one collection, or all)."""
    query = select(TrainingRun).order_by(TrainingRun.id.desc())
    if collection_id is not None:
        query = query.where(TrainingRun.collection_id == collection_id)
    return list(tx.scalars(query))


def stale_runs(tx: Any, cutoff: datetime) -> list[tuple[int, str, int]]:
    """``(id, status, attempts)`` of queued or running runs whose heartbeat is older than
    ``cutoff``."""
    rows = tx.execute(
        select(TrainingRun.id, TrainingRun.status, TrainingRun.attempts).where(
            TrainingRun.status.in_(("queued", "running")),
            TrainingRun.heartbeat_at < cutoff,
        )
    )
    return [(int(i), str(st), int(a)) for i, st, a in rows]


def _rows_updated(tx: Session, stmt: Update) -> int:
    """Rows an UPDATE matched: its guard tells whether this caller won the transition."""
    result = tx.execute(stmt)
    # Session.execute is typed as returning a Result; for DML without RETURNING it is a
    # CursorResult, which carries the rowcount.
    assert isinstance(result, CursorResult)
    return result.rowcount


def move_stale(
    tx: Session, run_id: int, status: str, attempts: int, cutoff: datetime, values: dict[str, Any]
) -> bool:
    """Set ``values`` on a run still in ``status`` after ``attempts`` executions with a heartbeat
    older than ``cutoff``; False when it moved on meanwhile (another sweep acted)."""
    guard = (
        (TrainingRun.id == run_id)
        & (TrainingRun.status == status)
        & (TrainingRun.attempts == attempts)
        & (TrainingRun.heartbeat_at < cutoff)
    )
    return bool(_rows_updated(tx, update(TrainingRun).where(guard).values(**values)))


def claim(tx: Session, run_id: int, now: datetime) -> bool:
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
    return bool(_rows_updated(tx, stmt))


def finish_attempt(tx: Session, run_id: int, attempt: int, values: dict[str, Any]) -> bool:
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
    return bool(_rows_updated(tx, stmt))


def note_stopped(tx: Session, run_id: int, attempt: int, now: datetime) -> None:
    """The last heartbeat of ``attempt`` of a run cancelled while it ran: when its worker
    stopped the fit (the run's status and ``finished_at`` stay the cancel's)."""
    tx.execute(
        update(TrainingRun)
        .where(
            TrainingRun.id == run_id,
            TrainingRun.status == "cancelled",
            TrainingRun.attempts == attempt,
        )
        .values(heartbeat_at=now)
    )


def cancel(tx: Session, run_id: int, now: datetime) -> bool:
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
    return bool(_rows_updated(tx, stmt))


def cancel_requested(tx: Any, run_id: int) -> bool:
    return bool(tx.scalar(select(TrainingRun.cancel_requested).where(TrainingRun.id == run_id)))


def beat(tx: Any, run_id: int, progress: dict[str, Any]) -> None:
    """A running run's heartbeat and progress."""
    tx.execute(
        update(TrainingRun)
        .where(TrainingRun.id == run_id, TrainingRun.status == "running")
        .values(heartbeat_at=utcnow(), progress=progress)
    )


def documents(tx: Any, collection_id: int) -> list[tuple[str, str, str, Any, Any]]:
    """``(query id, description, document id, features, grade)`` of every document of the
    collection, by query then document in insertion order."""
    rows = tx.execute(
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


def query_descriptions(tx: Any, collection_id: int) -> dict[str, str]:
    """Each query's description by external id."""
    rows = tx.execute(
        select(Query.external_id, Query.description).where(Query.collection_id == collection_id)
    ).all()
    return dict(rows)


def task_by_id(tx: Any, task_id: int) -> Task | None:
    return tx.get(Task, task_id)  # type: ignore[no-any-return]


def collection_by_id(tx: Any, collection_id: int) -> Collection | None:
    return tx.get(Collection, collection_id)  # type: ignore[no-any-return]


def texts_present(tx: Any, collection_id: int) -> bool:
    """Whether some document row of the collection has a title, text or HTML that is not
    empty (a LETOR import stores empty texts: it has none)."""
    found = tx.execute(
        select(Document.id)
        .where(
            Document.collection_id == collection_id,
            (Document.title != "")
            | (func.coalesce(Document.text, "") != "")
            | (func.coalesce(Document.html, "") != ""),
        )
        .limit(1)
    ).first()
    return found is not None


#: A document row with a feature vector: neither SQL NULL nor the JSON ``null`` an ORM
#: write of None stores.
HAS_VECTOR = and_(Document.features.is_not(None), cast(Document.features, Text) != "null")


def vector_counts(tx: Any, collection_id: int) -> tuple[int, int]:
    """(document rows, rows with a feature vector) of the collection."""
    rows, with_vectors = tx.execute(
        select(func.count(Document.id), func.count(case((HAS_VECTOR, 1)))).where(
            Document.collection_id == collection_id
        )
    ).one()
    return int(rows or 0), int(with_vectors or 0)


def first_with_vector(tx: Any, collection_id: int) -> tuple[str, str] | None:
    """(query id, document id) of the first document row with a feature vector."""
    row = tx.execute(
        select(Query.external_id, Document.external_id)
        .join(Query, Query.id == Document.query_id)
        .where(Document.collection_id == collection_id, HAS_VECTOR)
        .order_by(Document.id)
        .limit(1)
    ).first()
    return None if row is None else (str(row[0]), str(row[1]))


def distinct_documents(tx: Any, collection_id: int) -> list[tuple[str, str, Any, Any]]:
    """(doc id, title, text, html) of each distinct document id's first stored row, in row
    order (content is per collection, so that row stands for all)."""
    first = (
        select(func.min(Document.id))
        .where(Document.collection_id == collection_id)
        .group_by(Document.external_id)
    )
    return list(
        tx.execute(
            select(Document.external_id, Document.title, Document.text, Document.html)
            .where(Document.id.in_(first))
            .order_by(Document.id)
        )
    )


def pools(tx: Any, collection_id: int) -> dict[str, tuple[str, list[tuple[Any, ...]]]]:
    """Per query (external id, import order): its text (title) and its document rows
    ``(row id, document id, title, text, html, grade)`` in row order."""
    out: dict[str, tuple[str, list[tuple[Any, ...]]]] = {}
    for qid, title in tx.execute(
        select(Query.external_id, Query.title)
        .where(Query.collection_id == collection_id)
        .order_by(Query.id)
    ):
        out[str(qid)] = (str(title), [])
    for qid, *row in tx.execute(
        select(
            Query.external_id,
            Document.id,
            Document.external_id,
            Document.title,
            Document.text,
            Document.html,
            Document.grade,
        )
        .join(Query, Query.id == Document.query_id)
        .where(Document.collection_id == collection_id)
        .order_by(Document.id)
    ):
        out[str(qid)][1].append(tuple(row))
    return out


def store_vectors(tx: Any, rows: Sequence[tuple[int, list[float], str]]) -> None:
    """Set ``features`` and ``content_hash`` of every ``(row id, vector, hash)`` (one
    executemany)."""
    if rows:
        tx.execute(
            update(Document),
            [{"id": i, "features": vector, "content_hash": h} for i, vector, h in rows],
        )


def set_feature_set(tx: Any, collection_id: int, feature_set: dict[str, Any] | None) -> None:
    tx.execute(
        update(Collection).where(Collection.id == collection_id).values(feature_set=feature_set)
    )


def set_feature_job(tx: Any, collection_id: int, job: dict[str, Any] | None) -> None:
    tx.execute(update(Collection).where(Collection.id == collection_id).values(feature_job=job))


def graded_rows(tx: Any, collection_id: int) -> int:
    """Document rows of the collection with an imported grade."""
    return int(
        tx.scalar(
            select(func.count(Document.id)).where(
                Document.collection_id == collection_id, Document.grade.is_not(None)
            )
        )
        or 0
    )


def finished_topk_tasks(tx: Any, collection_id: int) -> int:
    """Finished top-k tasks of the collection."""
    return int(
        tx.scalar(
            select(func.count(Task.id)).where(
                Task.collection_id == collection_id,
                Task.method == "topk",
                Task.status == "done",
            )
        )
        or 0
    )


def row_fingerprint(tx: Any, collection_id: int) -> tuple[int, int]:
    """(document rows, highest row id) of the collection: changes with any import."""
    count, top = tx.execute(
        select(func.count(Document.id), func.max(Document.id)).where(
            Document.collection_id == collection_id
        )
    ).one()
    return int(count or 0), int(top or 0)
