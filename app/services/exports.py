"""Use case: export a collection's labels, streamed line by line.

Formats (``format=``):

- ``qrels``: TREC qrels ``query_id 0 doc_id label`` with κ-labels from finished topk tasks:
  ``k + 1 - position`` for the top (best first), ``0`` for the rest (Niu et al. 2012 §3.2.1;
  ``labeling.groundtruth.kappa_labels``). One task per query: the given ``assessor``'s, else
  the first finished task (by finish time, then id). Which one was used is stated by the
  ``topk-jsonl`` export (task_id, assessor) and in the response header ``X-Heapjudge-Sources``.
- ``topk-jsonl``: one JSON object per finished topk task: ``{"query_id", "k", "top", "rest",
  "assessor", "task_id", "judgments"}`` (the evaluator's top-k ground truth format).
- ``pairs-jsonl``: one JSON object per live pair judgment (query, assessor, left, right,
  outcome, active_ms, time), in task and seq order, including unfinished tasks.
- ``grades-qrels``: TREC qrels of five-grade judgments (``query_id 0 doc_id grade``) from
  finished graded tasks, one task per query chosen as for ``qrels``.

Validation (format, collection, assessor) happens before the first line, so errors are clean
404/422 responses; the lines are then produced lazily inside one read transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import Select, select

from app.db import Database
from app.errors import Invalid, NotFound
from app.models import Collection, Judgment, Query, Task, User
from app.services.judging import live_judgments, replay_task

FORMATS = ("qrels", "topk-jsonl", "pairs-jsonl", "grades-qrels")
MEDIA_TYPES = {
    "qrels": "text/plain; charset=utf-8",
    "grades-qrels": "text/plain; charset=utf-8",
    "topk-jsonl": "application/x-ndjson",
    "pairs-jsonl": "application/x-ndjson",
}
FILE_SUFFIX = {
    "qrels": "qrels",
    "grades-qrels": "qrels",
    "topk-jsonl": "jsonl",
    "pairs-jsonl": "jsonl",
}


@dataclass(frozen=True, slots=True)
class Source:
    """The task a query's qrels lines come from."""

    query_id: str
    task_id: int
    assessor: str


def _check(db: Database, collection_id: int, format: str, assessor: str | None) -> None:
    if format not in FORMATS:
        raise Invalid(f"unknown export format {format!r}; expected one of {', '.join(FORMATS)}")
    with db.read() as s:
        if s.get(Collection, collection_id) is None:
            raise NotFound(f"no collection with id {collection_id}")
        if (
            assessor is not None
            and s.scalar(select(User.id).where(User.username == assessor)) is None
        ):
            raise NotFound(f"no user named {assessor!r}")


def finished_tasks_select(collection_id: int, method: str) -> Select[tuple[Task, str, str]]:
    """(task, query external id, assessor username) of the collection's finished tasks of one
    method, in query import order, then finishing order: the rows every export starts from."""
    return (
        select(Task, Query.external_id, User.username)
        .join(Query, Query.id == Task.query_id)
        .join(User, User.id == Task.assessor_id)
        .where(Task.collection_id == collection_id, Task.method == method, Task.status == "done")
        .order_by(Query.id, Task.finished_at, Task.id)
    )


def _finished(db_session, collection_id: int, method: str, assessor: str | None):
    stmt = finished_tasks_select(collection_id, method)
    if assessor is not None:
        stmt = stmt.where(User.username == assessor)
    return list(db_session.execute(stmt))


def sources(
    *, db: Database, collection_id: int, method: str = "topk", assessor: str | None = None
) -> list[Source]:
    """Per query, the finished task whose labels the qrels exports use."""
    with db.read() as s:
        chosen: dict[str, Source] = {}
        for task, qid, username in _finished(s, collection_id, method, assessor):
            chosen.setdefault(qid, Source(qid, task.id, username))
    return list(chosen.values())


def export_lines(
    *, db: Database, collection_id: int, format: str, assessor: str | None = None
) -> Iterator[str]:
    """Validate now, then return an iterator over the export's lines (each ending in \\n)."""
    _check(db, collection_id, format, assessor)
    if format == "qrels":
        return _qrels(db, collection_id, assessor, method="topk")
    if format == "grades-qrels":
        return _qrels(db, collection_id, assessor, method="graded")
    if format == "topk-jsonl":
        return _topk_jsonl(db, collection_id, assessor)
    return _pairs_jsonl(db, collection_id, assessor)


def _qrels(db: Database, collection_id: int, assessor: str | None, *, method: str) -> Iterator[str]:
    with db.read() as s:
        seen: set[str] = set()
        for task, qid, _username in _finished(s, collection_id, method, assessor):
            if qid in seen:
                continue
            seen.add(qid)
            result = replay_task(task, live_judgments(s, task.id)).result()
            if method == "topk":
                labels = result.kappa_labels
                for doc in list(result.top) + sorted(result.rest):
                    yield f"{qid} 0 {doc} {labels[doc]}\n"
            else:
                for doc in sorted(result.grades):
                    yield f"{qid} 0 {doc} {result.grades[doc]}\n"


def _topk_jsonl(db: Database, collection_id: int, assessor: str | None) -> Iterator[str]:
    with db.read() as s:
        for task, qid, username in _finished(s, collection_id, "topk", assessor):
            rows = live_judgments(s, task.id)
            result = replay_task(task, rows).result()
            record = {
                "query_id": qid,
                "k": result.k,
                "top": list(result.top),
                "rest": list(result.rest),
                "assessor": username,
                "task_id": task.id,
                "judgments": len(rows),
                "active_ms": sum(r.active_ms for r in rows),
            }
            yield json.dumps(record, ensure_ascii=False) + "\n"


def _pairs_jsonl(db: Database, collection_id: int, assessor: str | None) -> Iterator[str]:
    stmt = (
        select(Judgment, Query.external_id, User.username)
        .join(Task, Task.id == Judgment.task_id)
        .join(Query, Query.id == Task.query_id)
        .join(User, User.id == Task.assessor_id)
        .where(
            Task.collection_id == collection_id,
            Task.method == "topk",
            Judgment.undone.is_(False),
        )
        .order_by(Judgment.task_id, Judgment.seq)
        .execution_options(yield_per=1000)
    )
    if assessor is not None:
        stmt = stmt.where(User.username == assessor)
    with db.read() as s:
        for j, qid, username in s.execute(stmt):
            record = {
                "query_id": qid,
                "assessor": username,
                "task_id": j.task_id,
                "seq": j.seq,
                "left": j.left_doc,
                "right": j.right_doc,
                "outcome": j.outcome,
                "active_ms": j.active_ms,
                "time": j.created_at.isoformat(),
            }
            yield json.dumps(record, ensure_ascii=False) + "\n"
