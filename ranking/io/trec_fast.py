"""TREC runs and qrels as columns, read with a C CSV reader: the input path of
``heapjudge evaluate`` for large files (docs/metrics.md#large-files).

:func:`read_run_columns` and :func:`read_qrels_columns` return what
:func:`ranking.io.trec.read_run` and :func:`ranking.io.trec.read_qrels_detailed` return (the same
queries, documents, values and order, the same ``file:line`` errors), as flat arrays with one
row per line instead of nested dicts, so that grouping and joining stay in numpy.

Fast path: pyarrow's streaming CSV reader with a one-character delimiter (space, or tab when
the first line has tabs and no spaces). It is used only when cutting each line at every
delimiter gives exactly Python's ``str.split()``: a first pass over the bytes
(:func:`_screen`) refuses anything but printable ASCII, the delimiter and line breaks, comment
lines (``#`` first) and empty fields (a delimiter doubled, or at the start or end of a line);
the reader refuses a line with another number of fields, and converts only the columns used.
A delimiter at the end of every line (Cranfield's ``cranqrel``) is read as one more, empty,
column. Anything else (other whitespace, non-ASCII bytes, a BOM, a malformed or repeated line,
a number pyarrow does not parse the way ``float()`` does) sends the file to the exact Python
reader of :mod:`ranking.io.trec`, which raises the error with its line or returns the content,
then turned into columns (:meth:`TrecColumns.from_mapping`).

Joining run and qrels rows needs a key per (query, document) pair: the query's code in the
high bits, the document id's 64-bit hash below (:mod:`ranking.io.trec_keys`; a run keeps
its documents' hashes, qrels keep their keys sorted in a :class:`JoinIndex`). A key only
finds candidates: the join (:mod:`ranking.io.trec_join`) checks every match on the strings
themselves and falls back to a join on the strings if two pairs ever share a key.

pyarrow is imported by the functions that use it (here, in :mod:`ranking.io.trec_keys` and in
:mod:`ranking.io.trec_join`), not with the modules: the service imports them at start, and
pyarrow costs about 35 MB of resident memory that only run evaluations need
(docs/performance.md#the-server-at-start).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ranking.io.trec import (
    SNIFF_LINES,
    GradeMap,
    SniffedLayout,
    choose_layout,
    data_lines,
    layout_columns,
    read_qrels_detailed,
    read_run,
)
from ranking.io.trec_keys import pair_keys, string_hashes
from ranking.io.trec_scan import scan_columns

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "JoinIndex",
    "TrecColumns",
    "arrow_pool",
    "pair_keys",
    "read_qrels_columns",
    "read_run_columns",
    "string_hashes",
]

#: Bytes the CSV reader gets per block; the screen and the parser both work block by block, so
#: memory stays near the size of the columns rather than of the file.
BLOCK_SIZE = 1 << 22
#: The compiled scan's blocks (at most :data:`BLOCK_SIZE`): one in the cache of a core, and
#: fewer pages to fault in for a small file.
SCAN_BLOCK_SIZE = 1 << 20


#: Rows from which a file's Arrow buffers go to :func:`arrow_pool`'s page-returning pool
#: (about 40 MB of a TREC run).
LARGE_ROWS = 1 << 20


def arrow_pool(rows: int = LARGE_ROWS) -> pa.MemoryPool:
    """The Arrow memory pool of the reader and of the joins on its columns, for a file of
    about ``rows`` lines: jemalloc with immediate page return where pyarrow has it, from
    :data:`LARGE_ROWS` on; the default pool (mimalloc) below. The default pool keeps the
    pages of freed parse buffers for reuse, which on a 2M-line file held about 100 MB of
    resident memory that nothing used again; returning them at once costs page faults on
    every block instead, a fifth of the CPU time of many small runs against one qrels
    (docs/performance.md#evaluating-large-files)."""
    import pyarrow as pa  # on use: memory at start (arrow_pool)

    if rows < LARGE_ROWS:
        return pa.default_memory_pool()
    try:
        pool = pa.jemalloc_memory_pool()
        pa.jemalloc_set_decay_ms(0)
    except (NotImplementedError, pa.ArrowException):
        return pa.default_memory_pool()
    return pool


@dataclass(frozen=True)
class JoinIndex:
    """``sorted_keys``: the :func:`pair_keys` of a file's rows, ascending; ``key_order[j]`` is
    the row of ``sorted_keys[j]``; ``unique`` is False only if two rows share a key (a
    repeated pair, or two documents of one query whose hashes agree in their high bits)."""

    sorted_keys: NDArray[np.uint64]
    key_order: NDArray[np.intp]
    unique: bool

    @classmethod
    def of(
        cls, query: NDArray[np.int32], doc_hashes: NDArray[np.uint64], n_queries: int
    ) -> JoinIndex:
        """The index of rows with these query codes (of ``n_queries``) and document hashes
        (overwritten)."""
        keys = pair_keys(query, doc_hashes, n_queries)
        order = np.argsort(keys)
        if order.shape[0] < 2**31:
            order = order.astype(np.int32)  # half the memory
        keys = keys[order]
        return cls(keys, order, not bool((keys[1:] == keys[:-1]).any()))


@dataclass(frozen=True, eq=False)
class TrecColumns:
    """One TREC run or qrels file as columns; row ``i`` is one (query, document) line.

    ``qids``: the distinct query ids in order of first appearance (the key order of the dict
    readers); ``query[i]`` indexes it. ``docids[i]``: the document id. ``values[i]``: the
    score (run) or the integer grade as a float (qrels). Within a query, rows keep file order
    (the "input order" of ``ties="stable"``). ``fast``: read by the CSV reader (False: by the
    exact reader, see the module doc). :meth:`doc_hashes` and :meth:`join_index` find rows
    by (query, document); :meth:`distinct_pairs` says whether each pair is on one row.
    """

    qids: list[str]
    query: NDArray[np.int32]
    docids: pa.ChunkedArray
    values: NDArray[np.float64]
    path: str | None = None
    layout: SniffedLayout | None = None
    fast: bool = True
    _join: list[JoinIndex] = field(default_factory=list, repr=False)
    _hashes: list[NDArray[np.uint64]] = field(default_factory=list, repr=False)
    _distinct: list[bool] = field(default_factory=list, repr=False)
    kept_ideal: list[tuple[tuple[str, ...], NDArray[np.float64], NDArray[np.bool_]]] = field(
        default_factory=list, repr=False
    )
    """Qrels only: the padded judged labels of the queries last evaluated, kept while many
    runs are evaluated against these qrels (:func:`ranking.evaluate.evaluate_columns`)."""

    @property
    def n_rows(self) -> int:
        return int(self.values.shape[0])

    def doc_hashes(self) -> NDArray[np.uint64]:
        """The :func:`string_hashes` of the document ids (kept until
        :meth:`release_join_index`; not to be modified)."""
        if not self._hashes:
            self._hashes.append(string_hashes(self.docids))
        return self._hashes[0]

    def join_index(self) -> JoinIndex:
        """The rows' :class:`JoinIndex` (its keys carry this file's query codes; rebuilt from
        the ids after :meth:`release_join_index`)."""
        if not self._join:
            hashes = self._hashes[0].copy() if self._hashes else string_hashes(self.docids)
            self._join.append(JoinIndex.of(self.query, hashes, len(self.qids)))
        return self._join[0]

    def distinct_pairs(self) -> bool:
        """False only if two rows share a :func:`pair_keys` key: a (query, document) pair
        listed twice, or two documents of one query whose hashes agree in their high bits."""
        if not self._distinct:
            if self._join:
                self._distinct.append(self._join[0].unique)
            else:
                keys = pair_keys(self.query, self.doc_hashes().copy(), len(self.qids))
                keys.sort()  # in place: a sort, not an argsort (the rows are not needed)
                self._distinct.append(not bool((keys[1:] == keys[:-1]).any()))
        return self._distinct[0]

    def release_join_index(self) -> None:
        """Drop the join index and the hashes (24 + 8 bytes a row) once a join is done."""
        self._join.clear()
        self._hashes.clear()

    @classmethod
    def from_mapping(
        cls,
        mapping: Mapping[str, Mapping[str, float]],
        *,
        path: str | None = None,
        layout: SniffedLayout | None = None,
    ) -> TrecColumns:
        """Columns of a ``{qid: {docno: value}}`` mapping (the dict readers' result)."""
        import pyarrow as pa  # on use: memory at start (arrow_pool)

        qids = [str(q) for q in mapping]
        sizes = np.fromiter((len(d) for d in mapping.values()), dtype=np.int64, count=len(qids))
        docs = [str(d) for inner in mapping.values() for d in inner]
        values = np.fromiter(
            (float(v) for inner in mapping.values() for v in inner.values()),
            dtype=np.float64,
            count=len(docs),
        )
        docids = pa.chunked_array([pa.array(docs, type=pa.string())])
        query = np.repeat(np.arange(len(qids), dtype=np.int32), sizes)
        return cls(qids, query, docids, values, path=path, layout=layout, fast=False)

    def to_mapping(self) -> dict[str, dict[str, float]]:
        """The ``{qid: {docno: value}}`` mapping (file order kept)."""
        out: dict[str, dict[str, float]] = {q: {} for q in self.qids}
        qids = self.qids
        for q, d, v in zip(
            self.query.tolist(), self.docids.to_pylist(), self.values.tolist(), strict=True
        ):
            out[qids[q]][d] = v
        return out


# --------------------------------------------------------------------------------------------
# the screened CSV reader
# --------------------------------------------------------------------------------------------


class _NotSimple(Exception):
    """The file is outside what the fast path reads exactly; the exact reader takes it."""


def _screen(path: Path, delimiter: bytes, *, trailing: bool = False) -> str | None:
    """What, if anything, makes cutting the lines of ``path`` at ``delimiter`` differ from
    ``str.split()`` that the CSV reader would not notice itself; None when nothing does. One
    pass over the file in blocks read into one reused buffer.

    Checked here: bytes other than printable ASCII, the delimiter and line breaks; comment
    lines (``#`` first); empty fields (a delimiter doubled, at the start of a line, or at its
    end unless ``trailing``: every line then ends with one, :func:`_read_columns`). The CSV
    reader checks that every line has the expected number of fields; with no empty field,
    a line ``str.split()`` would see as shorter or longer is refused there.
    """
    allowed = bytes(range(0x21, 0x7F)) + delimiter + b"\n\r"
    size = min(BLOCK_SIZE, max(path.stat().st_size, 1 << 16))  # a small file: a small buffer
    buffer = bytearray(size + 1)
    buffer[0] = 0x0A  # the file starts as if after a line break
    # the empty-field test's two masks, reused from block to block (no page faults each time)
    masks = (np.empty(size + 1, dtype=bool), np.empty(size, dtype=bool))
    with path.open("rb") as fh:
        # Each block is read after the last byte of the one before (buffer[0]), so that
        # pairs of bytes across blocks are seen too.
        while n := fh.readinto(memoryview(buffer)[1:]):
            if n < len(buffer) - 1:
                del buffer[n + 1 :]  # the last block: shorter (in place, no copy)
            if buffer.translate(None, allowed):
                return "a byte other than printable ASCII, the delimiter or a line break"
            if b"#" in buffer and (b"\n#" in buffer or b"\r#" in buffer):
                return "a comment line"
            if _empty_field(buffer, delimiter[0], trailing, masks):
                return "an empty field"
            buffer[0] = buffer[-1]
    if not trailing and buffer[0] == delimiter[0]:
        return "an empty field at the end of the file"
    return None


def _empty_field(
    block: bytearray,
    delimiter: int,
    trailing: bool,
    masks: tuple[NDArray[np.bool_], NDArray[np.bool_]],
) -> bool:
    """Whether ``block`` (printable ASCII, the delimiter and line breaks only) has a field
    left empty: the delimiter next to another delimiter or to a line break (a delimiter before
    a line break is fine when every line ``trailing``-ly ends with one). In numpy: the bytes
    below ``!`` are the delimiter and line breaks; only where two of them meet is looked at."""
    data = np.frombuffer(block, dtype=np.uint8)
    separator = np.less(data, 0x21, out=masks[0][: data.shape[0]])
    pair = np.logical_and(separator[:-1], separator[1:], out=masks[1][: data.shape[0] - 1])
    at = np.flatnonzero(pair)
    if not at.shape[0]:
        return False
    first, second = data[at], data[at + 1]
    bad = (first == delimiter) | (second == delimiter)
    if trailing:
        bad &= ~((first == delimiter) & (second != delimiter))
    return bool(bad.any())


def _delimiter(path: Path) -> tuple[bytes, bool]:
    """The delimiter (a tab when the first line has tabs and no space, else a space) and
    whether the first line ends with it (then every line must)."""
    with path.open("rb") as fh:
        first = fh.readline(1 << 16)
    delimiter = b"\t" if b"\t" in first and b" " not in first else b" "
    return delimiter, first.rstrip(b"\r\n").endswith(delimiter)


_TRAILING = "(after the last delimiter)"


def _read_columns(
    path: Path, names: list[str], types: dict[str, pa.DataType]
) -> Iterator[pa.RecordBatch]:
    """Stream the columns ``types`` of a file whose lines have exactly ``len(names)`` fields;
    raises :class:`_NotSimple` when the file is not one the fast path reads exactly.

    The other columns (``Q0``, ranks, run tags) are only counted by the reader, not converted:
    :func:`_screen` has found no empty field. A file whose first line ends with the delimiter
    (Cranfield's ``cranqrel``) is read with one more column, checked to be always empty:
    every line must end so.
    """
    import pyarrow as pa  # on use: memory at start (arrow_pool)
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    words = pa.dictionary(pa.int32(), pa.string())  # the columns read but not converted
    delimiter, trailing = _delimiter(path)
    if trailing:
        names = [*names, _TRAILING]
    problem = _screen(path, delimiter, trailing=trailing)
    if problem is not None:
        raise _NotSimple(problem)
    # No empty field anywhere (the screen): the columns the caller does not need are not
    # converted, only counted by the reader; the trailing one is read to check it is empty.
    wanted = [n for n in names if n in types or n == _TRAILING]
    pool = arrow_pool(path.stat().st_size // 32)  # a TREC line has some 30-40 bytes
    try:
        reader = pacsv.open_csv(
            pa.OSFile(str(path), "r", memory_pool=pool),
            read_options=pacsv.ReadOptions(column_names=names, block_size=BLOCK_SIZE),
            parse_options=pacsv.ParseOptions(
                delimiter=delimiter.decode(),
                quote_char=False,
                escape_char=False,
                double_quote=False,
                newlines_in_values=False,
                ignore_empty_lines=True,
            ),
            memory_pool=pool,
            convert_options=pacsv.ConvertOptions(
                column_types={n: types.get(n, words) for n in names},
                null_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                include_columns=wanted,
                check_utf8=False,  # printable ASCII only (the screen)
            ),
        )
        for batch in reader:
            # no field is empty (the screen), but the one after a trailing delimiter must be
            if trailing:
                words = batch.column(_TRAILING).dictionary
                if len(words) and pc.max(pc.binary_length(words)).as_py() > 0:
                    raise _NotSimple("a line with one field more than the first line")
            yield batch
    except pa.ArrowException as exc:  # a line with another field count, a bad number, ...
        raise _NotSimple(str(exc)) from None


def _float_values(column: pa.Array) -> NDArray[np.float64]:
    """A float64 column without nulls as numpy (a copy, so the batch can be freed)."""
    import pyarrow as pa  # on use: memory at start (arrow_pool)

    assert column.type == pa.float64() and column.null_count == 0
    return np.frombuffer(column.buffers()[1], np.float64, len(column), column.offset * 8).copy()


def _collect(
    path: Path, names: list[str], types: dict[str, pa.DataType], value_columns: list[str]
) -> tuple[list[str], NDArray[np.int32], pa.ChunkedArray, NDArray[np.uint64], list[np.ndarray]]:
    """Read ``qid``/``docid`` and the float ``value_columns`` of every line: query ids as codes
    (first appearance order), document ids as strings and hashes. The compiled scan
    (:mod:`ranking.io.trec_scan`) when it is there, else the CSV reader: the same columns."""
    delimiter, trailing = _delimiter(path)
    scanned = scan_columns(
        path,
        delimiter=delimiter,
        trailing=trailing,
        n_columns=len(names),
        qid_column=names.index("qid"),
        doc_column=names.index("docid"),
        value_columns=[names.index(c) for c in value_columns],
        block_size=min(BLOCK_SIZE, SCAN_BLOCK_SIZE),
    )
    if isinstance(scanned, str):
        raise _NotSimple(scanned)
    if scanned is not None:
        return scanned.qids, scanned.query, scanned.docids, scanned.hashes, scanned.values
    import pyarrow.compute as pc  # on use: memory at start (arrow_pool)

    index: dict[str, int] = {}
    query_parts: list[NDArray[np.int32]] = []
    d_chunks: list[pa.Array] = []
    hash_parts: list[NDArray[np.uint64]] = []
    value_parts: dict[str, list[np.ndarray]] = {c: [] for c in value_columns}
    for batch in _read_columns(path, names, types):
        # A block holds few distinct queries: encode it, then number its dictionary globally.
        encoded = pc.dictionary_encode(batch.column("qid"))
        codes = np.array(
            [index.setdefault(q, len(index)) for q in encoded.dictionary.to_pylist()],
            dtype=np.int32,
        )
        indices = encoded.indices
        query_parts.append(
            codes[np.frombuffer(indices.buffers()[1], np.int32, len(indices), indices.offset * 4)]
        )
        docs = batch.column("docid")
        d_chunks.append(docs)
        hash_parts.append(string_hashes(docs))
        for c in value_columns:
            value_parts[c].append(_float_values(batch.column(c)))
    if not index:
        raise _NotSimple("no data lines")
    # one column at a time, each one's blocks freed before the next is joined (peak memory)
    query = _concatenate(query_parts)
    hashes = _concatenate(hash_parts)
    values = [_concatenate(value_parts[c]) for c in value_columns]
    docids = _one_chunk(d_chunks)
    return list(index), query, docids, hashes, values


def _one_chunk(chunks: list[pa.Array]) -> pa.ChunkedArray:
    """The blocks' strings as one chunk (their blocks freed), unless their bytes near the
    2 GiB that 32-bit offsets address. A take from a chunked array with indices all over it
    joins the chunks on every call (the join's string check takes run and qrels rows)."""
    import pyarrow as pa  # on use: memory at start (arrow_pool)

    size = sum(chunk.nbytes for chunk in chunks)
    if len(chunks) < 2 or size >= 2**30:
        return pa.chunked_array(chunks, type=pa.string())
    one = pa.concat_arrays(chunks, memory_pool=arrow_pool(sum(len(c) for c in chunks)))
    chunks.clear()
    return pa.chunked_array([one])


def _concatenate(parts: list[np.ndarray]) -> np.ndarray:
    """``np.concatenate(parts)``, emptying ``parts`` as it goes."""
    out = np.empty(sum(p.shape[0] for p in parts), dtype=parts[0].dtype)
    at = 0
    parts.reverse()
    while parts:
        part = parts.pop()
        out[at : at + part.shape[0]] = part
        at += part.shape[0]
    return out


# --------------------------------------------------------------------------------------------
# readers
# --------------------------------------------------------------------------------------------

_RUN_NAMES = ["qid", "q0", "docid", "rank", "score", "tag"]


def _fast_run(path: Path) -> TrecColumns:
    import pyarrow as pa  # on use: memory at start (arrow_pool)

    qids, query, docids, hashes, (scores,) = _collect(
        path,
        _RUN_NAMES,
        {"qid": pa.string(), "docid": pa.string(), "score": pa.float64()},
        ["score"],
    )
    if np.isnan(scores).any():
        raise _NotSimple("a NaN score")  # the exact reader names its line
    columns = TrecColumns(qids, query, docids, scores, path=str(path), _hashes=[hashes])
    if not columns.distinct_pairs():  # a document listed twice (or a hash collision)
        raise _NotSimple("a repeated (query, document) key")
    return columns


def read_run_columns(path: str | Path) -> TrecColumns:
    """A TREC run (``qid Q0 docno rank score tag``; the rank is ignored) as columns; same
    content and errors as :func:`ranking.io.trec.read_run`."""
    p = Path(path)
    try:
        return _fast_run(p)
    except (_NotSimple, OSError):
        pass
    run = read_run(p)
    assert isinstance(run, dict)
    return TrecColumns.from_mapping(run, path=str(p))


def _grades(values: NDArray[np.float64], grade_map: GradeMap | None) -> NDArray[np.float64]:
    """What :func:`ranking.io.trec.parse_relevance` makes of each value, or :class:`_NotSimple`
    where it would raise (the exact reader then names the line)."""
    if not np.isfinite(values).all():
        raise _NotSimple("a non-finite relevance")
    if grade_map is None:
        if not (values == np.trunc(values)).all():
            raise _NotSimple("a relevance that is not a whole number")
        return values + 0.0  # -0.0 -> 0.0, as int() does
    distinct, inverse = np.unique(values, return_inverse=True)
    try:
        mapped = np.array([float(grade_map(float(v))) for v in distinct.tolist()])
    except ValueError:
        raise _NotSimple("a relevance outside the grade map") from None
    return mapped[inverse]


def _fast_qrels(path: Path, chosen: SniffedLayout, grade_map: GradeMap | None) -> TrecColumns:
    import pyarrow as pa  # on use: memory at start (arrow_pool)

    layout = chosen.layout
    if layout == "trec":
        names = ["qid", "iteration", "docid", "rel"]
        value_columns = ["rel"]
    elif layout == "3col":
        names = ["qid", "docid", "rel"]
        value_columns = ["rel"]
    else:  # smart-rel: columns 3 and 4 must be zero, every pair relevant
        names = ["qid", "docid", "c3", "c4"]
        value_columns = ["c3", "c4"]
    assert len(names) == layout_columns(layout)
    types = {"qid": pa.string(), "docid": pa.string()}
    types.update({c: pa.float64() for c in value_columns})
    qids, query, docids, hashes, parts = _collect(path, names, types, value_columns)
    if layout == "smart-rel":
        if not all((part == 0.0).all() for part in parts):
            raise _NotSimple("a SMART .REL line whose columns 3 and 4 are not 0")
        grades = np.ones(query.shape[0])
    else:
        grades = _grades(parts[0], grade_map)
    del parts
    index = JoinIndex.of(query, hashes, len(qids))  # what a join with a run searches
    del hashes
    columns = TrecColumns(qids, query, docids, grades, path=str(path), layout=chosen, _join=[index])
    if not columns.distinct_pairs():  # a pair judged twice (or a hash collision)
        raise _NotSimple("a repeated (query, document) key")
    return columns


def read_qrels_columns(
    path: str | Path, *, layout: str = "auto", grade_map: GradeMap | None = None
) -> TrecColumns:
    """Qrels in any layout of :mod:`ranking.io.trec` as columns (``layout`` set to the one read);
    same content and errors as :func:`ranking.io.trec.read_qrels_detailed`."""
    p = Path(path)
    try:
        head = []
        for _, fields in data_lines(p):
            head.append(fields)
            if len(head) >= SNIFF_LINES:
                break
        if head:
            chosen = choose_layout(head, layout)
            return _fast_qrels(p, chosen, grade_map)
    except (_NotSimple, ValueError, OSError):
        pass  # the exact reader raises (with the line) or reads what the fast path did not
    qrels, chosen = read_qrels_detailed(p, layout=layout, grade_map=grade_map)
    return TrecColumns.from_mapping(qrels, path=str(p), layout=chosen)
