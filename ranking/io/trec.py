"""TREC qrels and run files, and the other qrels layouts found in the wild.

* qrels, three layouts (see ``docs/data-formats.md#qrels``):

  - ``trec``: ``<qid> <iteration> <docno> <rel>`` (the iteration column is ignored, as by
    trec_eval);
  - ``3col``: ``<qid> <docno> <rel>`` (Cranfield's ``cranqrel``, many research releases);
  - ``smart-rel``: ``<qid> <docno> 0 0.000000`` (the ``.REL`` files of the classic SMART
    collections CACM, CISI, MED, ...): every listed pair is relevant, the last two columns carry
    nothing. A TREC reading of such a file would take ``0`` for the document of every line.

  :func:`sniff_qrels_layout` tells them apart from the file itself (column count, and whether
  the third and fourth columns are zero on every line); an explicit layout overrides it.
  ``rel`` is an integer, or a float with an integer value (``2.0`` is 2); any other float is an
  error unless a :class:`GradeMap` says what it means. Negative values (e.g. Cranfield's −1)
  are kept and count as non-relevant with zero gain in :mod:`ranking.metrics`.
* run: ``<qid> Q0 <docno> <rank> <score> <tag>`` per line. As trec_eval and gdeval do, the
  **rank column is ignored**: documents are ordered by score (ties then by the chosen tie
  convention; file order for ``ties="stable"``).

Both readers return plain ordered dicts ``{qid: {docno: value}}`` (the layout pytrec_eval and
ranx use), preserving file order, and raise :class:`TrecFormatError` with ``file:line`` for
malformed lines or duplicates (trec_eval also refuses duplicate documents in a run).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "QRELS_LAYOUTS",
    "FileFormatError",
    "GradeMap",
    "Qrels",
    "Run",
    "SniffedLayout",
    "TrecFormatError",
    "parse_grade_map",
    "parse_relevance",
    "parse_run_line",
    "read_qrels",
    "read_qrels_detailed",
    "read_run",
    "sniff_qrels_layout",
    "write_qrels",
    "write_run",
]

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


class FileFormatError(ValueError):
    """A malformed data file. The message starts with ``file:line:`` (``file:`` when no one
    line is at fault); ``path`` and ``line`` (1-based, or None) are kept as attributes.

    The readers of :mod:`ranking.io.trec`, :mod:`ranking.io.letor` and :mod:`ranking.io.topk` raise
    subclasses of it, so callers can catch every format error at once.
    """

    def __init__(self, path: str | Path, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.line = line


class TrecFormatError(FileFormatError):
    """A malformed qrels/run file; the message names the file and line."""


def data_lines(path: Path) -> Iterable[tuple[int, list[str]]]:
    """``(line number, str.split() fields)`` of each line that is neither blank nor a comment
    (first field starting with ``#``); the file is UTF-8, a BOM is skipped."""
    try:
        with path.open(encoding="utf-8-sig") as fh:
            for lineno, raw in enumerate(fh, start=1):
                fields = raw.split()
                if fields and not fields[0].startswith("#"):
                    yield lineno, fields
    except UnicodeDecodeError:
        raise TrecFormatError(path, None, "not UTF-8 text") from None


QrelsLayout = Literal["trec", "3col", "smart-rel"]
QRELS_LAYOUTS: tuple[QrelsLayout, ...] = ("trec", "3col", "smart-rel")
#: What each layout's columns are, for reports and errors.
LAYOUT_TEXT: dict[str, str] = {
    "trec": "TREC 'qid iter docid rel'",
    "3col": "three columns 'qid docid rel'",
    "smart-rel": "SMART .REL 'qid docid 0 0.000000' (every listed pair relevant)",
}
#: Data lines the sniffer looks at; the rest of the file must agree with what it decided.
SNIFF_LINES = 1000


@dataclass(frozen=True, slots=True)
class SniffedLayout:
    """A qrels layout and why it was chosen (printed by the importers and ``evaluate``)."""

    layout: QrelsLayout
    reason: str
    explicit: bool = False

    def describe(self) -> str:
        how = "given" if self.explicit else "detected"
        return f"{LAYOUT_TEXT[self.layout]} ({how}: {self.reason})"


def is_zero_field(text: str) -> bool:
    """True when ``text`` is a number equal to zero (``0``, ``0.000000``)."""
    try:
        return float(text) == 0.0
    except ValueError:
        return False


def sniff_qrels_layout(rows: Sequence[Sequence[str]]) -> SniffedLayout:
    """Decide the layout of a qrels file from its first data lines (split on whitespace).

    Rule: the most common column count of the lines decides (the first line's on a tie); the
    lines with another count are the reader's errors, each on its own line. 3 columns ->
    ``3col``. 4 columns -> ``smart-rel`` when the third and fourth columns are numerically zero
    on every such line (a TREC reading would make ``0`` the document of every line, so each
    query could judge one document only), else ``trec``. Another count raises
    ``ValueError`` with ``index``, the first line (0-based, into ``rows``) having it.
    """
    if not rows:
        raise ValueError("no qrels lines")
    counts = Counter(len(cols) for cols in rows)
    width = max(counts, key=lambda c: (counts[c], c == len(rows[0])))
    if width not in (3, 4):
        index = next(i for i, cols in enumerate(rows) if len(cols) == width)
        raise _LayoutMismatch(index, width)
    if width == 3:
        return SniffedLayout("3col", "3 columns")
    four = [c for c in rows if len(c) == 4]
    if all(is_zero_field(c[2]) and is_zero_field(c[3]) for c in four):
        return SniffedLayout(
            "smart-rel", f"4 columns; columns 3 and 4 are 0 on all {len(four)} lines read"
        )
    return SniffedLayout("trec", "4 columns; column 3 holds the document ids")


class _LayoutMismatch(ValueError):
    def __init__(self, index: int, got: int) -> None:
        self.index = index
        super().__init__(f"expected 3 or 4 fields per line (a qrels layout), got {got}")


def choose_layout(rows: Sequence[Sequence[str]], layout: str = "auto") -> SniffedLayout:
    """``layout="auto"`` sniffs (:func:`sniff_qrels_layout`); a layout name is taken as given.
    Raises ``ValueError`` for an unknown name."""
    if layout == "auto":
        return sniff_qrels_layout(rows)
    if layout not in QRELS_LAYOUTS:
        raise ValueError(
            f"unknown qrels layout {layout!r}; expected auto, {', '.join(QRELS_LAYOUTS)}"
        )
    return SniffedLayout(layout, "--qrels-format", explicit=True)


def layout_columns(layout: QrelsLayout) -> int:
    return 3 if layout == "3col" else 4


def split_qrels_row(cols: Sequence[str], layout: QrelsLayout) -> tuple[str, str, str | None]:
    """``(qid, docid, rel text)`` of one line of ``layout``; ``rel`` is None for
    ``smart-rel`` (every listed pair is relevant). The column count is checked by the caller."""
    if layout == "trec":
        return cols[0], cols[2], cols[3]
    if layout == "3col":
        return cols[0], cols[1], cols[2]
    return cols[0], cols[1], None


@dataclass(frozen=True, slots=True)
class GradeMap:
    """How a qrels value becomes a grade when it is not already an integer the caller takes.

    ``table``: exact value -> grade (e.g. Cranfield's codes); ``threshold``: value >= t -> 1,
    else 0 (binary relevance from a float score). ``name`` is the spec it was parsed from.
    """

    name: str
    table: Mapping[float, int] | None = None
    threshold: float | None = None

    def __call__(self, value: float) -> int:
        if self.threshold is not None:
            return 1 if value >= self.threshold else 0
        assert self.table is not None
        try:
            return self.table[value]
        except KeyError:
            raise ValueError(
                f"relevance {_num(value)} is not in the grade map {self.name!r}"
            ) from None


#: Cranfield's ``cranqrel`` codes (``cranqrel.readme``, Cleverdon): 1 complete answer -> 4 ..
#: 4 minimum interest -> 1; 5 no interest and the one -1 per query -> 0.
CRANFIELD_GRADES: dict[float, int] = {1: 4, 2: 3, 3: 2, 4: 1, 5: 0, -1: 0}


def parse_grade_map(spec: str) -> GradeMap:
    """``cranfield`` | ``threshold:T`` | ``FROM:TO,FROM:TO,...`` (numbers; TO an integer)."""
    text = spec.strip()
    if text == "cranfield":
        return GradeMap("cranfield", table=dict(CRANFIELD_GRADES))
    if text.startswith("threshold:"):
        try:
            return GradeMap(text, threshold=float(text.split(":", 1)[1]))
        except ValueError:
            raise ValueError(f"grade map {spec!r}: threshold is not a number") from None
    table: dict[float, int] = {}
    for part in text.split(","):
        src, sep, dst = part.strip().partition(":")
        try:
            if not sep:
                raise ValueError
            table[float(src)] = int(dst)
        except ValueError:
            raise ValueError(
                f"grade map {spec!r}: expected 'cranfield', 'threshold:T' or 'FROM:TO,...' "
                f"with numbers (TO an integer); bad part {part.strip()!r}"
            ) from None
    return GradeMap(text, table=table)


def _num(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def parse_relevance(text: str, grade_map: GradeMap | None = None) -> int:
    """A qrels relevance value as an integer grade.

    An integer is itself; a float with an integer value (``1.0``, ``0.000000``) is that integer;
    with ``grade_map`` every value goes through the map. Any other value raises ``ValueError``
    with a message that says what to do.
    """
    try:
        value = float(int(text))
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"relevance {text!r} is not a number") from None
        if not math.isfinite(value):
            raise ValueError(f"relevance {text!r} is not a finite number") from None
    if grade_map is not None:
        return grade_map(value)
    if not value.is_integer():
        raise ValueError(
            f"relevance {text!r} is not a whole number; give a grade map "
            "(e.g. --grade-map threshold:0.5 or --grade-map 0.5:1,1.5:2)"
        )
    return int(value)


def read_qrels(
    path: str | Path, *, layout: str = "auto", grade_map: GradeMap | None = None
) -> Qrels:
    """Read a qrels file into ``{qid: {docno: rel}}`` (file order kept); module doc for the
    layouts. ``smart-rel`` lines get relevance 1."""
    return read_qrels_detailed(path, layout=layout, grade_map=grade_map)[0]


def read_qrels_detailed(
    path: str | Path, *, layout: str = "auto", grade_map: GradeMap | None = None
) -> tuple[Qrels, SniffedLayout]:
    """:func:`read_qrels` plus the layout it read (sniffed or given)."""
    p = Path(path)
    lines = iter(data_lines(p))
    head: list[tuple[int, list[str]]] = []
    for item in lines:
        head.append(item)
        if len(head) >= SNIFF_LINES:
            break
    if not head:
        raise TrecFormatError(p, None, "no qrels lines")
    try:
        chosen = choose_layout([f for _, f in head], layout)
    except _LayoutMismatch as exc:
        raise TrecFormatError(p, head[exc.index][0], str(exc)) from None
    except ValueError as exc:
        raise TrecFormatError(p, None, str(exc)) from None
    width = layout_columns(chosen.layout)
    qrels: Qrels = {}
    seen: dict[tuple[str, str], int] = {}
    for lineno, f in itertools.chain(head, lines):
        if len(f) != width:
            raise TrecFormatError(
                p, lineno, f"expected {width} fields ({LAYOUT_TEXT[chosen.layout]}), got {len(f)}"
            )
        qid, doc, rel_s = split_qrels_row(f, chosen.layout)
        if rel_s is None:
            if not (is_zero_field(f[2]) and is_zero_field(f[3])):
                raise TrecFormatError(
                    p,
                    lineno,
                    f"columns 3 and 4 are {f[2]!r} {f[3]!r}, not 0 as in the rest of this "
                    "SMART .REL file (give --qrels-format trec if it is TREC qrels)",
                )
            rel = 1
        else:
            try:
                rel = parse_relevance(rel_s, grade_map)
            except ValueError as exc:
                raise TrecFormatError(p, lineno, str(exc)) from None
        if (qid, doc) in seen:
            raise TrecFormatError(
                p, lineno, f"document {doc} of query {qid} already judged on line {seen[qid, doc]}"
            )
        seen[qid, doc] = lineno
        qrels.setdefault(qid, {})[doc] = rel
    return qrels, chosen


def read_run(path: str | Path, *, with_tag: bool = False) -> Run | tuple[Run, str]:
    """Read a TREC run into ``{qid: {docno: score}}``; the rank column is ignored.

    With ``with_tag=True`` also return the run tag (the last column of the first line).
    """
    p = Path(path)
    run: Run = {}
    seen: dict[tuple[str, str], int] = {}
    tag = ""
    for lineno, f in data_lines(p):
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


#: A strict run line's fields: ``(qid, docno, rank, score, tag)``.
RunLine = tuple[str, str, int, float, str]


def parse_run_line(text: str) -> RunLine | None:
    """One line of a TREC run read strictly, for the readers that store it (the service's
    uploads, ``labeling.study.pools.parse_trec_run``): None for a blank line or a comment (its
    first field starts with ``#``), else ``(qid, docno, rank, score, tag)``.

    ``ValueError`` (its message is the line's report) unless the line has six columns, an
    integer rank and a finite score: a store keeps neither NaN (it cannot be ordered) nor an
    infinity (``1e999999`` reads as one). :func:`read_run`, trec_eval's reading, ignores the
    rank column and takes any score that is not NaN."""
    cols = text.split()
    if not cols or cols[0].startswith("#"):
        return None
    if len(cols) != 6:
        raise ValueError(f"expected 6 columns 'qid Q0 docno rank score tag', got {len(cols)}")
    qid, _q0, doc, rank_s, score_s, tag = cols
    try:
        rank = int(rank_s)
    except ValueError:
        raise ValueError(f"rank {rank_s!r} is not an integer") from None
    try:
        score = float(score_s)
    except ValueError:
        raise ValueError(f"score {score_s!r} is not a number") from None
    if score != score:
        raise ValueError("score is NaN")
    if not math.isfinite(score):
        raise ValueError(f"score {score_s!r} is not finite")
    return qid, doc, rank, score, tag


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
