"""Recall-point measures: iprec_at_recall, 11pt_avg, Rprec_mult.

With ``P(k) = c(k)/k`` the precision after ``k`` documents (``c`` as in
:mod:`ranking.trec_eval.m_cutoffs`) and ``a`` = relevant retrieved:

- **iprec_at_recall_x**: interpolated precision ``max_{k ≥ k_m} P(k)`` at the rank ``k_m`` of
  the ``m``-th relevant document, ``m = lround(x · R)`` (trec_eval 10.0 rounds; 9 added 0.9
  and truncated); 0 when ``m > a``; for ``m = 0`` the maximum from the first relevant
  document on.
- **11pt_avg**: the mean of those values over its recall points (default 0.0, 0.1, …, 1.0),
  summed from the highest point down as trec_eval does.
- **Rprec_mult_x**: precision after ``(long)(x · R + 0.9)`` documents (non-relevant documents
  fill a short ranking).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ranking.trec_eval.fast_merge import compiled_iprec_at_recall
from ranking.trec_eval.merge import Batch, FloatArray, IntArray, per_batch

__all__ = ["eleven_pt_avg", "iprec_at_recall", "rprec_mult"]


def _c_lround(x: float) -> int:
    """C ``lround``: halves away from zero."""
    return int(np.floor(x + 0.5)) if x >= 0 else -int(np.floor(-x + 0.5))


def _lround_all(x: float | FloatArray, rel: FloatArray) -> IntArray:
    """:func:`_c_lround` of ``x * rel`` for every query (exact: ``v - floor(v)`` is exact);
    ``x`` may be a row of points against a column of counts (every point at once)."""
    v = x * rel
    a = np.abs(v)
    f = np.floor(a)
    r = f + (a - f >= 0.5)
    out: IntArray = (np.sign(v) * r).astype(np.int64)
    return out


def _interpolated(batch: Batch) -> FloatArray:
    """``max_{k' ≥ k} P(k')`` over the retrieved ranks (NaN past ``num_ret``... masked)."""
    with np.errstate(invalid="ignore"):
        prec = np.where(batch.valid, batch.cumrel / batch.ranks[None, :], -np.inf)
    return np.maximum.accumulate(prec[:, ::-1], axis=1)[:, ::-1]


@per_batch
def iprec_at_recall(batch: Batch, points: Sequence[float]) -> FloatArray:
    out = np.zeros((batch.n, len(points)))
    if batch.depth == 0:
        return _no_ranking(batch, points, out)
    if not len(points):
        return out
    rel_count = batch.num_rel.astype(np.float64)
    # every point at once, (queries, points): the same products and roundings as one by one
    targets = _lround_all(np.asarray(points, dtype=np.float64)[None, :], rel_count[:, None])
    fast = compiled_iprec_at_recall(batch.rel, batch.num_ret, batch.level, targets)
    if fast is not None:  # one walk a query in C (_rankjoin.iprec_at_recall), the same doubles
        return fast
    interp = _interpolated(batch)
    rel_count = batch.num_rel.astype(np.float64)
    rel_ret = batch.num_rel_ret
    # relpos[q, k]: rank (0-based) of query q's (k+1)-th relevant document (read only where
    # the query has that many, the other cells are masked below)
    rows, cols = np.nonzero(batch.isrel)
    relpos = np.zeros((batch.n, batch.depth), dtype=np.int64)
    relpos[rows, batch.cumrel[rows, cols] - 1] = cols
    every = np.arange(batch.n)
    for j, x in enumerate(points):
        m = _lround_all(x, rel_count)
        target = np.maximum(m, 1)
        pos = relpos[every, np.minimum(target, batch.depth) - 1]
        value = interp[every, pos]
        assigned = m <= rel_ret
        none = rel_ret == 0
        value = np.where(none, _empty_precision(batch), value)
        out[:, j] = np.where(assigned, value, 0.0)
    return out


def _empty_precision(batch: Batch) -> FloatArray:
    """``a / ret`` when nothing relevant was retrieved: 0, or NaN for an empty ranking."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(batch.num_rel_ret / batch.num_ret.astype(np.float64), dtype=np.float64)


def _no_ranking(batch: Batch, points: Sequence[float], out: FloatArray) -> FloatArray:
    empty = _empty_precision(batch)
    for j, x in enumerate(points):
        m = _lround_all(x, batch.num_rel.astype(np.float64))
        out[:, j] = np.where(m <= 0, empty, 0.0)
    return out


def eleven_pt_avg(batch: Batch, points: Sequence[float]) -> FloatArray:
    """Mean interpolated precision over ``points``. trec_eval does not sort this measure's
    points and its loop assumes them ascending; points given out of order get the value its
    loop gives them (:func:`_eleven_pt_scalar`)."""
    if list(points) != sorted(points):
        return np.array([_eleven_pt_scalar(batch, q, points) for q in range(batch.n)])
    values = iprec_at_recall(batch, points)
    total = np.cumsum(values[:, ::-1], axis=1)[:, -1]
    return total / float(len(points))


def _eleven_pt_scalar(batch: Batch, q: int, points: Sequence[float]) -> float:
    """trec_eval's loop for one query, step by step."""
    rel_count = int(batch.num_rel[q])
    cuts = [_c_lround(x * rel_count) for x in points]
    ret, rel_ret = int(batch.num_ret[q]), int(batch.num_rel_ret[q])
    isrel = batch.isrel[q]
    current = len(cuts) - 1
    while current >= 0 and cuts[current] > rel_ret:
        current -= 1
    with np.errstate(invalid="ignore", divide="ignore"):
        int_precis = float(np.float64(rel_ret) / np.float64(ret))
    total, so_far, i = 0.0, rel_ret, ret
    while i > 0 and so_far > 0:
        int_precis = max(int_precis, so_far / i)
        if isrel[i - 1]:
            while current >= 0 and so_far == cuts[current]:
                total += int_precis
                current -= 1
            so_far -= 1
        i -= 1
    while current >= 0:
        total += int_precis
        current -= 1
    return total / float(len(points))


def rprec_mult(batch: Batch, multiples: Sequence[float]) -> FloatArray:
    if batch.depth == 0 or not len(multiples):
        return np.zeros((batch.n, len(multiples)))
    rel = batch.num_rel.astype(np.float64)
    # every multiple at once, (queries, multiples): the same doubles as one at a time
    x = np.asarray(multiples, dtype=np.float64)[None, :]
    cut = (x * rel[:, None] + 0.9).astype(np.int64)  # C's (long) truncates toward zero
    # Batch.at of each cut: c(k) after min(k, depth) ranks, 0 for k <= 0
    kk = np.minimum(np.maximum(cut, 0), batch.depth)
    seen = batch.cumrel[np.arange(batch.n)[:, None], np.maximum(kk - 1, 0)]
    counts = np.where(kk > 0, seen, 0).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out: FloatArray = np.where(cut > 0, counts / cut, 0.0)
    return out
