"""The text the export formats are written in: lines that cannot break (JSON Lines with every
line break escaped, CSV with such cells quoted), ids checked against whitespace-separated
columns (``docs/exports.md#identifiers``), and the bytes streamed in chunks."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from app.kernel.errors import Invalid

CHUNK = 64 * 1024
#: How many offending ids an error message names.
SHOWN = 5


def unsafe_in_columns(value: str) -> bool:
    """True if ``value`` cannot be one whitespace-separated column: empty, or containing a
    character ``str.split()`` splits at (every Unicode whitespace, line breaks included)."""
    return not value or any(c.isspace() for c in value)


def refuse_ids(format_name: str, bad: dict[str, str]) -> None:
    """Raise Invalid naming up to :data:`SHOWN` offending ids and why, if there are any."""
    if not bad:
        return
    shown = "; ".join(f"{ident!r}: {why}" for ident, why in list(bad.items())[:SHOWN])
    more = f" (and {len(bad) - SHOWN} more)" if len(bad) > SHOWN else ""
    raise Invalid(
        f"{len(bad)} id(s) cannot be written to {format_name} (its columns are separated by "
        f"whitespace): {shown}{more}; export topk-jsonl, pairs-jsonl, pairs-csv or a Parquet "
        "format instead, "
        "or re-import the documents with clean ids"
    )


#: Characters ``str.splitlines`` breaks at that ``json.dumps(ensure_ascii=False)`` leaves raw.
_RAW_LINE_BREAKS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def json_line(record: dict[str, Any]) -> str:
    """One JSON Lines record: non-ASCII text kept readable, every line break escaped (JSON
    escapes control characters; the three Unicode line separators are escaped here so that
    ``str.splitlines`` readers see one record per line too)."""
    text = json.dumps(record, ensure_ascii=False)
    for raw, escaped in _RAW_LINE_BREAKS.items():
        text = text.replace(raw, escaped)
    return text + "\n"


#: A CSV cell with one of these is quoted (RFC 4180 allows line breaks inside quotes); the
#: csv module's minimal quoting leaves a bare "\r" unquoted when the line ends in "\n".
_CSV_SPECIAL = frozenset(',"\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029')


def csv_line(cells: Iterable[str]) -> str:
    """One CSV row: a cell is quoted (``"`` doubled) when it holds a comma, a quote or any
    line break, so a stored id can never start a row of its own."""
    out = []
    for cell in cells:
        if any(c in _CSV_SPECIAL for c in cell):
            cell = '"' + cell.replace('"', '""') + '"'
        out.append(cell)
    return ",".join(out) + "\n"


def batched(lines: Iterable[str]) -> Iterator[bytes]:
    """Join lines into chunks of about :data:`CHUNK` bytes."""
    buf: list[str] = []
    size = 0
    for line in lines:
        buf.append(line)
        size += len(line)
        if size >= CHUNK:
            yield "".join(buf).encode()
            buf, size = [], 0
    if buf:
        yield "".join(buf).encode()


def stream_file(path: Path) -> Iterator[bytes]:
    """The file's bytes in chunks of :data:`CHUNK`; the file is deleted at the end."""
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(CHUNK):
                yield chunk
    finally:
        os.unlink(path)
