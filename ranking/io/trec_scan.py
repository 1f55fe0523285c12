"""The compiled scan of a TREC file (``ranking.io._trecscan``, C; docs/metrics.md#large-files):
what the fast path of :mod:`ranking.io.trec_fast` reads, in one pass over the bytes.

The extension is optional (``setup.py`` builds it where a C compiler is found). Without it,
or with ``HEAPJUDGE_TREC_PURE=1`` in the environment (or :data:`USE_COMPILED` set to False,
as the tests do), :func:`scan_columns` answers None and the numpy/pyarrow reader is used;
both give the same columns, hashes and values, bit for bit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import pyarrow as pa

try:
    import ranking.io._trecscan as compiled
except ImportError:  # not built: the numpy/pyarrow reader
    compiled_module: ModuleType | None = None
else:
    compiled_module = compiled

__all__ = [
    "PURE_ENV",
    "USE_COMPILED",
    "Scanned",
    "compiled_scanner",
    "join_values",
    "scan_columns",
    "string_buffers",
]

#: An environment variable that, set to anything but "" or "0", turns the compiled scan off.
PURE_ENV = "HEAPJUDGE_TREC_PURE"
#: False turns the compiled scan off in this process (tests compare both paths).
USE_COMPILED = True


def compiled_scanner() -> ModuleType | None:
    """The extension module, unless it is missing or turned off."""
    if not USE_COMPILED or os.environ.get(PURE_ENV, "") not in ("", "0"):
        return None
    return compiled_module


@dataclass(frozen=True)
class Scanned:
    """A file's rows: ``qids`` in order of first appearance, ``query[i]`` the code of row i's
    query, ``docids`` its document id, ``hashes`` the document ids'
    :func:`ranking.io.trec_keys.string_hashes`, ``values`` one float64 column per value
    column asked for."""

    qids: list[str]
    query: NDArray[np.int32]
    docids: pa.ChunkedArray
    hashes: NDArray[np.uint64]
    values: list[NDArray[np.float64]]


def scan_columns(
    path: Path,
    *,
    delimiter: bytes,
    trailing: bool,
    n_columns: int,
    qid_column: int,
    doc_column: int,
    value_columns: list[int],
    block_size: int,
) -> Scanned | str | None:
    """The rows of a file whose lines have ``n_columns`` fields cut at ``delimiter`` (and,
    with ``trailing``, one more delimiter at the end of every line), scanned in C; a str
    saying why when the file is not one the fast path reads exactly; None when the compiled
    scan is not available or cannot hold the file (document ids past 2 GiB), so that the
    pyarrow reader reads it. Raises OSError when the file cannot be read."""
    scanner = compiled_scanner()
    if scanner is None:
        return None
    out = scanner.scan(
        str(path),
        delimiter[0],
        trailing,
        n_columns,
        qid_column,
        doc_column,
        tuple(value_columns),
        block_size,
    )
    if out is None or isinstance(out, str):
        return out
    import pyarrow as pa  # on use: memory at start (ranking.io.trec_fast.arrow_pool)

    qids, query, offsets, data, hashes, values = out
    n = len(query) // 4
    docids = pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    return Scanned(
        qids=qids,
        query=np.frombuffer(query, dtype=np.int32),
        docids=pa.chunked_array([docids]),
        hashes=np.frombuffer(hashes, dtype=np.uint64),
        values=[np.frombuffer(v, dtype=np.float64) for v in values],
    )


def string_buffers(strings: pa.ChunkedArray) -> tuple[NDArray[np.integer], Any] | None:
    """The offsets (int32 or int64, one more than the strings, starting where the array does)
    and the data buffer of a one-chunk Arrow string array; None for another shape."""
    import pyarrow as pa  # on use: memory at start (ranking.io.trec_fast.arrow_pool)

    if strings.num_chunks != 1:
        return None
    chunk = strings.chunk(0)
    if chunk.type == pa.string():
        width: type[np.integer] = np.int32
    elif chunk.type == pa.large_string():
        width = np.int64
    else:
        return None
    if chunk.null_count:
        return None
    offsets_buffer, data = chunk.buffers()[1:3]
    offsets = np.frombuffer(
        offsets_buffer,
        dtype=width,
        count=len(chunk) + 1,
        offset=chunk.offset * np.dtype(width).itemsize,
    )
    return offsets, data if data is not None else b""


def join_values(
    run_query: NDArray[np.int32],
    run_hashes: NDArray[np.uint64],
    truth_code: NDArray[np.int32],
    bits: int,
    sorted_keys: NDArray[np.uint64],
    key_order: NDArray[np.signedinteger[Any]],
    run_docids: pa.ChunkedArray,
    truth_docids: pa.ChunkedArray,
    truth_values: NDArray[np.float64],
) -> NDArray[np.float64] | None:
    """The judged value of each run row (0 where none), joined in C: the run's
    :func:`ranking.io.trec_keys.pair_keys` (query codes ``truth_code[run_query]``, skipped
    when negative; ``bits`` the qrels' query bits) searched in the qrels' ``sorted_keys``,
    every match checked on the document ids. None when the compiled join is not available
    or the ids are not one Arrow chunk each (the numpy join then runs)."""
    scanner = compiled_scanner()
    if scanner is None:
        return None
    run_strings, truth_strings = string_buffers(run_docids), string_buffers(truth_docids)
    if run_strings is None or truth_strings is None:
        return None
    labels = scanner.join(
        np.ascontiguousarray(run_query, dtype=np.int32),
        np.ascontiguousarray(run_hashes, dtype=np.uint64),
        np.ascontiguousarray(truth_code, dtype=np.int32),
        bits,
        np.ascontiguousarray(sorted_keys, dtype=np.uint64),
        np.ascontiguousarray(key_order),
        run_strings[0],
        run_strings[1],
        truth_strings[0],
        truth_strings[1],
        np.ascontiguousarray(truth_values, dtype=np.float64),
    )
    return np.frombuffer(labels, dtype=np.float64)
