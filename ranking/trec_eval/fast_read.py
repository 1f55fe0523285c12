"""The compiled TREC scan (:mod:`ranking.io.trec_scan`) as a fast path for the trec_eval
readers: a file whose lines all have exactly the expected number of fields, cut by one space
or one tab, without comments, is read in C; anything else (or no compiled scan) returns None
and the exact Python reader of :mod:`ranking.trec_eval.readers` reads the file, and gives
the ``file:line`` error when there is one. Both give the same columns."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ranking.io.trec_scan import Scanned, compiled_scanner, scan_columns, string_buffers
from ranking.trec_eval.readers import QrelsColumns, RunColumns

__all__ = ["fast_qrels", "fast_run"]

_BLOCK = 1 << 24


def _delimiter(path: Path) -> bytes:
    with path.open("rb") as handle:
        first = handle.readline()
    return b"\t" if b"\t" in first and b" " not in first else b" "


def _scan(path: str, n_columns: int, doc_column: int, value_column: int) -> Scanned | None:
    if path == "-" or compiled_scanner() is None:
        return None
    file = Path(path)
    try:
        scanned = scan_columns(
            file,
            delimiter=_delimiter(file),
            trailing=False,
            n_columns=n_columns,
            qid_column=0,
            doc_column=doc_column,
            value_columns=[value_column],
            block_size=_BLOCK,
        )
    except OSError:
        return None
    return scanned if isinstance(scanned, Scanned) and len(scanned.query) else None


def _strings(scanned: Scanned) -> NDArray[np.bytes_] | None:
    """The document ids as a fixed-width bytes array (no Python objects)."""
    buffers = string_buffers(scanned.docids)
    if buffers is None:
        return None
    offsets, data = buffers
    offsets = offsets.astype(np.int64)
    lengths = np.diff(offsets)
    width = max(int(lengths.max(initial=1)), 1)
    raw = np.frombuffer(data, dtype=np.uint8)[offsets[0] : offsets[-1]]
    cells = np.zeros((len(lengths), width), dtype=np.uint8)
    cells[np.arange(width)[None, :] < lengths[:, None]] = raw
    return cells.view(f"S{width}").ravel()


def _qids(scanned: Scanned) -> NDArray[np.bytes_]:
    names = np.array([q.encode("utf-8", "surrogateescape") for q in scanned.qids], dtype=np.bytes_)
    return names[scanned.query]


def _runid(path: str) -> str:
    with open(path, "rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(size - 4096, 0))
        tail = handle.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    return tail.split()[5].decode("utf-8", "surrogateescape")


def fast_run(path: str) -> RunColumns | None:
    scanned = _scan(path, 6, 2, 4)
    docs = _strings(scanned) if scanned is not None else None
    if scanned is None or docs is None or not np.isfinite(scanned.values[0]).all():
        return None
    n = len(docs)
    return RunColumns(
        _qids(scanned), docs, scanned.values[0], np.zeros(n, dtype=np.int64), _runid(path)
    )


def fast_qrels(path: str) -> QrelsColumns | None:
    scanned = _scan(path, 4, 2, 3)
    docs = _strings(scanned) if scanned is not None else None
    if scanned is None or docs is None:
        return None
    grades = scanned.values[0]
    if not (np.isfinite(grades).all() and (grades == np.floor(grades)).all()):
        return None  # the Python reader says which line is not an integer grade
    return QrelsColumns(
        _qids(scanned), docs, grades.astype(np.int64), np.zeros(len(docs), dtype=np.int64)
    )
