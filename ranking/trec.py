"""TREC qrels and run files.

* qrels: ``<qid> <iteration> <docno> <rel>`` per line (whitespace-separated; the iteration
  column is ignored, as by trec_eval). ``rel`` is an integer grade; negative values (e.g.
  Cranfield's −1) are kept and count as non-relevant with zero gain in :mod:`ranking.metrics`.
* run: ``<qid> Q0 <docno> <rank> <score> <tag>`` per line. As trec_eval and gdeval do, the
  **rank column is ignored**: documents are ordered by score (ties then by the chosen tie
  convention; file order for ``ties="stable"``).

Both readers return plain ordered dicts ``{qid: {docno: value}}`` (the layout pytrec_eval and
ranx use), preserving file order, and raise :class:`TrecFormatError` with ``file:line`` for
malformed lines or duplicates (trec_eval also refuses duplicate documents in a run).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = [
    "FileFormatError",
    "Qrels",
    "Run",
    "TrecFormatError",
    "read_qrels",
    "read_run",
    "write_qrels",
    "write_run",
]

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


class FileFormatError(ValueError):
    """A malformed data file. The message starts with ``file:line:`` (``file:`` when no one
    line is at fault); ``path`` and ``line`` (1-based, or None) are kept as attributes.

    The readers of :mod:`ranking.trec`, :mod:`ranking.letor` and :mod:`ranking.topk_io` raise
    subclasses of it, so callers can catch every format error at once.
    """

    def __init__(self, path: str | Path, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.line = line


class TrecFormatError(FileFormatError):
    """A malformed qrels/run file; the message names the file and line."""


def _lines(path: Path) -> Iterable[tuple[int, list[str]]]:
    try:
        with path.open(encoding="utf-8-sig") as fh:
            for lineno, raw in enumerate(fh, start=1):
                fields = raw.split()
                if fields and not fields[0].startswith("#"):
                    yield lineno, fields
    except UnicodeDecodeError:
        raise TrecFormatError(path, None, "not UTF-8 text") from None


def read_qrels(path: str | Path) -> Qrels:
    """Read a TREC qrels file into ``{qid: {docno: rel}}`` (file order kept)."""
    p = Path(path)
    qrels: Qrels = {}
    seen: dict[tuple[str, str], int] = {}
    for lineno, f in _lines(p):
        if len(f) != 4:
            raise TrecFormatError(
                p, lineno, f"expected 4 fields 'qid iter docno rel', got {len(f)}"
            )
        qid, _, doc, rel_s = f
        try:
            rel = int(rel_s)
        except ValueError:
            raise TrecFormatError(p, lineno, f"relevance {rel_s!r} is not an integer") from None
        if (qid, doc) in seen:
            raise TrecFormatError(
                p, lineno, f"document {doc} of query {qid} already judged on line {seen[qid, doc]}"
            )
        seen[qid, doc] = lineno
        qrels.setdefault(qid, {})[doc] = rel
    return qrels


def read_run(path: str | Path, *, with_tag: bool = False) -> Run | tuple[Run, str]:
    """Read a TREC run into ``{qid: {docno: score}}``; the rank column is ignored.

    With ``with_tag=True`` also return the run tag (the last column of the first line).
    """
    p = Path(path)
    run: Run = {}
    seen: dict[tuple[str, str], int] = {}
    tag = ""
    for lineno, f in _lines(p):
        if len(f) != 6:
            raise TrecFormatError(
                p, lineno, f"expected 6 fields 'qid Q0 docno rank score tag', got {len(f)}"
            )
        qid, _, doc, _rank, score_s, run_tag = f
        try:
            score = float(score_s)
        except ValueError:
            raise TrecFormatError(p, lineno, f"score {score_s!r} is not a number") from None
        if math.isnan(score):
            raise TrecFormatError(p, lineno, "score is NaN")
        if (qid, doc) in seen:
            raise TrecFormatError(
                p,
                lineno,
                f"document {doc} listed twice for query {qid} (first on line {seen[qid, doc]})",
            )
        seen[qid, doc] = lineno
        tag = tag or run_tag
        run.setdefault(qid, {})[doc] = score
    return (run, tag) if with_tag else run


def write_qrels(path: str | Path, qrels: Mapping[str, Mapping[str, int]]) -> None:
    """Write ``{qid: {docno: rel}}`` as ``qid 0 docno rel`` lines."""
    lines = [f"{q} 0 {d} {int(r)}" for q, docs in qrels.items() for d, r in docs.items()]
    Path(path).write_text("".join(f"{ln}\n" for ln in lines), encoding="utf-8")


def write_run(
    path: str | Path, run: Mapping[str, Mapping[str, float]], *, tag: str = "heapjudge"
) -> None:
    """Write ``{qid: {docno: score}}`` as a TREC run, ranks 1.. by descending score (ties in
    the mapping's order). Scores are written with ``repr`` so they read back exactly."""
    if not tag or any(c.isspace() for c in tag):
        raise ValueError(f"run tag must be a non-empty word, got {tag!r}")
    out: list[str] = []
    for q, docs in run.items():
        ranked = sorted(docs.items(), key=lambda kv: -kv[1])  # sorted() is stable
        out.extend(
            f"{q} Q0 {d} {i} {float(s)!r} {tag}\n" for i, (d, s) in enumerate(ranked, start=1)
        )
    Path(path).write_text("".join(out), encoding="utf-8")
