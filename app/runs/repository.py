"""The runs concept's SQL: runs and their per-query entries, the collection's query ids and
documents an upload is checked against, and the imported grades (the ``qrels`` label set).
Every function runs in the caller's transaction ``tx``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import delete, func, insert, select, union
from sqlalchemy.orm import Session

from app.kernel.models import (
    Collection,
    Document,
    Judgment,
    Query,
    Run,
    RunQuery,
    Task,
    UnpooledGrade,
)


def collection_exists(tx: Session, collection_id: int) -> bool:
    return tx.get(Collection, collection_id) is not None


def query_ids(tx: Session, collection_id: int) -> dict[str, int]:
    """The collection's queries: external id -> row id."""
    rows = tx.execute(
        select(Query.external_id, Query.id).where(Query.collection_id == collection_id)
    )
    return {external: qid for external, qid in rows}


def documents_by_query(tx: Session, collection_id: int) -> dict[int, set[str]]:
    """The document external ids of each query (row id) of the collection."""
    out: dict[int, set[str]] = {}
    rows = tx.execute(
        select(Document.query_id, Document.external_id).where(
            Document.collection_id == collection_id
        )
    )
    for query_id, external in rows:
        out.setdefault(query_id, set()).add(external)
    return out


def run_names(tx: Session, collection_id: int) -> set[str]:
    return set(tx.scalars(select(Run.name).where(Run.collection_id == collection_id)))


def insert_run(tx: Session, run: Run, entries: Sequence[dict[str, Any]]) -> None:
    """Insert ``run`` and its per-query rows (``run_id`` filled in here)."""
    tx.add(run)
    tx.flush()
    if entries:
        tx.execute(insert(RunQuery), [{**e, "run_id": run.id} for e in entries])


def runs(tx: Session, collection_id: int) -> list[Run]:
    """The collection's runs, by upload order."""
    return list(tx.scalars(select(Run).where(Run.collection_id == collection_id).order_by(Run.id)))


def run_by_id(tx: Session, collection_id: int, run_id: int) -> Run | None:
    run = tx.get(Run, run_id)
    return run if run is not None and run.collection_id == collection_id else None


def run_by_name(tx: Session, collection_id: int, name: str) -> Run | None:
    return tx.scalar(select(Run).where(Run.collection_id == collection_id, Run.name == name))


def delete_run(tx: Session, run_id: int) -> None:
    """Delete a run and its entries (explicitly: SQLite enforces ON DELETE CASCADE only with
    its foreign keys on, which the service always sets, but the order here needs no cascade)."""
    tx.execute(delete(RunQuery).where(RunQuery.run_id == run_id))
    tx.execute(delete(Run).where(Run.id == run_id))


def run_entries(
    tx: Session, run_id: int
) -> Iterator[tuple[str, list[str], list[int], list[float]]]:
    """(query external id, doc ids, ranks, scores) of each query of the run, in file order."""
    stmt = (
        select(Query.external_id, RunQuery.doc_ids, RunQuery.ranks, RunQuery.scores)
        .join(Query, Query.id == RunQuery.query_id)
        .where(RunQuery.run_id == run_id)
        .order_by(RunQuery.position)
    )
    for external, docs, ranks, scores in tx.execute(stmt):
        yield str(external), list(docs), list(ranks), list(scores)


def graded_documents(tx: Session, collection_id: int) -> Iterator[tuple[str, str, int]]:
    """(query external id, document external id, grade) of every imported grade of the
    collection: the pooled documents' grades, then the judgments outside the pool
    (``unpooled_grade``, docs/data-formats.md#judgments-outside-the-pool), each in import
    order. A pair is in one of the two, never both (the import keeps them apart)."""
    pooled = (
        select(Query.external_id, Document.external_id, Document.grade)
        .join(Query, Query.id == Document.query_id)
        .where(Document.collection_id == collection_id, Document.grade.is_not(None))
        .order_by(Query.id, Document.id)
    )
    unpooled = (
        select(Query.external_id, UnpooledGrade.doc_id, UnpooledGrade.grade)
        .join(Query, Query.id == UnpooledGrade.query_id)
        .where(UnpooledGrade.collection_id == collection_id)
        .order_by(Query.id, UnpooledGrade.id)
    )
    for stmt in (pooled, unpooled):
        for qid, doc, grade in tx.execute(stmt):
            yield qid, doc, int(grade or 0)


def graded_query_count(tx: Session, collection_id: int) -> int:
    """How many queries of the collection have at least one imported grade (of a pooled
    document or outside the pool)."""
    pooled = select(Document.query_id).where(
        Document.collection_id == collection_id, Document.grade.is_not(None)
    )
    unpooled = select(UnpooledGrade.query_id).where(UnpooledGrade.collection_id == collection_id)
    both = union(pooled, unpooled).subquery()
    return int(tx.scalar(select(func.count()).select_from(both)) or 0)


def has_machine_answers(tx: Session, collection_id: int) -> bool:
    """Whether a live machine answer is in a finished top-k task of the collection (the
    ``topk`` label set is then hybrid); one row fetched at most."""
    stmt = (
        select(Judgment.id)
        .join(Task, Task.id == Judgment.task_id)
        .where(
            Task.collection_id == collection_id,
            Task.method == "topk",
            Task.status == "done",
            Judgment.source == "machine",
            Judgment.undone.is_(False),
        )
        .limit(1)
    )
    return tx.execute(stmt).first() is not None
