"""The qrels formats (``qrels``, ``grades-qrels``): TREC qrels lines ``query_id iteration
doc_id label`` of κ-labels or grades, after a check that every id fits a whitespace-separated
column."""

from __future__ import annotations

from collections.abc import Iterator

from app.exports.lines import batched, refuse_ids, unsafe_in_columns
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


def write_qrels(db: Database, req: Selection) -> Iterator[bytes]:
    """``query_id iteration doc_id label``: iteration 0, or the task id with ``source=all``."""
    _check_qrels_ids(db, req)

    def lines() -> Iterator[str]:
        with db.read() as s:
            for ql in query_labels(s, req):
                iteration = ql.tasks[0].task_id if req.source == "all" else 0
                for doc, label in ql.labels.items():
                    yield f"{ql.query_id} {iteration} {doc} {label}\n"

    return batched(lines())
