"""Measures that treat unjudged documents apart: bpref, gm_bpref, infAP, binG, gm_map.

For one query with ``R`` relevant and ``N`` judged non-relevant documents (grades ``0 ..
-l - 1``), walking the ranking and skipping documents outside the pool (grade -1):

- **bpref** (Buckley & Voorhees, "Retrieval Evaluation with Incomplete Information", SIGIR
  2004): ``(1/R) Σ_{relevant r} (1 − min(n_r, R) / min(N, R))``, ``n_r`` = judged
  non-relevant documents ranked above ``r`` (the term is 1 when ``n_r = 0``).
- **infAP** (Yilmaz & Aslam, "Estimating Average Precision with Incomplete and Imperfect
  Judgments", CIKM 2006): for the relevant document at 0-based position ``j`` with ``r``
  relevant, ``n`` judged non-relevant and ``u`` pooled-unjudged (grade -2) documents above it,
  ``1/(j+1) + (j/(j+1)) · ((r + n + u)/j) · ((r + ε)/(r + n + 2ε))`` (1 at ``j = 0``),
  ``ε = 0.00001``; summed and divided by ``R``.
- **binG** (trec_eval's experimental binary G): ``(1/R) Σ_{relevant at 0-based i}
  1 / log2(2 + non-relevant above it)``.
- **gm_map**, **gm_bpref**: the query's ``log(max(value, 0.00001))``; the summary is
  ``exp`` of their mean (a geometric mean).
"""

from __future__ import annotations

import numpy as np

from ranking.trec_eval.fast_merge import compiled_judged_measures, compiled_log_floor
from ranking.trec_eval.m_cutoffs import mean_ap
from ranking.trec_eval.merge import UNJUDGED, Batch, FloatArray, per_batch
from ranking.trec_eval.numeric import MIN_GEO_MEAN, c_log, log2_table

__all__ = ["bin_g", "bpref", "gm_bpref", "gm_map", "inf_ap", "log_floor"]

INFAP_EPSILON = 0.00001


def _final(cum: FloatArray, batch: Batch) -> FloatArray:
    return cum[:, -1] if batch.depth else np.zeros(batch.n)


@per_batch
def compiled_judged(batch: Batch) -> FloatArray | None:
    """bpref, infAP and binG of every query as ``(queries, 3)``, from one walk of each
    ranking in C (``_rankjoin.judged_measures``, the operations of the numpy code below in
    the same order, so the same doubles); None without the compiled module."""
    return compiled_judged_measures(
        batch.rel, batch.num_ret, batch.num_rel, batch.num_nonrel, batch.level
    )


@per_batch
def bpref(batch: Batch) -> FloatArray:
    fast = compiled_judged(batch)
    if fast is not None:
        return fast[:, 0]
    rel_count = batch.num_rel
    nonrel_above = np.cumsum(batch.judged_nonrel, axis=1, dtype=np.int64)
    den = np.minimum(batch.num_nonrel, rel_count)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        part = 1.0 - np.minimum(nonrel_above, rel_count[:, None]) / den
    terms = np.where(batch.judged_rel, np.where(nonrel_above > 0, part, 1.0), 0.0)
    total = _final(np.cumsum(terms, axis=1), batch)
    out = total.copy()
    np.divide(total, rel_count, out=out, where=rel_count > 0)
    return out


def inf_ap(batch: Batch) -> FloatArray:
    fast = compiled_judged(batch)
    if fast is not None:
        return fast[:, 1]
    rel_above = np.cumsum(batch.judged_rel, axis=1, dtype=np.int64) - 1
    nonrel = np.cumsum(batch.judged_nonrel, axis=1, dtype=np.int64)
    unjudged = np.cumsum(batch.valid & (batch.rel == UNJUDGED), axis=1, dtype=np.int64)
    fj = np.arange(batch.depth, dtype=np.float64)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        term = 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((rel_above + nonrel + unjudged) / fj) * (
            (rel_above + INFAP_EPSILON) / ((rel_above + nonrel) + 2 * INFAP_EPSILON)
        )
    term = np.where(fj == 0, 1.0, term)
    total = _final(np.cumsum(np.where(batch.judged_rel, term, 0.0), axis=1), batch)
    out = total.copy()
    np.divide(total, batch.num_rel, out=out, where=batch.num_rel > 0)
    return out


def bin_g(batch: Batch) -> FloatArray:
    fast = compiled_judged(batch)
    if fast is not None:
        return fast[:, 2]
    position = np.arange(batch.depth, dtype=np.int64)[None, :]
    arg = 3 + position - batch.cumrel
    table = log2_table(batch.depth + 4)
    with np.errstate(divide="ignore"):
        terms = np.where(batch.isrel, 1.0 / table[np.clip(arg, 0, batch.depth + 3)], 0.0)
    total = _final(np.cumsum(terms, axis=1), batch)
    out = np.zeros(batch.n)
    np.divide(total, batch.num_rel, out=out, where=batch.num_rel_ret > 0)
    return out


def log_floor(values: FloatArray) -> FloatArray:
    """libm's ``log`` of each value, :data:`MIN_GEO_MEAN` where it is not above that (the
    geometric means' terms); in C when it is there (a Python call a query otherwise)."""
    fast = compiled_log_floor(values, MIN_GEO_MEAN)
    if fast is not None:
        return fast
    return np.array(
        [c_log(v if v > MIN_GEO_MEAN else MIN_GEO_MEAN) for v in values.tolist()], dtype=np.float64
    )


def gm_map(batch: Batch) -> FloatArray:
    return log_floor(mean_ap(batch))


def gm_bpref(batch: Batch) -> FloatArray:
    return log_floor(bpref(batch))
