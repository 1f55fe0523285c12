"""Readers of trec_eval's text inputs: qrels, a run (``trec_results``), a Z-score file.

Every reader follows trec_eval 10.0's splitting rules (fields separated by C ``isspace``
characters, the bytes ``\\t\\n\\v\\f\\r`` and space; a ``#`` in the first column starts a
comment line; a run's blank lines are skipped, a qrels' are not) and returns columns as numpy
arrays, so the merge stays vectorised.

Strictness: trec_eval converts numbers with ``atol``/``atof``, which read the longest valid
prefix and turn anything else into 0, so ``1.5`` is grade 1 and ``high`` grade 0 without a
word. By default heapjudge refuses such a line with ``file:line: what was expected`` (exit
status 2, nothing printed); ``lenient=True`` (the ``--lenient`` flag) converts the way
trec_eval does.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ranking.trec_eval.c_numbers import c_atof, c_atol
from ranking.trec_eval.errors import TrecEvalError

__all__ = [
    "QrelsColumns",
    "RunColumns",
    "c_atof",
    "c_atol",
    "is_decimal",
    "read_bytes",
    "read_qrels",
    "read_run",
    "read_zscores",
    "split_lines",
]

_STRICT_INT = re.compile(rb"[+-]?\d+\Z")
_STRICT_FLOAT = re.compile(rb"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")


def is_decimal(text: bytes) -> bool:
    """Whether ``text`` is a plain decimal number (what the strict readers accept)."""
    return _STRICT_FLOAT.match(text) is not None


@dataclass(frozen=True)
class QrelsColumns:
    """One row per judgment line: query, document (bytes, compared as C ``strcmp`` does),
    grade, and the line number for errors."""

    qid: NDArray[np.bytes_]
    doc: NDArray[np.bytes_]
    rel: NDArray[np.int64]
    line: NDArray[np.int64]


@dataclass(frozen=True)
class RunColumns:
    """One row per run line: query, document, score; ``runid`` is the last line's tag
    (trec_eval keeps only that one)."""

    qid: NDArray[np.bytes_]
    doc: NDArray[np.bytes_]
    sim: NDArray[np.float64]
    line: NDArray[np.int64]
    runid: str


def read_bytes(path: str, what: str) -> bytes:
    """The whole file (standard input for ``-``); an empty or unreadable file is an error,
    as in trec_eval."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as handle:
                data = handle.read()
    except OSError as error:
        raise TrecEvalError(
            f"trec_eval: Cannot read {what} file '{path}': {error.strerror}"
        ) from None
    if not data:
        raise TrecEvalError(f"trec_eval: Cannot read {what} file '{path}': it is empty")
    return data


def split_lines(data: bytes, *, skip_blank: bool) -> list[tuple[int, list[bytes]]]:
    """``(line number, fields)`` of each data line; ``#`` lines skipped (a run also skips
    them after leading blanks, and skips blank lines)."""
    rows: list[tuple[int, list[bytes]]] = []
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()  # the text after the final newline is no line
    for number, line in enumerate(lines, start=1):
        if line.startswith(b"#"):
            continue
        fields = line.split()
        if skip_blank and (not fields or fields[0].startswith(b"#")):
            continue
        rows.append((number, fields))
    return rows


def _bad(path: str, number: int, expected: str, got: list[bytes]) -> TrecEvalError:
    text = b" ".join(got).decode("utf-8", "replace")
    return TrecEvalError(f"{path}:{number}: expected {expected}, got '{text}'")


def _decimal(
    path: str, number: int, fields: list[bytes], index: int, what: str, lenient: bool
) -> float:
    """Field ``index`` as a decimal number (``atof`` with ``lenient``), else the error naming
    the line, the field and ``what`` it holds."""
    text = fields[index]
    if _STRICT_FLOAT.match(text):
        return float(text)
    if lenient:
        return c_atof(text)
    raise _bad(path, number, f"a decimal {what} in field {index + 1}", fields)


def _rel(path: str, number: int, field: bytes, lenient: bool, fields: list[bytes]) -> int:
    if _STRICT_INT.match(field):
        return int(field)
    if lenient:
        return c_atol(field)
    raise _bad(path, number, "an integer relevance grade in field 4", fields)


def read_qrels(path: str, *, lenient: bool = False, data: bytes | None = None) -> QrelsColumns:
    """``qid iter docno rel`` lines (trec_eval's ``qrels`` format)."""
    data = read_bytes(path, "qrels") if data is None else data
    qids: list[bytes] = []
    docs: list[bytes] = []
    rels: list[int] = []
    lines: list[int] = []
    for number, fields in split_lines(data, skip_blank=False):
        if len(fields) != 4:
            raise _bad(path, number, "4 fields 'qid iter docno rel'", fields)
        qids.append(fields[0])
        docs.append(fields[2])
        rels.append(_rel(path, number, fields[3], lenient, fields))
        lines.append(number)
    if not qids:
        raise TrecEvalError(f"trec_eval: Cannot read qrels file '{path}': no judgments")
    return QrelsColumns(
        np.array(qids, dtype=np.bytes_),
        np.array(docs, dtype=np.bytes_),
        np.array(rels, dtype=np.int64),
        np.array(lines, dtype=np.int64),
    )


def _sim(path: str, number: int, field: bytes, lenient: bool, fields: list[bytes]) -> float:
    if _STRICT_FLOAT.match(field):
        return float(field)
    if lenient:
        return c_atof(field)
    raise _bad(path, number, "a decimal score in field 5", fields)


def read_run(path: str, *, lenient: bool = False, data: bytes | None = None) -> RunColumns:
    """``qid iter docno rank sim run_id`` lines; fields after the sixth are ignored, as
    trec_eval documents."""
    data = read_bytes(path, "results") if data is None else data
    qids: list[bytes] = []
    docs: list[bytes] = []
    sims: list[float] = []
    lines: list[int] = []
    runid = b""
    for number, fields in split_lines(data, skip_blank=True):
        if len(fields) < 6:
            raise _bad(path, number, "6 fields 'qid iter docno rank sim run_id'", fields)
        qids.append(fields[0])
        docs.append(fields[2])
        sims.append(_sim(path, number, fields[4], lenient, fields))
        lines.append(number)
        runid = fields[5]
    if not qids:
        raise TrecEvalError(f"trec_eval: Cannot read results file '{path}': no results")
    return RunColumns(
        np.array(qids, dtype=np.bytes_),
        np.array(docs, dtype=np.bytes_),
        np.array(sims, dtype=np.float64),
        np.array(lines, dtype=np.int64),
        runid.decode("utf-8", "surrogateescape"),
    )


def read_zscores(path: str, *, lenient: bool = False) -> dict[tuple[str, str], tuple[float, float]]:
    """``qid measure mean stddev`` lines (``-Z``): ``{(qid, measure): (mean, stddev)}``."""
    data = read_bytes(path, "zscores")
    table: dict[tuple[str, str], tuple[float, float]] = {}
    for number, fields in split_lines(data, skip_blank=False):
        if len(fields) != 4:
            raise _bad(path, number, "4 fields 'qid measure mean stddev'", fields)
        mean = _decimal(path, number, fields, 2, "mean", lenient)
        std = _decimal(path, number, fields, 3, "stddev", lenient)
        key = (
            fields[0].decode("utf-8", "surrogateescape"),
            fields[1].decode("utf-8", "surrogateescape"),
        )
        table[key] = (mean, std)
    return table
