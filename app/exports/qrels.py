"""The qrels formats (``qrels``, ``grades-qrels``): TREC qrels lines ``query_id iteration
doc_id label`` of κ-labels or grades, after a check that every id fits a whitespace-separated
column."""

from __future__ import annotations

from collections.abc import Iterator

from app.exports.lines import batched, refuse_ids, unsafe_in_columns
from app.exports.parquet import parquet_stream, qrels_schema
from app.exports.selection import Selection, chosen_tasks, query_labels
from app.kernel.db import Database


def _check_qrels_ids(db: Database, req: Selection) -> None:
    """Refuse ids that would split or comment out a TREC qrels line: the query and document
    ids of every task the export reads (``task.doc_ids`` is the pool the labels cover)."""
    bad: dict[str, str] = {}
    with db.read() as s:
        for task, qid, _ in chosen_tasks(s, req):
            if unsafe_in_columns(qid):
                bad.setdefault(qid, "query id with whitespace or empty")
            elif qid.startswith("#"):
                bad.setdefault(qid, "query id starting with '#' (a comment line)")
            for doc in task.doc_ids:
                if unsafe_in_columns(doc):
                    bad.setdefault(doc, "document id with whitespace or empty")
    refuse_ids(req.format, bad)


def qrels_rows(db: Database, req: Selection) -> Iterator[tuple[str, int, str, int]]:
    """``(query_id, iteration, doc_id, label)`` of every qrels line, in writing order:
    iteration 0, or the task id with ``source=all``."""
    with db.read() as s:
        for ql in query_labels(s, req):
            iteration = ql.tasks[0].task_id if req.source == "all" else 0
            for doc, label in ql.labels.items():
                yield ql.query_id, iteration, doc, label


def write_qrels(db: Database, req: Selection) -> Iterator[bytes]:
    """``query_id iteration doc_id label``: iteration 0, or the task id with ``source=all``."""
    _check_qrels_ids(db, req)
    lines = (f"{q} {i} {d} {label}\n" for q, i, d, label in qrels_rows(db, req))
    return batched(lines)


def write_qrels_parquet(db: Database, req: Selection) -> Iterator[bytes]:
    """The qrels rows as Parquet (:func:`app.exports.parquet.qrels_schema`); any id fits."""
    rows = (
        {"query_id": q, "iteration": i, "doc_id": d, "label": int(label)}
        for q, i, d, label in qrels_rows(db, req)
    )
    return parquet_stream(qrels_schema(), rows)
