"""Rank-cutoff and set measures of trec_eval 10.0: counts, P, recall, map, map_cut, Rprec,
recip_rank, relative_P, success, unj, set_P, set_recall, set_relative_P, set_map, set_F,
utility, yaap.

Notation for one query: ``rel_i`` is 1 when the document at rank ``i`` has a grade ≥ ``-l``;
``R`` = num_rel (judged documents with a grade ≥ ``-l``), ``ret`` = num_ret, ``a`` =
num_rel_ret, ``c(k) = Σ_{i≤k} rel_i`` (ranks past ``ret`` count as non-relevant).

- ``P_k = c(k) / k``; ``recall_k = c(k) / R`` (0 when R = 0); ``success_k = [c(k) > 0]``;
  ``relative_P_k = c(k) / min(k, R)``; ``unj_k`` = unjudged (grade -1 or -2) in the top k / k.
- ``map`` (average precision; Buckley & Voorhees, "Retrieval System Evaluation", 2005) =
  ``Σ_i rel_i · c(i)/i / R``; ``map_cut_k`` sums over ``i ≤ k`` only.
- ``Rprec = c(min(ret, R)) / R``; ``recip_rank = 1 / (rank of the first relevant)``.
- set measures: ``set_P = a/ret``, ``set_recall = a/R``, ``set_relative_P = a/min(ret, R)``,
  ``set_map = a²/(ret·R)``, ``set_F_x = (x+1)·P·R' / (x·P + R')`` with ``P = a/ret``,
  ``R' = a/R`` (van Rijsbergen's E, 1979).
- ``utility = p1·a + p2·(ret − a) + p3·(R − a) + p4·(N + a − ret − R)`` (N = ``-N``).
- ``yaap = log((1 + s) / (1 + R − s))`` with ``s = Σ_i rel_i c(i)/i`` (Robertson, "On
  Smoothing Average Precision", ECIR 2012).

Sums run left to right over ranks (``np.cumsum``), the order of trec_eval's loops, so every
double is the one trec_eval computes and prints.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ranking.trec_eval.fast_merge import compiled_ap_sums
from ranking.trec_eval.merge import Batch, FloatArray, per_batch
from ranking.trec_eval.numeric import c_log

__all__ = [
    "ap_sums",
    "map_cut",
    "mean_ap",
    "num_nonrel_judged_ret",
    "precision",
    "r_precision",
    "recall",
    "recip_rank",
    "relative_p",
    "set_f",
    "set_map",
    "set_p",
    "set_recall",
    "set_relative_p",
    "success",
    "unjudged",
    "utility",
    "yaap",
]


def _div(num: np.ndarray, den: np.ndarray, ok: np.ndarray | np.bool_) -> FloatArray:
    """``num / den`` where ``ok``, 0.0 elsewhere (trec_eval leaves such values at 0)."""
    out = np.zeros(np.broadcast(num, den).shape, dtype=np.float64)
    np.divide(num, den, out=out, where=np.broadcast_to(ok, out.shape))
    return out


def _at_cutoffs(batch: Batch, cum: np.ndarray, cutoffs: Sequence[int]) -> np.ndarray:
    return (
        np.stack([batch.at(cum, k) for k in cutoffs], axis=1) if cutoffs else np.zeros((batch.n, 0))
    )


def precision(batch: Batch, cutoffs: Sequence[int]) -> FloatArray:
    counts = _at_cutoffs(batch, batch.cumrel, cutoffs).astype(np.float64)
    return counts / np.asarray(cutoffs, dtype=np.float64)[None, :]


def recall(batch: Batch, cutoffs: Sequence[int]) -> FloatArray:
    counts = _at_cutoffs(batch, batch.cumrel, cutoffs)
    rel = batch.num_rel[:, None]
    return _div(counts, rel, rel > 0)


def success(batch: Batch, cutoffs: Sequence[int]) -> FloatArray:
    return (_at_cutoffs(batch, batch.cumrel, cutoffs) > 0).astype(np.float64)


def relative_p(batch: Batch, cutoffs: Sequence[int]) -> FloatArray:
    counts = _at_cutoffs(batch, batch.cumrel, cutoffs)
    rel = batch.num_rel[:, None]
    den = np.minimum(np.asarray(cutoffs, dtype=np.int64)[None, :], rel)
    return _div(counts, den, rel > 0)


def unjudged(batch: Batch, cutoffs: Sequence[int]) -> FloatArray:
    unj = batch.valid & (batch.rel < 0)
    counts = _at_cutoffs(batch, np.cumsum(unj, axis=1, dtype=np.int64), cutoffs).astype(np.float64)
    return counts / np.asarray(cutoffs, dtype=np.float64)[None, :]


@per_batch
def ap_sums(batch: Batch) -> FloatArray:
    """Running ``Σ_{i≤k} rel_i · c(i)/i`` (``(queries, depth)``)."""
    fast = compiled_ap_sums(batch.rel, batch.num_ret, batch.level)  # one pass in C, same sums
    if fast is not None:
        return fast
    terms = np.where(batch.isrel, batch.cumrel / batch.ranks[None, :], 0.0)
    return np.cumsum(terms, axis=1)


@per_batch
def mean_ap(batch: Batch) -> FloatArray:
    total = batch.at(ap_sums(batch), batch.depth)
    return _div(total, batch.num_rel, batch.num_rel_ret > 0)


def map_cut(batch: Batch, cutoffs: Sequence[int]) -> FloatArray:
    sums = _at_cutoffs(batch, ap_sums(batch), cutoffs)
    rel = batch.num_rel[:, None]
    return _div(sums, rel, rel > 0)


def r_precision(batch: Batch) -> FloatArray:
    look = np.minimum(batch.num_ret, batch.num_rel)
    return _div(batch.at(batch.cumrel, look), batch.num_rel, look > 0)


def recip_rank(batch: Batch) -> FloatArray:
    found = batch.isrel.any(axis=1)
    first = np.argmax(batch.isrel, axis=1) + 1 if batch.depth else np.ones(batch.n, dtype=np.int64)
    return _div(np.ones(batch.n), first.astype(np.float64), found)


def set_p(batch: Batch) -> FloatArray:
    return _div(batch.num_rel_ret, batch.num_ret, batch.num_ret > 0)


def set_recall(batch: Batch) -> FloatArray:
    return _div(batch.num_rel_ret, batch.num_rel, batch.num_rel > 0)


def set_relative_p(batch: Batch) -> FloatArray:
    den = np.minimum(batch.num_ret, batch.num_rel)
    return _div(batch.num_rel_ret, den, (batch.num_ret > 0) & (batch.num_rel > 0))


def set_map(batch: Batch) -> FloatArray:
    a = batch.num_rel_ret.astype(np.float64)
    den = batch.num_ret.astype(np.float64) * batch.num_rel.astype(np.float64)
    return _div(a * a, den, (batch.num_ret > 0) & (batch.num_rel > 0))


def set_f(batch: Batch, beta: float) -> FloatArray:
    ok = batch.num_rel_ret > 0
    p = _div(batch.num_rel_ret, batch.num_ret, ok)
    r = _div(batch.num_rel_ret, batch.num_rel, ok)
    return _div((beta + 1.0) * p * r, beta * p + r, ok)


def utility(batch: Batch, coefficients: Sequence[float], num_docs: int) -> FloatArray:
    a, ret, rel = batch.num_rel_ret, batch.num_ret, batch.num_rel
    p1, p2, p3, p4 = coefficients
    out: FloatArray = p1 * a + p2 * (ret - a) + p3 * (rel - a) + p4 * (num_docs + a - ret - rel)
    return out


def num_nonrel_judged_ret(batch: Batch) -> FloatArray:
    return (batch.num_ret - batch.num_nonpool - batch.num_unjudged - batch.num_rel_ret).astype(
        np.float64
    )


def yaap(batch: Batch) -> FloatArray:
    total = batch.at(ap_sums(batch), batch.depth)
    rel = batch.num_rel.astype(np.float64)
    return np.array(
        [
            c_log((1.0 + s) / (1.0 + r - s))
            for s, r in zip(total.tolist(), rel.tolist(), strict=True)
        ]
    )
