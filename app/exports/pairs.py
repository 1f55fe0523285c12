"""The raw formats (``pairs-jsonl``, ``pairs-csv``): every live pair judgment of the
collection's top-k tasks, finished or not (raw judgments, not a ground truth)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy.orm import Session

from app.exports import repository
from app.exports.lines import batched, csv_line, json_line
from app.exports.parquet import pairs_schema, parquet_stream
from app.exports.selection import Selection
from app.kernel.db import Database
from labeling.csv_safety import neutralise_row
from labeling.protocol.seeding import shows_swapped

PAIR_COLUMNS = (
    "query_id",
    "assessor",
    "task_id",
    "seq",
    "left",
    "right",
    "outcome",
    "winner",
    "shown_swapped",
    "active_ms",
    "time",
    "broken_doc",
    "reason",
    "comment",
    "answered_by",
    "source",
    "machine_version",
    "probability",
)


def _judgments(s: Session, req: Selection) -> Iterator[Any]:
    return repository.topk_judgments(s, req.collection_id, assessor=req.assessor, plan=req.plan)


def write_pairs_jsonl(db: Database, req: Selection) -> Iterator[bytes]:
    """One JSON object per live pair judgment (:data:`PAIR_COLUMNS` but the winner and the
    side shown, plus the broken document's id). ``source`` is ``person`` or ``machine``; a
    machine's judgment carries its ``machine_version`` and calibrated ``probability`` of
    being right (null for a person's)."""

    def lines() -> Iterator[str]:
        with db.read() as s:
            for j, _seed, qid, username, second in _judgments(s, req):
                yield json_line(
                    {
                        "query_id": qid,
                        "assessor": username,
                        "task_id": j.task_id,
                        "seq": j.seq,
                        "left": j.left_doc,
                        "right": j.right_doc,
                        "outcome": j.outcome,
                        "active_ms": j.active_ms,
                        "time": j.created_at.isoformat(),
                        "doc_id": j.doc_id,
                        "reason": j.reason,
                        "comment": j.comment,
                        "answered_by": second,
                        "source": j.source,
                        "machine_version": j.machine_version,
                        "probability": j.probability,
                    }
                )

    return batched(lines())


def write_pairs_csv(db: Database, req: Selection) -> Iterator[bytes]:
    """One row per live pair judgment; every cell neutralised against spreadsheet formula
    injection (:mod:`labeling.csv_safety`) and quoted when it holds a line break."""

    def lines() -> Iterator[str]:
        yield csv_line(PAIR_COLUMNS)
        with db.read() as s:
            for j, seed, qid, username, second in _judgments(s, req):
                winner = {"left": j.left_doc, "right": j.right_doc}.get(j.outcome or "", "")
                yield csv_line(
                    neutralise_row(
                        (
                            qid,
                            username,
                            j.task_id,
                            j.seq,
                            j.left_doc,
                            j.right_doc,
                            j.outcome,
                            winner,
                            shows_swapped(seed, j.seq),
                            j.active_ms,
                            j.created_at.isoformat(),
                            j.doc_id or "",
                            j.reason or "",
                            j.comment or "",
                            second or "",
                            j.source,
                            j.machine_version or "",
                            "" if j.probability is None else j.probability,
                        )
                    )
                )

    return batched(lines())


def write_pairs_parquet(db: Database, req: Selection) -> Iterator[bytes]:
    """The ``pairs-csv`` rows as Parquet (:func:`app.exports.parquet.pairs_schema`): typed
    columns, nulls for the empty cells, no formula neutralising (no spreadsheet reads it)."""

    def rows() -> Iterator[dict[str, Any]]:
        with db.read() as s:
            for j, seed, qid, username, second in _judgments(s, req):
                yield {
                    "query_id": qid,
                    "assessor": username,
                    "task_id": j.task_id,
                    "seq": j.seq,
                    "left": j.left_doc,
                    "right": j.right_doc,
                    "outcome": j.outcome,
                    "winner": {"left": j.left_doc, "right": j.right_doc}.get(j.outcome or ""),
                    "shown_swapped": shows_swapped(seed, j.seq),
                    "active_ms": j.active_ms,
                    "time": j.created_at,
                    "broken_doc": j.doc_id,
                    "reason": j.reason,
                    "comment": j.comment,
                    "answered_by": second,
                    "source": j.source,
                    "machine_version": j.machine_version,
                    "probability": j.probability,
                }

    return parquet_stream(pairs_schema(), rows())
