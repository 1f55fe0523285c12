"""The ``topk-jsonl`` format: one JSON object per query (per task with ``source=all``), the
evaluator's top-k ground truth (``query_id, k, top, rest``) plus where it came from."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from app.exports.lines import batched, json_line
from app.exports.parquet import parquet_stream, topk_schema
from app.exports.selection import QueryLabels, Selection, query_labels
from app.kernel.db import Database


def _topk_record(ql: QueryLabels) -> dict[str, Any]:
    record: dict[str, Any] = {"query_id": ql.query_id, "k": ql.k, "top": ql.top, "rest": ql.rest}
    if ql.aggregate is None:
        (info,) = ql.tasks
        record.update(
            assessor=info.assessor,
            task_id=info.task_id,
            judgments=info.judgments,
            active_ms=info.active_ms,
        )
    else:
        record.update(
            aggregate=ql.aggregate,
            assessors=[t.assessor for t in ql.tasks],
            task_ids=[t.task_id for t in ql.tasks],
        )
    record["broken"] = ql.broken
    # Provenance (docs/exports.md#machine-answers): how many answers a machine gave, its
    # judge, and the top documents whose label no machine answer touched.
    record["machine_answers"] = ql.machine_answers
    record["judge"] = ql.judge
    record["human_decided"] = ql.human_decided
    # What the machine answers may have cost the result (docs/exports.md#machine-answers):
    # the estimated κ-NDCG@k loss and its 90% interval; an aggregate's sums its tasks'.
    record["machine"] = ql.machine.to_json() if ql.machine is not None else None
    return record


def write_topk_jsonl(db: Database, req: Selection) -> Iterator[bytes]:
    """One JSON object per query (per task with ``source=all``): the evaluator's top-k
    ground truth (``query_id, k, top, rest``) plus where it came from."""

    def lines() -> Iterator[str]:
        with db.read() as s:
            for ql in query_labels(s, req):
                yield json_line(_topk_record(ql))

    return batched(lines())


def write_topk_parquet(db: Database, req: Selection) -> Iterator[bytes]:
    """The ``topk-jsonl`` records as Parquet rows (:func:`app.exports.parquet.topk_schema`):
    the fields a record lacks are null; ``broken`` becomes a list of (doc_id, reason)."""

    def rows() -> Iterator[dict[str, Any]]:
        with db.read() as s:
            for ql in query_labels(s, req):
                record = _topk_record(ql)
                record["broken"] = [{"doc_id": d, "reason": r} for d, r in record["broken"].items()]
                yield record

    return parquet_stream(topk_schema(), rows())
