"""Joining a run with qrels into trec_eval's ranked relevance lists, one padded row per query.

trec_eval 10.0 (``form_res_rels.c``) ranks a query's documents by score descending, ties by
document id descending (``strcmp``, byte order), keeps the first ``-M`` of them, and gives
each the grade in the qrels, ``-1`` when the document is not in the qrels ("not in the pool")
or ``-2`` when the qrels grade is negative ("in the pool, unjudged"). Scores are read as C
doubles (``atof``); 10.0 keeps them as doubles, so the single-precision tie quirk of trec_eval
8 and 9 (scores stored as ``float``) does not apply. With ``-J`` the documents not judged
(``-1`` and ``-2``) are dropped after ranking. A document twice in one query's top ``-M`` is
an error of that query, as is a document twice in one query's qrels.

Queries are the qrels' queries, in ``strcmp`` order of their ids; a run's queries absent from
the qrels are ignored. A qrels query absent from the run is an error in trec_eval 10.0 unless
``-c`` is given, when it is evaluated as a ranking of one unjudged document and its
retrieved-count measures are then zeroed (:mod:`ranking.trec_eval.evaluate`).

The result, :class:`Batch`, holds every query's grades in rank order in one ``(queries,
depth)`` matrix padded with :data:`PAD`, so that each measure is a few numpy operations over
all queries at once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from functools import cached_property, wraps
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:  # the readers are imported only where the Python path reads the files
    from ranking.trec_eval.readers import QrelsColumns, RunColumns

__all__ = [
    "BOGUS_DOC",
    "NONPOOL",
    "PAD",
    "UNJUDGED",
    "Batch",
    "Merged",
    "make_batch",
    "merge",
    "per_batch",
]

NONPOOL = -1
UNJUDGED = -2
#: Grade of the cells past a query's last retrieved document (always masked by ``valid``).
PAD = -3
#: The document trec_eval retrieves for a query missing from the run under ``-c``.
BOGUS_DOC = b"ceci_nest_pas_un_docno"

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]
R = TypeVar("R")


@dataclass
class Batch:
    """Ranked grades of ``n`` queries and their judgment counts.

    ``rel[q, i]`` is the grade of query ``q``'s document at rank ``i + 1`` (``PAD`` past
    ``num_ret[q]``); ``rel_levels[q, g]`` counts the query's judged documents of grade ``g``
    (grades ≥ 0, retrieved or not); ``level`` is ``-l``, the least relevant grade.
    """

    rel: IntArray
    num_ret: IntArray
    rel_levels: IntArray
    level: int
    #: Queries without a judgment of grade ≥ 0: trec_eval 10.0 leaves its per-query level
    #: counts as the previous query left them (static buffers in ``form_res_rels.c``), so
    #: ``rel_levels`` holds the previous query's row there, while num_rel is 0.
    stale: NDArray[np.bool_] | None = None
    num_rel_levels: IntArray = field(init=False)
    #: Values that several measures share (:func:`per_batch`), computed once per batch.
    memo: dict[Hashable, Any] = field(init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self) -> None:
        present = self.rel_levels > 0
        top = present.shape[1] - np.argmax(present[:, ::-1], axis=1) if present.shape[1] else 0
        self.num_rel_levels = np.where(present.any(axis=1), top, 0).astype(np.int64)

    @property
    def n(self) -> int:
        return int(self.rel.shape[0])

    @property
    def depth(self) -> int:
        return int(self.rel.shape[1])

    @cached_property
    def valid(self) -> NDArray[np.bool_]:
        return np.arange(self.depth)[None, :] < self.num_ret[:, None]

    @cached_property
    def isrel(self) -> NDArray[np.bool_]:
        """Retrieved and relevant at ``-l`` (trec_eval's ``rel >= relevance_level``)."""
        return self.valid & (self.rel >= self.level)

    @cached_property
    def judged_rel(self) -> NDArray[np.bool_]:
        """Relevant and judged (the relevant branch of bpref and infAP)."""
        return self.isrel & (self.rel >= 0)

    @cached_property
    def judged_nonrel(self) -> NDArray[np.bool_]:
        return self.valid & (self.rel >= 0) & (self.rel < self.level)

    @cached_property
    def cumrel(self) -> IntArray:
        """Relevant documents among the first ``i + 1``."""
        return np.cumsum(self.isrel, axis=1, dtype=np.int64)

    @cached_property
    def num_rel_ret(self) -> IntArray:
        out: IntArray = self.isrel.sum(axis=1, dtype=np.int64)
        return out

    @cached_property
    def num_rel(self) -> IntArray:
        grades = np.arange(self.rel_levels.shape[1])
        counts = self.rel_levels[:, grades >= self.level].sum(axis=1, dtype=np.int64)
        out: IntArray = counts if self.stale is None else np.where(self.stale, 0, counts)
        return out

    @cached_property
    def num_nonrel(self) -> IntArray:
        """Judged non-relevant documents (grades 0 to ``level - 1``), bpref's N."""
        grades = np.arange(self.rel_levels.shape[1])
        wanted = (grades >= 0) & (grades < self.level)
        out: IntArray = self.rel_levels[:, wanted].sum(axis=1, dtype=np.int64)
        return out

    @cached_property
    def num_nonpool(self) -> IntArray:
        out: IntArray = (self.valid & (self.rel == NONPOOL)).sum(axis=1, dtype=np.int64)
        return out

    @cached_property
    def num_unjudged(self) -> IntArray:
        out: IntArray = (self.valid & (self.rel == UNJUDGED)).sum(axis=1, dtype=np.int64)
        return out

    @cached_property
    def ranks(self) -> FloatArray:
        """``1.0 .. depth`` (the rank of each column, as C's ``(double)(i + 1)``)."""
        return np.arange(1, self.depth + 1, dtype=np.float64)

    def at(self, cum: NDArray[np.generic], k: int | IntArray) -> NDArray[np.generic]:
        """``cum``'s value after the first ``k`` ranks (``k`` ≥ 0, per query or one for all;
        past the depth, the row's last value; 0 for ``k = 0``)."""
        if self.depth == 0:
            return np.zeros(self.n, dtype=cum.dtype)
        if isinstance(k, int):  # one cutoff for all: a column, no fancy indexing
            if k <= 0:
                return np.zeros(self.n, dtype=cum.dtype)
            column: NDArray[np.generic] = cum[:, min(k, self.depth) - 1].copy()
            return column
        kk = np.minimum(np.broadcast_to(np.asarray(k, dtype=np.int64), (self.n,)), self.depth)
        values = cum[np.arange(self.n), np.maximum(kk - 1, 0)]
        return np.where(kk > 0, values, np.zeros((), dtype=cum.dtype))


def _hashable(value: object) -> Hashable:
    if isinstance(value, list | tuple):
        return tuple(_hashable(v) for v in value)
    return value


def per_batch(fn: Callable[..., R]) -> Callable[..., R]:
    """``fn(batch, *params)`` computed once per batch and parameters: map, gm_map and yaap
    share the running average precision, ndcg, ndcg_rel, Rndcg and G the running DCGs,
    iprec_at_recall and 11pt_avg the interpolated precisions. The value is shared: callers
    do not write into it."""

    @wraps(fn)
    def cached(batch: Batch, *params: object) -> R:
        key = (fn.__module__, fn.__qualname__, _hashable(params))
        if key not in batch.memo:
            batch.memo[key] = fn(batch, *params)
        value: R = batch.memo[key]
        return value

    return cached


@dataclass
class Merged:
    """The batch of every qrels query, plus what the evaluation loop needs around it."""

    qids: list[str]
    batch: Batch
    #: Queries that trec_eval cannot evaluate, with its message (missing run, duplicates).
    errors: dict[int, str]
    #: Queries evaluated on the stand-in document (``-c``, absent from the run).
    bogus: NDArray[np.bool_]


def _codes(*columns: NDArray[np.bytes_]) -> tuple[NDArray[np.bytes_], list[IntArray]]:
    """Integer codes of byte strings that keep their ``strcmp`` order (a stable argsort,
    cheaper than ``np.unique`` on millions of strings)."""
    joined = np.concatenate(columns)
    order = np.argsort(joined, kind="stable")
    ordered = joined[order]
    new = np.ones(len(ordered), dtype=bool)
    new[1:] = ordered[1:] != ordered[:-1]
    codes = np.empty(len(joined), dtype=np.int64)
    codes[order] = np.cumsum(new) - 1
    unique = ordered[new]
    out: list[IntArray] = []
    start = 0
    for column in columns:
        out.append(codes[start : start + len(column)])
        start += len(column)
    return unique, out


def _dense_rank(values: FloatArray) -> IntArray:
    """0-based rank of each value among the distinct values (equal values, ``-0.0`` and
    ``0.0`` included, share one)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    step = np.ones(len(values), dtype=np.int64)
    step[0] = 0
    step[1:] = ordered[1:] != ordered[:-1]
    ranks = np.empty(len(values), dtype=np.int64)
    ranks[order] = np.cumsum(step)
    return ranks


def _rank_order(query: IntArray, sim: FloatArray, doc: IntArray, ndocs: int) -> IntArray:
    """Row order by query, then score descending, then document code descending: one
    integer sort of a combined key where it fits in 63 bits, ``np.lexsort`` otherwise."""
    if len(query) == 0:
        return np.zeros(0, dtype=np.int64)
    score = _dense_rank(sim)
    levels = int(score.max()) + 1
    if (int(query.max()) + 1) * levels * ndocs < 2**62:
        key = (query * levels + (levels - 1 - score)) * ndocs + (ndocs - 1 - doc)
        order: IntArray = np.argsort(key, kind="stable")
        return order
    fallback: IntArray = np.lexsort((-doc, -sim, query))
    return fallback


def _lookup(values: NDArray[np.bytes_], table: NDArray[np.bytes_]) -> IntArray:
    """Index of each value in the sorted ``table``, -1 when absent; rows with the same value
    one after the other (a run's lines come by query) are looked up once."""
    if len(values) == 0 or len(table) == 0:
        return np.full(len(values), -1, dtype=np.int64)
    heads = np.ones(len(values), dtype=bool)
    heads[1:] = values[1:] != values[:-1]
    firsts = values[heads]
    pos = np.minimum(np.searchsorted(table, firsts), len(table) - 1)
    found = np.where(table[pos] == firsts, pos, -1).astype(np.int64)
    return np.repeat(found, np.diff(np.append(np.flatnonzero(heads), len(values))))


def _first_in_group(key: IntArray) -> NDArray[np.bool_]:
    """Rows whose key equals the previous row's (``key`` sorted)."""
    same = np.zeros(len(key), dtype=bool)
    same[1:] = key[1:] == key[:-1]
    return same


def _group_rank(group: IntArray) -> IntArray:
    """Position of each row within its run of equal ``group`` values (``group`` sorted)."""
    n = len(group)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.ones(n, dtype=bool)
    starts[1:] = group[1:] != group[:-1]
    first = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    return np.arange(n, dtype=np.int64) - first


def _with_bogus(
    run: RunColumns, qrels_q: NDArray[np.bytes_], complete: bool
) -> tuple[RunColumns, NDArray[np.bool_]]:
    present = np.zeros(len(qrels_q), dtype=bool)
    codes = _lookup(run.qid, qrels_q)
    present[codes[codes >= 0]] = True
    if not complete or present.all():
        return run, np.zeros(len(qrels_q), dtype=bool)
    missing = qrels_q[~present]
    extra = len(missing)
    return (
        replace(
            run,
            qid=np.concatenate([run.qid, missing]),
            # the width spelled out: np.full with a bare np.bytes_ would keep only "c"
            doc=np.concatenate([run.doc, np.full(extra, BOGUS_DOC, dtype=f"S{len(BOGUS_DOC)}")]),
            sim=np.concatenate([run.sim, np.ones(extra)]),
            line=np.concatenate([run.line, np.zeros(extra, dtype=np.int64)]),
        ),
        ~present,
    )


#: trec_eval 10.0 sizes its relevance-level counts by a query's highest grade plus one and
#: keeps them between queries: when the first query's grades are all negative it asks for
#: none, gets no array and stops there (docs/trec-eval.md#quirks).
NEGATIVE_FIRST_QUERY = "trec_eval: Can't calculate measure (the first query's grades are all < 0)"


def merge(
    qrels: QrelsColumns,
    run: RunColumns,
    *,
    level: int = 1,
    max_ret: int | None = None,
    judged_only: bool = False,
    complete: bool = False,
) -> Merged:
    """Rank ``run`` against ``qrels`` as trec_eval does (module docstring)."""
    queries, (qrels_qc,) = _codes(qrels.qid)
    errors: dict[int, str] = {}
    run, bogus = _with_bogus(run, queries, complete)
    all_qc = _lookup(run.qid, queries)
    in_qrels = all_qc >= 0
    run_qc = all_qc[in_qrels]
    present = np.zeros(len(queries), dtype=bool)
    present[run_qc] = True
    for missing in np.flatnonzero(~present).tolist():
        name = queries[missing].decode("utf-8", "replace")
        errors[missing] = f"trec_eval: result qid '{name}' not found in qrels"
    if len(queries) and int(qrels.rel[qrels_qc == 0].max()) < 0:
        errors[0] = NEGATIVE_FIRST_QUERY
    docs, (qrels_dc, run_dc) = _codes(qrels.doc, run.doc[in_qrels])
    ndocs = max(len(docs), 1)
    sim = run.sim[in_qrels]

    # qrels: sorted by (query, document); a document twice in a query is that query's error.
    qkey = qrels_qc * ndocs + qrels_dc
    qorder = np.argsort(qkey, kind="stable")
    qkey_sorted = qkey[qorder]
    qrel_sorted = qrels.rel[qorder]
    for row in np.flatnonzero(_first_in_group(qkey_sorted)).tolist():
        q = int(qkey_sorted[row] // ndocs)
        name = docs[qkey_sorted[row] % ndocs].decode("utf-8", "replace")
        errors.setdefault(q, f"trec_eval.form_res_rels: duplicate docs {name}")

    # run: score descending, then document id descending, within each query.
    order = _rank_order(run_qc, sim, run_dc, ndocs)
    rq, rd = run_qc[order], run_dc[order]
    rank = _group_rank(rq)
    if max_ret is not None:
        keep = rank < max_ret
        rq, rd, rank = rq[keep], rd[keep], rank[keep]
    rkey = rq * ndocs + rd
    dup_sorted = np.sort(rkey)
    for row in np.flatnonzero(_first_in_group(dup_sorted)).tolist():
        q = int(dup_sorted[row] // ndocs)
        name = docs[dup_sorted[row] % ndocs].decode("utf-8", "replace")
        errors.setdefault(q, f"trec_eval.form_res_qrels: duplicate docs {name}")
    grade = _grades(rkey, qkey_sorted, qrel_sorted)
    if judged_only:
        keep = grade >= 0
        rq, grade = rq[keep], grade[keep]
        rank = _group_rank(rq)
    batch = _batch(len(queries), rq, rank, grade, qrels_qc, qrels.rel, level)
    qids = [q.decode("utf-8", "surrogateescape") for q in queries]
    return Merged(qids, batch, errors, bogus)


def _grades(rkey: IntArray, qkey_sorted: IntArray, qrel_sorted: IntArray) -> IntArray:
    if len(qkey_sorted) == 0:
        return np.full(len(rkey), NONPOOL, dtype=np.int64)
    pos = np.minimum(np.searchsorted(qkey_sorted, rkey), len(qkey_sorted) - 1)
    found = qkey_sorted[pos] == rkey
    judged = qrel_sorted[pos]
    return np.where(found, np.where(judged < 0, UNJUDGED, judged), NONPOOL).astype(np.int64)


def _batch(
    nq: int,
    rq: IntArray,
    rank: IntArray,
    grade: IntArray,
    qrels_qc: IntArray,
    qrels_rel: IntArray,
    level: int,
) -> Batch:
    num_ret = np.bincount(rq, minlength=nq).astype(np.int64)
    depth = int(num_ret.max()) if nq else 0
    rel = np.full((nq, depth), PAD, dtype=np.int64)
    rel[rq, rank] = grade
    judged = qrels_rel >= 0
    top = int(qrels_rel[judged].max()) + 1 if judged.any() else 1
    flat = qrels_qc[judged] * top + qrels_rel[judged]
    rel_levels = np.bincount(flat, minlength=nq * top).reshape(nq, top).astype(np.int64)
    return make_batch(rel, num_ret, rel_levels, level)


def make_batch(rel: IntArray, num_ret: IntArray, rel_levels: IntArray, level: int) -> Batch:
    """The batch of ranked grades ``rel`` (padded with :data:`PAD`), with the queries whose
    judgment counts are all zero given the previous query's (``Batch.stale``)."""
    nq = len(num_ret)
    stale = rel_levels.sum(axis=1) == 0
    if stale.any():
        # forward-fill the previous query's counts (the first query's are zeros)
        source = np.maximum.accumulate(np.where(~stale, np.arange(nq), -1))
        filled = np.where(source[:, None] >= 0, rel_levels[np.maximum(source, 0)], 0)
        rel_levels = filled.astype(np.int64)
    return Batch(rel, num_ret, rel_levels, level, stale if stale.any() else None)
