"""The Parquet forms of the tabular exports (``qrels-parquet``, ``grades-qrels-parquet``,
``topk-parquet``, ``letor-parquet``, ``pairs-parquet``): the same rows as the text formats,
with typed columns (``docs/exports.md#parquet``), readable by ``pandas.read_parquet``,
``pyarrow.parquet`` and ``datasets.load_dataset("parquet", data_files=...)``.

Streamed like the text formats: rows are gathered into row groups of :data:`GROUP_ROWS`,
each written and sent as soon as it is full, so memory holds one row group, not the export.
Ids need no check here (a Parquet string holds any text, whitespace included). pyarrow is
imported on use: an app that never exports Parquet does not load it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

#: Rows per row group (and per chunk sent).
GROUP_ROWS = 50_000

MEDIA_TYPE = "application/vnd.apache.parquet"


class _Sink:
    """A write-only file object that keeps what the Parquet writer wrote until taken."""

    closed = False

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.position = 0

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self.parts.append(chunk)
        self.position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        return None

    def take(self) -> bytes:
        out = b"".join(self.parts)
        self.parts.clear()
        return out


def parquet_stream(schema: pa.Schema, rows: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """The bytes of a Parquet file of ``rows`` (dicts keyed by the schema's column names),
    one row group of :data:`GROUP_ROWS` at a time. No rows: a valid file with the schema and
    no row group."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = _Sink()
    writer = pq.ParquetWriter(pa.PythonFile(sink, mode="w"), schema)
    try:
        group: list[dict[str, Any]] = []
        for row in rows:
            group.append(row)
            if len(group) >= GROUP_ROWS:
                writer.write_table(pa.Table.from_pylist(group, schema=schema))
                group.clear()
                yield sink.take()
        if group:
            writer.write_table(pa.Table.from_pylist(group, schema=schema))
    finally:
        writer.close()
    yield sink.take()


def qrels_schema() -> pa.Schema:
    """``query_id``, ``iteration`` (0, or the task id with ``source=all``), ``doc_id``,
    ``label`` (κ-label or grade)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("query_id", pa.string()),
            ("iteration", pa.int64()),
            ("doc_id", pa.string()),
            ("label", pa.int64()),
        ]
    )


def topk_schema() -> pa.Schema:
    """The ``topk-jsonl`` record's fields as columns: those of one task's truth, and those of
    an aggregate (null where the record has none); ``broken`` as (doc_id, reason) pairs; the
    provenance of ``docs/exports.md#machine-answers``: ``machine_answers`` (the live answers a
    machine gave), ``judge`` (its version, null without a machine) and ``human_decided`` (the
    top documents no machine answer touched) and ``machine`` (the estimated κ-NDCG@k loss of
    the machine's answers and its 90% interval)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("query_id", pa.string()),
            ("k", pa.int64()),
            ("top", pa.list_(pa.string())),
            ("rest", pa.list_(pa.string())),
            ("assessor", pa.string()),
            ("task_id", pa.int64()),
            ("judgments", pa.int64()),
            ("active_ms", pa.int64()),
            ("aggregate", pa.string()),
            ("assessors", pa.list_(pa.string())),
            ("task_ids", pa.list_(pa.int64())),
            (
                "broken",
                pa.list_(pa.struct([("doc_id", pa.string()), ("reason", pa.string())])),
            ),
            ("machine_answers", pa.int64()),
            ("judge", pa.string()),
            ("human_decided", pa.list_(pa.string())),
            (
                "machine",
                pa.struct(
                    [
                        ("machine_answers", pa.int64()),
                        ("estimated_loss", pa.float64()),
                        ("interval", pa.list_(pa.float64())),
                        ("level", pa.float64()),
                        ("replays", pa.int64()),
                        ("tasks", pa.int64()),
                    ]
                ),
            ),
        ]
    )


def letor_schema() -> pa.Schema:
    """``label``, ``query_id``, ``doc_id``, ``features`` (the vector, feature 1 first)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("label", pa.int64()),
            ("query_id", pa.string()),
            ("doc_id", pa.string()),
            ("features", pa.list_(pa.float64())),
        ]
    )


def pairs_schema() -> pa.Schema:
    """The ``pairs-csv`` columns, typed: ``shown_swapped`` a boolean, ``time`` a UTC
    timestamp (microseconds), nulls where the CSV has empty cells; ``source`` (``person`` or
    ``machine``), a machine's ``machine_version`` and calibrated ``probability`` of being
    right (null for a person's answer, docs/exports.md#machine-answers)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("query_id", pa.string()),
            ("assessor", pa.string()),
            ("task_id", pa.int64()),
            ("seq", pa.int64()),
            ("left", pa.string()),
            ("right", pa.string()),
            ("outcome", pa.string()),
            ("winner", pa.string()),
            ("shown_swapped", pa.bool_()),
            ("active_ms", pa.int64()),
            ("time", pa.timestamp("us", tz="UTC")),
            ("broken_doc", pa.string()),
            ("reason", pa.string()),
            ("comment", pa.string()),
            ("answered_by", pa.string()),
            ("source", pa.string()),
            ("machine_version", pa.string()),
            ("probability", pa.float64()),
        ]
    )
