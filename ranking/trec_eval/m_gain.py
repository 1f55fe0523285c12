"""Graded measures: ndcg, dcg, ideal_dcg, ndcg_cut, ndcg_rel, Rndcg, G, rbp, rbp_resid.

With ``g_i`` the gain of the document at 0-based position ``i`` (:mod:`ranking.trec_eval.gains`),
``I_i`` the ideal ranking's gains, ``DCG(k) = Σ_{i<k} g_i / log2(i + 2)`` (Järvelin &
Kekäläinen, "Cumulated Gain-Based Evaluation of IR Techniques", TOIS 2002) and ``IDCG`` the
same over ``I``:

- **ndcg** = ``DCG(ret) / IDCG(all)``; **ndcg_cut_k** = ``DCG(k) / IDCG(k)`` with the grades
  themselves as gains (parameters are cutoffs); **dcg**, **ideal_dcg** the two sums.
- **ndcg_rel**: the mean, over the ``n`` documents of positive ideal gain, of the ndcg at
  each retrieved document of positive gain, the missing ones counting the final ndcg.
- **Rndcg**: the mean of ndcg at each position where the ideal gain changes, plus at the end
  of a ranking longer than the ideal one by two or more (trec_eval's loop).
- **G**: ``Σ g_i / log2(2 + C_i − S_i) / Σ I``, ``S_i`` the running sum of gains and ``C_i``
  of ``max(I_i, 1)``.
- **rbp** (Moffat & Zobel, "Rank-Biased Precision for Measurement of Retrieval
  Effectiveness", TOIS 2008): ``(1 − p) Σ g_i p^i``, gains rescaled to [0, 1] by ``(g −
  min)/(max − min)`` when one lies outside (trec_eval 10.0 leaves ``min`` and ``max``
  uninitialised; the built binary behaves as if they start at 0, which is what is done
  here); ``p`` = 0.9 or the ``p=`` parameter. **rbp_resid** = ``p^ret + (1 − p) Σ_{unjudged i}
  p^i`` when the ranking has unjudged documents, else 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ranking.trec_eval.fast_merge import (
    compiled_graded_measures,
    compiled_kernels,
    compiled_ndcg_cuts,
    compiled_rbp,
    compiled_rbp_resid,
)
from ranking.trec_eval.gains import Gains, ideal_matrix, result_gains, setup_gains
from ranking.trec_eval.merge import Batch, FloatArray, IntArray, per_batch
from ranking.trec_eval.numeric import log2_table

__all__ = ["dcg_values", "g_measure", "ndcg_cut", "ndcg_rel", "rbp", "rbp_resid", "rndcg"]

Pairs = Sequence[tuple[str, float]]


def _disc(size: int) -> FloatArray:
    """``log2(i + 2)`` for positions ``0 .. size-1``."""
    return log2_table(size + 2)[2:]


def _gains(batch: Batch, pairs: Pairs) -> Gains:
    return setup_gains(pairs, batch.rel_levels.shape[1])


def _cum_dcg(batch: Batch, gains: FloatArray) -> FloatArray:
    disc = _disc(gains.shape[1])
    return np.cumsum(np.where(gains != 0, gains / disc[None, :], 0.0), axis=1)


def _last(cum: FloatArray, k: IntArray) -> FloatArray:
    """``cum`` after ``k`` positions (0 for ``k = 0``)."""
    if cum.shape[1] == 0:
        return np.zeros(len(k))
    idx = np.clip(k - 1, 0, cum.shape[1] - 1)
    return np.where(k > 0, cum[np.arange(len(k)), idx], 0.0)


@per_batch
def _rows(batch: Batch, pairs: Pairs) -> tuple[FloatArray, FloatArray, IntArray]:
    """Result gains, ideal gains, ideal length."""
    gains = _gains(batch, pairs)
    ideal, n_ideal = ideal_matrix(batch, gains, batch.depth)
    return result_gains(batch, gains), ideal, n_ideal


@per_batch
def _parts(
    batch: Batch, pairs: Pairs
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, IntArray]:
    """Result gains, running DCG, ideal gains, running IDCG, ideal length."""
    rg, ideal, n_ideal = _rows(batch, pairs)
    return rg, _cum_dcg(batch, rg), ideal, _cum_dcg(batch, np.where(ideal > 0, ideal, 0.0)), n_ideal


@per_batch
def compiled_graded(batch: Batch, pairs: Pairs) -> FloatArray | None:
    """dcg, ideal_dcg, G, ndcg_rel and Rndcg of every query as ``(queries, 5)``, from one
    walk of each ranking in C (``_rankjoin.graded_measures``, the operations of the numpy
    code below in the same order, so the same doubles); None without the compiled module."""
    if not compiled_kernels():
        return None
    rg, ideal, n_ideal = _rows(batch, pairs)
    disc = _disc(max(rg.shape[1], ideal.shape[1]))
    return compiled_graded_measures(rg, ideal, n_ideal, batch.num_ret, batch.num_rel, disc)


def dcg_values(batch: Batch, pairs: Pairs) -> tuple[FloatArray, FloatArray]:
    """``(DCG(ret), IDCG)``; ndcg is their ratio where IDCG > 0."""
    fast = compiled_graded(batch, pairs)
    if fast is not None:
        return fast[:, 0], fast[:, 1]
    _, rd, _, idc, n_ideal = _parts(batch, pairs)
    return _last(rd, batch.num_ret), _last(idc, n_ideal)


def ndcg_cut(batch: Batch, cutoffs: Sequence[int]) -> FloatArray:
    grades = np.where(batch.valid & (batch.rel > 0), batch.rel, 0).astype(np.float64)
    positive = [(str(level), float(level)) for level in range(batch.rel_levels.shape[1])]
    ideal, n_ideal = ideal_matrix(batch, setup_gains(positive, batch.rel_levels.shape[1]), 1)
    disc = _disc(max(grades.shape[1], ideal.shape[1]))
    fast = compiled_ndcg_cuts(grades, ideal, n_ideal, batch.num_ret, disc, list(cutoffs))
    if fast is not None:
        return fast
    rd = _cum_dcg(batch, grades)
    idc = _cum_dcg(batch, np.where(ideal > 0, ideal, 0.0))
    out = np.zeros((batch.n, len(cutoffs)))
    for j, k in enumerate(cutoffs):
        kk = np.full(batch.n, k, dtype=np.int64)
        dcg = _last(rd, np.minimum(kk, batch.num_ret))
        idcg = _last(idc, np.minimum(kk, n_ideal))
        out[:, j] = np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), dcg)
    return out


def ndcg_rel(batch: Batch, pairs: Pairs) -> FloatArray:
    fast = compiled_graded(batch, pairs)
    if fast is not None:
        return fast[:, 3]
    rg, rd, _, idc, n_ideal = _parts(batch, pairs)
    position = np.arange(batch.depth, dtype=np.int64)[None, :]
    at = np.minimum(position, (n_ideal - 1)[:, None])
    id_at = np.where(
        n_ideal[:, None] > 0, np.take_along_axis(idc, np.clip(at, 0, None), axis=1), 0.0
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(rg > 0, rd / id_at, 0.0)
        total = _last(np.cumsum(terms, axis=1), batch.num_ret)
        counted = (rg > 0).sum(axis=1)
        rd_end, id_end = _last(rd, batch.num_ret), _last(idc, n_ideal)
        total = total + (n_ideal - counted).astype(np.float64) * rd_end / id_end
        return np.where(total > 0, total / n_ideal, 0.0)


def rndcg(batch: Batch, pairs: Pairs) -> FloatArray:
    fast = compiled_graded(batch, pairs)
    if fast is not None:
        return fast[:, 4]
    _, rd, ideal, idc, n_ideal = _parts(batch, pairs)
    size = ideal.shape[1]
    b = np.arange(1, size, dtype=np.int64)
    change = ideal[:, 1:] != ideal[:, :-1]
    k = np.minimum(b[None, :], batch.num_ret[:, None])
    if batch.depth:
        rd_b = np.where(
            k > 0, np.take_along_axis(rd, np.clip(k - 1, 0, batch.depth - 1), axis=1), 0.0
        )
    else:
        rd_b = np.zeros(k.shape)
    id_b = idc[:, : size - 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(change & (id_b > 0), rd_b / id_b, 0.0)
        total = np.cumsum(terms, axis=1)[:, -1] if len(b) else np.zeros(batch.n)
        count = (change & (id_b > 0)).sum(axis=1)
        id_end = _last(idc, n_ideal)
        final = (batch.num_ret >= n_ideal + 2) & (id_end > 0)
        total = np.where(final, total + _last(rd, batch.num_ret) / id_end, total)
        count = count + final
        value = total / count
    return np.where(batch.num_rel > 0, value, 0.0)


def g_measure(batch: Batch, pairs: Pairs) -> FloatArray:
    fast = compiled_graded(batch, pairs)
    if fast is not None:
        return fast[:, 2]
    rg, _, ideal, _, _ = _parts(batch, pairs)
    depth = batch.depth
    cost = np.where(ideal[:, :depth] >= 1.0, ideal[:, :depth], 1.0)
    sum_cost = np.cumsum(cost, axis=1)
    sum_results = np.cumsum(rg, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(rg != 0, rg / np.log2((2 + sum_cost) - sum_results), 0.0)
    total = _last(np.cumsum(terms, axis=1), batch.num_ret)
    sum_ideal = np.cumsum(np.where(ideal > 0, ideal, 0.0), axis=1)[:, -1]
    out = np.zeros(batch.n)
    np.divide(total, sum_ideal, out=out, where=sum_ideal > 0)
    return out


def _persistence(pairs: Pairs) -> float:
    p = 0.9
    for name, value in pairs:
        if name == "p":
            p = float(value)
    return p


def _powers(p: float, depth: int) -> FloatArray:
    """``p^i`` for ``i = 0 .. depth`` by repeated multiplication, as trec_eval does."""
    steps = np.full(depth + 1, p)
    steps[0] = 1.0
    return np.cumprod(steps)


def rbp(batch: Batch, pairs: Pairs) -> FloatArray:
    p = _persistence(pairs)
    gains = _gains(batch, pairs)
    low = -3
    high = max(batch.rel_levels.shape[1], max(gains.levels, default=0) + 1)
    table = gains.lookup(low, high)
    present_level = np.array(
        [lv for lv, fp in zip(gains.levels, gains.from_param, strict=True) if not fp]
    )
    present_value = np.array(
        [v for v, fp in zip(gains.values, gains.from_param, strict=True) if not fp]
    )
    param_values = [v for v, fp in zip(gains.values, gains.from_param, strict=True) if fp]
    low_q = np.full(batch.n, min([0.0, *param_values]))
    high_q = np.full(batch.n, max([0.0, *param_values]))
    for level, value in zip(present_level.tolist(), present_value.tolist(), strict=True):
        has = batch.num_rel_levels > level
        low_q = np.where(has, np.minimum(low_q, value), low_q)
        high_q = np.where(has, np.maximum(high_q, value), high_q)
    param_levels = [lv for lv, fp in zip(gains.levels, gains.from_param, strict=True) if fp]
    powers = _powers(p, batch.depth)
    # the same operations a query at a time in C (_rankjoin.rbp): the same doubles
    fast = compiled_rbp(
        batch.rel,
        batch.num_ret,
        batch.num_rel_levels,
        table,
        low,
        np.isin(np.arange(low, high + 1), param_levels),
        (low_q < 0) | (high_q > 1),
        (low_q, high_q),
        powers,
        p,
    )
    if fast is not None:
        return fast
    grades = np.clip(batch.rel, low, high)
    g = table[grades - low]
    # a grade missing from the query's gain list has gain 0, not rescaled
    listed = (grades >= 0) & (grades < batch.num_rel_levels[:, None])
    if param_levels:
        listed |= np.isin(grades, param_levels)
    rescale = ((low_q < 0) | (high_q > 1))[:, None] & listed
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(rescale, (g - low_q[:, None]) / (high_q - low_q)[:, None], g)
    g = np.where(batch.valid, g, 0.0)
    total = _last(
        np.cumsum(np.where(g != 0, g * powers[None, : batch.depth], 0.0), axis=1), batch.num_ret
    )
    return (1.0 - p) * total


def rbp_resid(batch: Batch, pairs: Pairs) -> FloatArray:
    p = _persistence(pairs)
    powers = _powers(p, batch.depth)
    fast = compiled_rbp_resid(batch.rel, batch.num_ret, powers, p)
    if fast is not None:
        return fast
    unj = batch.valid & (batch.rel < 0)
    total = _last(np.cumsum(np.where(unj, powers[None, : batch.depth], 0.0), axis=1), batch.num_ret)
    end = powers[batch.num_ret]
    return np.where(unj.any(axis=1), end + (1 - p) * total, 0.0)
