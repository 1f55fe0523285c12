"""LETOR / SVMlight ranking files and LightGBM group files.

Line format (LETOR 3.0/4.0, MSLR, RankLib, SVMrank)::

    <label> qid:<qid> <fid>:<value> <fid>:<value> ... [# comment]

* ``label``: the relevance grade (a number; integer in every public data set).
* ``qid:``: the query id, kept as a string (``"10002"``). Rows of a query must be contiguous.
  LightGBM's files have no ``qid:``; their query boundaries come from a group file
  (``train.txt.query`` / ``.group``: one line per query with its number of rows), see
  :func:`read_group_file`. Such queries are named ``"1"``, ``"2"``, ... in file order.
* ``fid:value``: 1-based feature ids, sparse (missing = 0) or dense (all present, as LETOR).
* ``# comment``: kept verbatim per row (LETOR 4.0: ``docid = GX... inc = 1 prob = 0.02``); the
  ``docid = X`` field, when present, is the row's document id.

:func:`read_letor` is vectorised: the numeric part of the whole file is parsed by one
``numpy.fromstring`` call, so all of MQ2008 (15,211 rows x 46 features) reads in about a tenth
of a second. On malformed input it re-scans line by line to report ``file:line: what``.
:func:`write_letor` writes floats with ``repr`` (shortest round-trip form), so a write-read
round trip is lossless.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ranking.io.trec import FileFormatError
from ranking.padding import offsets_from_qids, offsets_from_sizes, pad_groups

__all__ = [
    "LetorData",
    "LetorFormatError",
    "concat",
    "read_group_file",
    "read_letor",
    "write_group_file",
    "write_letor",
]

_DOCID = re.compile(r"docid\s*=\s*(\S+)")
_TWO_COLONS = re.compile(r":[^\s\x00]*:")


class LetorFormatError(FileFormatError):
    """A malformed ranking/group file; the message names the file and the line."""


@dataclass
class LetorData:
    """A query-grouped ranking data set (rows contiguous per query).

    Attributes
    ----------
    labels : (N,) float64
    qids : (N,) str, the query id of every row
    features : (N, d) float64 (missing sparse entries are 0); d = the largest feature id
        (or ``n_features`` given to the reader)
    offsets : (Q + 1,) int64 query boundaries (see :mod:`ranking.padding`)
    comments : (N,) str, the text after ``#`` without the ``#`` (``""`` if none)
    docids : (N,) str, from ``docid = X`` in the comment, else ``"<qid>:<row in query>"``
    sparse : whether the file listed only some features per row (then the writer writes
        only the non-zero ones)
    """

    labels: NDArray[np.float64]
    qids: NDArray[np.str_]
    features: NDArray[np.float64]
    offsets: NDArray[np.int64]
    comments: NDArray[np.str_]
    docids: NDArray[np.str_]
    sparse: bool = False
    has_qid: bool = True
    source: str = ""

    @property
    def n_rows(self) -> int:
        return int(self.labels.shape[0])

    @property
    def n_queries(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def n_features(self) -> int:
        return int(self.features.shape[1])

    @property
    def query_ids(self) -> NDArray[np.str_]:
        """(Q,) query ids in file order."""
        return self.qids[self.offsets[:-1]]

    @property
    def group_sizes(self) -> NDArray[np.int64]:
        """(Q,) rows per query (a LightGBM group file's content)."""
        return np.diff(self.offsets)

    def padded(self, values: ArrayLike | None = None, fill: float = 0.0) -> tuple[Any, Any]:
        """``(padded (Q, L), mask)`` of ``values`` (N,) (default: the labels)."""
        v = self.labels if values is None else np.asarray(values)
        if v.shape[0] != self.n_rows:
            raise ValueError(f"values have {v.shape[0]} rows, the data set has {self.n_rows}")
        return pad_groups(v, self.offsets, fill)

    def subset(self, queries: Sequence[int]) -> LetorData:
        """The data set restricted to the given query indices (in that order)."""
        idx = np.concatenate(
            [np.arange(self.offsets[q], self.offsets[q + 1]) for q in queries]
            or [np.zeros(0, dtype=np.int64)]
        )
        sizes = self.group_sizes[list(queries)] if len(queries) else np.zeros(0, np.int64)
        return LetorData(
            labels=self.labels[idx],
            qids=self.qids[idx],
            features=self.features[idx],
            offsets=offsets_from_sizes(sizes),
            comments=self.comments[idx],
            docids=self.docids[idx],
            sparse=self.sparse,
            has_qid=self.has_qid,
            source=self.source,
        )


def concat(parts: Sequence[LetorData]) -> LetorData:
    """Rows of several data sets one after another (e.g. LETOR partitions into a fold).

    The feature width is the largest of the parts. A query id present in two parts is an
    error, because the rows would no longer be one contiguous block per query.
    """
    if not parts:
        raise ValueError("concat needs at least one data set")
    width = max(p.n_features for p in parts)
    feats = [
        np.pad(p.features, ((0, 0), (0, width - p.n_features)))
        if p.n_features < width
        else p.features
        for p in parts
    ]
    qids = np.concatenate([p.qids for p in parts])
    sizes = np.concatenate([p.group_sizes for p in parts])
    firsts = np.concatenate([p.query_ids for p in parts])
    uniq, counts = np.unique(firsts, return_counts=True)
    if (counts > 1).any():
        dup = uniq[counts > 1][0]
        raise ValueError(f"query {dup} appears in more than one of the data sets being joined")
    return LetorData(
        labels=np.concatenate([p.labels for p in parts]),
        qids=qids,
        features=np.concatenate(feats, axis=0),
        offsets=offsets_from_sizes(sizes),
        comments=np.concatenate([p.comments for p in parts]),
        docids=np.concatenate([p.docids for p in parts]),
        sparse=any(p.sparse for p in parts),
        has_qid=all(p.has_qid for p in parts),
        source="+".join(p.source for p in parts),
    )


# --------------------------------------------------------------------------------------------
# group files
# --------------------------------------------------------------------------------------------


def read_group_file(path: str | Path) -> NDArray[np.int64]:
    """LightGBM/XGBoost group file: one positive integer (rows of a query) per line."""
    p = Path(path)
    sizes: list[int] = []
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LetorFormatError(p, text_line_of_offset(p, exc.start), "not UTF-8 text") from None
    for lineno, raw in enumerate(text.split("\n"), start=1):
        count = raw.strip()
        if not count:
            continue
        if not count.isdigit() or int(count) < 1:
            raise LetorFormatError(p, lineno, f"expected a positive row count, got {count!r}")
        sizes.append(int(count))
    return np.asarray(sizes, dtype=np.int64)


def write_group_file(path: str | Path, sizes: ArrayLike) -> None:
    """Write group sizes, one per line."""
    s = np.asarray(sizes)
    Path(path).write_text("".join(f"{int(n)}\n" for n in s), encoding="utf-8")


# --------------------------------------------------------------------------------------------
# reader
# --------------------------------------------------------------------------------------------


def _parse_pairs(text_lines: list[str]) -> tuple[NDArray[np.float64], NDArray[np.float64], Any]:
    """Parse the ``fid:value`` part of each line; returns ``(fids, values, pairs_per_line)``.

    One ``numpy.fromstring`` call parses the numbers of all lines (C speed; it produces the
    same doubles as ``float``). Raises ValueError on anything malformed, and the caller then
    re-scans line by line to say where.
    """
    n = len(text_lines)
    per_line = np.fromiter((f.count(":") for f in text_lines), dtype=np.int64, count=n)
    tokens = np.fromiter((len(f.split()) for f in text_lines), dtype=np.int64, count=n)
    if (per_line != tokens).any():  # with the regex below: exactly one ':' per token
        raise ValueError("token without exactly one ':'")
    joined = "\x00".join(text_lines)  # NUL: a line separator that cannot occur in the text
    if _TWO_COLONS.search(joined):
        raise ValueError("token with more than one ':'")
    if n and per_line.min() == per_line.max() > 0:
        # Dense file (every row lists the same number of features, as LETOR does): numpy's C
        # text parser reads the (N, 2p) matrix about twice as fast as fromstring.
        try:
            table = np.loadtxt(joined.replace(":", " ").split("\x00"), dtype=np.float64, ndmin=2)
        except ValueError as exc:
            raise ValueError(str(exc)) from None
        flat = table.reshape(-1)
    else:
        text = joined.replace(":", " ").replace("\x00", " ")
        with warnings.catch_warnings():
            # fromstring warns (DeprecationWarning) and stops early on unparsable text
            warnings.simplefilter("error")
            try:
                flat = np.fromstring(text, sep=" ") if text.strip() else np.zeros(0)
            except DeprecationWarning as exc:
                raise ValueError(str(exc)) from None
    if flat.size != 2 * int(per_line.sum()):
        raise ValueError("a token is not <fid>:<value>")
    vals = flat[1::2]
    if not np.isfinite(vals).all():
        raise ValueError("non-finite value")
    return flat[0::2], vals, per_line


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")


def _find_bad_line(
    path: Path, lines: list[str], linenos: list[int], has_qid: bool
) -> LetorFormatError:
    """Slow exact scan used only after the vectorised parse found something wrong."""
    for lineno, line in zip(linenos, lines, strict=True):
        body = line.partition("#")[0]
        toks = body.split()
        if not toks:
            return LetorFormatError(path, lineno, "no label before the comment")
        if toks[0].count(":") or not np.isfinite(_number(toks[0])):
            return LetorFormatError(path, lineno, f"label {toks[0]!r} is not a number")
        rest = toks[1:]
        if has_qid:
            if not rest or not rest[0].startswith("qid:") or len(rest[0]) == 4:
                return LetorFormatError(path, lineno, "second field must be qid:<id>")
            rest = rest[1:]
        elif rest and rest[0].startswith("qid:"):
            return LetorFormatError(path, lineno, "qid: on some rows but not on the first row")
        seen: set[int] = set()
        for tok in rest:
            fid_s, colon, val_s = tok.partition(":")
            if not colon or not fid_s.isdigit() or int(fid_s) < 1:
                return LetorFormatError(path, lineno, f"feature {tok!r} is not <fid>:<value>")
            if ":" in val_s or not np.isfinite(_number(val_s)):
                return LetorFormatError(path, lineno, f"feature {tok!r} has a bad value")
            if int(fid_s) in seen:
                return LetorFormatError(path, lineno, f"feature id {fid_s} appears twice")
            seen.add(int(fid_s))
    return LetorFormatError(path, None, "malformed content (could not locate the line)")


def read_letor(
    path: str | Path,
    *,
    n_features: int | None = None,
    group_file: str | Path | None = None,
) -> LetorData:
    """Read a LETOR/SVMlight ranking file (see the module docstring for the format).

    ``n_features`` fixes the feature width (default: the largest feature id in the file).
    ``group_file`` gives query boundaries for files without ``qid:`` (default: look for
    ``<path>.query`` then ``<path>.group``). Raises :class:`LetorFormatError` naming the file
    and line for malformed rows, non-contiguous queries or a group file that does not add up.
    """
    p = Path(path)
    lines, linenos = _data_rows(p)
    rows, features, sparse = _parse_blocks(p, lines, linenos, n_features)
    if rows.has_qid:
        qids, offsets = _offsets_from_qid_column(p, rows.qids, linenos)
    else:
        qids, offsets = _offsets_from_group_file(p, group_file, len(lines), linenos[0])
    return LetorData(
        labels=rows.labels,
        qids=qids,
        features=features,
        offsets=offsets,
        comments=rows.comments,
        docids=_docids(rows.comments, qids, offsets),
        sparse=sparse,
        has_qid=rows.has_qid,
        source=str(p),
    )


#: Rows parsed at once: the parse's temporaries (tokens, flat pairs, row and column indexes:
#: several times the block's text) stay this size, whatever the file's (docs/performance.md).
BLOCK_ROWS = 8192


def _parse_blocks(
    p: Path, lines: list[str], linenos: list[int], n_features: int | None
) -> tuple[_Rows, NDArray[np.float64], bool]:
    """:func:`_parse_rows` and :func:`_feature_matrix` of the rows, :data:`BLOCK_ROWS` at a
    time: the rows' labels, qids and comments (``fids``/``values`` left empty), the dense
    feature matrix (width: ``n_features``, else the largest feature id) and whether any row
    left a feature out."""
    parts: list[_Rows] = []
    blocks: list[tuple[NDArray[np.float64], bool]] = []
    for start in range(0, len(lines), BLOCK_ROWS):
        block, numbers = lines[start : start + BLOCK_ROWS], linenos[start : start + BLOCK_ROWS]
        rows = _parse_rows(p, block, numbers)
        if parts and rows.has_qid != parts[0].has_qid:  # qid: on some rows only
            raise _find_bad_line(p, lines, linenos, parts[0].has_qid)
        blocks.append(_feature_matrix(p, rows, block, numbers, n_features))
        parts.append(replace(rows, fids=_EMPTY, values=_EMPTY))
    width = max(f.shape[1] for f, _ in blocks) if n_features is None else int(n_features)
    sparse = any(s or f.shape[1] < width for f, s in blocks)
    features = np.zeros((len(lines), width), dtype=np.float64)
    at = 0
    blocks.reverse()
    while blocks:  # each block freed once copied: the matrix is not held twice
        f, _ = blocks.pop()
        features[at : at + f.shape[0], : f.shape[1]] = f
        at += f.shape[0]
    rows = _Rows(
        labels=np.concatenate([r.labels for r in parts]),
        has_qid=parts[0].has_qid,
        qids=[q for r in parts for q in r.qids],
        fids=_EMPTY,
        values=_EMPTY,
        per_row=np.concatenate([r.per_row for r in parts]),
        comments=np.concatenate([r.comments for r in parts]),
    )
    return rows, features, sparse


_EMPTY = np.zeros(0)


def _data_rows(p: Path) -> tuple[list[str], list[int]]:
    """The data rows of the file and their 1-based line numbers (blank lines and whole-line
    comments skipped)."""
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LetorFormatError(p, text_line_of_offset(p, exc.start), "not UTF-8 text") from None
    # Only "\n" ends a row (a trailing "\r" is whitespace below): str.splitlines would also
    # break at form feeds, U+001C..U+001E or U+2028 inside a comment and shift line numbers.
    raw_lines = text.split("\n")
    linenos = [
        i
        for i, ln in enumerate(raw_lines, start=1)
        if ln.strip() and not ln.lstrip().startswith("#")
    ]
    if not linenos:
        raise LetorFormatError(p, None, "no data rows")
    return [raw_lines[i - 1] for i in linenos], linenos


@dataclass(frozen=True)
class _Rows:
    """The parsed columns of the data rows: labels, qid strings (empty without ``qid:``),
    the ``fid:value`` pairs flattened with their count per row, and the comments."""

    labels: NDArray[np.float64]
    has_qid: bool
    qids: list[str]
    fids: NDArray[np.float64]
    values: NDArray[np.float64]
    per_row: NDArray[np.int64]
    comments: NDArray[np.str_]


def _parse_rows(p: Path, lines: list[str], linenos: list[int]) -> _Rows:
    """Parse every row at once; on any malformed row, re-scan to name its line."""
    parts = [ln.partition("#") for ln in lines]
    comments = np.array([c.strip() for _, _, c in parts], dtype=str)
    heads = [b.split(None, 2) for b, _, _ in parts]
    has_qid = len(heads[0]) > 1 and heads[0][1].startswith("qid:")
    try:
        if has_qid:
            if any(len(h) < 2 or not h[1].startswith("qid:") for h in heads):
                raise ValueError
            qid_list = [h[1][4:] for h in heads]
            feats_txt = [h[2] if len(h) > 2 else "" for h in heads]
        else:
            qid_list = []
            feats_txt = [" ".join(h[1:]) for h in heads]
        labels = np.array([h[0] for h in heads], dtype=np.float64)
        if not np.isfinite(labels).all():
            raise ValueError
        fids, vals, per_row = _parse_pairs(feats_txt)
        if fids.size and ((fids < 1).any() or (fids != np.floor(fids)).any()):
            raise ValueError
        if any(":" in q or not q for q in qid_list):
            raise ValueError
    except ValueError:
        raise _find_bad_line(p, lines, linenos, has_qid) from None
    return _Rows(labels, has_qid, qid_list, fids, vals, per_row, comments)


def _feature_matrix(
    p: Path, rows: _Rows, lines: list[str], linenos: list[int], n_features: int | None
) -> tuple[NDArray[np.float64], bool]:
    """The dense ``(N, d)`` feature matrix and whether any row left a feature out."""
    n = len(lines)
    row_of = np.repeat(np.arange(n), rows.per_row)
    cols = rows.fids.astype(np.int64) - 1
    width = int(cols.max()) + 1 if cols.size else 0
    if n_features is not None:
        if width > n_features:
            bad = int(row_of[np.argmax(cols >= n_features)])
            raise LetorFormatError(p, linenos[bad], f"feature id above n_features={n_features}")
        width = int(n_features)
    # Feature ids are almost always ascending within a row, which rules out duplicates in
    # one pass; otherwise sort the (row, fid) keys (np.unique is much slower here).
    same_row = row_of[1:] == row_of[:-1]
    if (np.diff(cols)[same_row] <= 0).any():
        key = np.sort(row_of * max(width, 1) + cols)
        if (np.diff(key) == 0).any():
            raise _find_bad_line(p, lines, linenos, rows.has_qid)
    features = np.zeros((n, width), dtype=np.float64)
    features[row_of, cols] = rows.values
    return features, bool((rows.per_row != width).any())


def _offsets_from_qid_column(
    p: Path, qid_list: list[str], linenos: list[int]
) -> tuple[NDArray[np.str_], NDArray[np.int64]]:
    """Query ids and boundaries from the ``qid:`` column; names the first row that re-opens
    an earlier query."""
    qids = np.array(qid_list, dtype=str)
    try:
        return qids, offsets_from_qids(qids)
    except ValueError as exc:
        first_seen: dict[str, int] = {}
        for i, q in enumerate(qid_list):
            if q in first_seen and qid_list[i - 1] != q:
                raise LetorFormatError(
                    p,
                    linenos[i],
                    f"query {q} continues here after other queries (first seen on line "
                    f"{linenos[first_seen[q]]}); rows must be grouped by query",
                ) from None
            first_seen.setdefault(q, i)
        raise LetorFormatError(p, None, str(exc)) from None


def _offsets_from_group_file(
    p: Path, group_file: str | Path | None, n: int, first_line: int
) -> tuple[NDArray[np.str_], NDArray[np.int64]]:
    """Query ids ``1..Q`` and boundaries from the group file (given, or ``<path>.query`` /
    ``<path>.group`` next to the data)."""
    gpath = Path(group_file) if group_file is not None else None
    if gpath is None:
        for suffix in (".query", ".group"):
            cand = p.with_name(p.name + suffix)
            if cand.exists():
                gpath = cand
                break
    if gpath is None:
        raise LetorFormatError(
            p, first_line, "rows have no qid: and no group file (.query/.group) was found"
        )
    sizes = read_group_file(gpath)
    if int(sizes.sum()) != n:
        raise LetorFormatError(
            gpath, None, f"group sizes add up to {int(sizes.sum())} rows but {p} has {n}"
        )
    qids = np.repeat(np.array([str(i) for i in range(1, sizes.size + 1)]), sizes)
    return qids, offsets_from_sizes(sizes)


def text_line_of_offset(path: Path, byte_offset: int) -> int:
    """1-based line number of a byte offset (for decoding errors)."""
    with path.open("rb") as fh:
        return fh.read(byte_offset).count(b"\n") + 1


def _docid_of(comment: str) -> str | None:
    """The ``docid = X`` value of a comment (str methods: much faster than a regex here)."""
    if comment.startswith("docid"):
        rest = comment[5:].lstrip()
        if rest.startswith("="):
            value = rest[1:].split(None, 1)
            return value[0] if value else None
    m = _DOCID.search(comment)
    return m.group(1) if m else None


def _docids(
    comments: NDArray[np.str_], qids: NDArray[np.str_], offsets: NDArray[np.int64]
) -> NDArray[np.str_]:
    found = [_docid_of(c) for c in comments.tolist()]
    if all(d is not None for d in found):
        return np.array(found, dtype=str)
    # Fall back to "<qid>:<position in query>" so every row still has a unique name.
    pos = np.arange(qids.size) - np.repeat(offsets[:-1], np.diff(offsets))
    return np.array(
        [d if d is not None else f"{q}:{j}" for d, q, j in zip(found, qids, pos, strict=True)],
        dtype=str,
    )


# --------------------------------------------------------------------------------------------
# writer
# --------------------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    """Shortest text that reads back to the same float; integers without '.0'."""
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(x)


def write_letor(
    path: str | Path,
    data: LetorData,
    *,
    sparse: bool | None = None,
    write_qid: bool | None = None,
    group_file: str | Path | None = None,
) -> None:
    """Write ``data`` in LETOR format (inverse of :func:`read_letor`, lossless).

    ``sparse`` (default: as read) writes only non-zero features. ``write_qid`` (default: as
    read) writes ``qid:``; without it, pass ``group_file`` to write the query sizes too.
    Comments are written back after ``#``.
    """
    sp = data.sparse if sparse is None else sparse
    wq = data.has_qid if write_qid is None else write_qid
    out: list[str] = []
    width = data.n_features
    fid_names = [str(i + 1) for i in range(width)]
    for i in range(data.n_rows):
        row = data.features[i]
        parts = [_fmt(float(data.labels[i]))]
        if wq:
            parts.append(f"qid:{data.qids[i]}")
        if sp:
            nz = np.flatnonzero(row)
            parts.extend(f"{fid_names[j]}:{_fmt(float(row[j]))}" for j in nz)
        else:
            parts.extend(f"{fid_names[j]}:{_fmt(float(v))}" for j, v in enumerate(row.tolist()))
        line = " ".join(parts)
        if data.comments[i]:
            line += f" #{data.comments[i]}"
        out.append(line)
    Path(path).write_text("\n".join(out) + "\n", encoding="utf-8")
    if group_file is not None:
        write_group_file(group_file, data.group_sizes)
