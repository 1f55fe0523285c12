"""Expected Reciprocal Rank, the cascade-model metric (Chapelle et al. 2009;
docs/metrics.md#err)."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from ranking.metrics.chunking import row_chunked
from ranking.metrics.kernel import (
    F64,
    Batch,
    Empty,
    KBeyond,
    Ties,
    apply_empty,
    apply_k_beyond,
    ideal_source,
    prepare,
    rowdot,
)


def _err_r_max(r_max: Any, top: F64, b: Batch) -> F64:
    """r_max per query (Q,): the query's highest label ``top`` for "query", else the given
    number(s), which no label of the list may exceed."""
    if isinstance(r_max, str):
        if r_max != "query":
            raise ValueError(f"r_max must be 'query', a number or a (Q,) array, got {r_max!r}")
        return np.maximum(top, 0.0)
    if isinstance(r_max, bool):
        raise ValueError(f"r_max must be 'query', a number or a (Q,) array, got {r_max!r}")
    rmax = np.broadcast_to(np.asarray(r_max, dtype=np.float64), top.shape).copy()
    if not np.isfinite(rmax).all():
        raise ValueError("r_max must be finite")
    over = np.where(b.mask, b.labels, -np.inf).max(axis=1, initial=-np.inf) > rmax
    if over.any():
        q = int(np.flatnonzero(over)[0])
        raise ValueError(f"query row {q} has a label above r_max={rmax[q]:g}")
    return rmax


@row_chunked
def err(
    labels: ArrayLike,
    scores: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    at: int | None = None,
    r_max: Literal["query"] | float | ArrayLike = "query",
    ties: Ties = "stable",
    empty: Empty = 0,
    k_beyond: KBeyond = "clip",
    ideal_labels: ArrayLike | None = None,
    ideal_mask: ArrayLike | None = None,
    docids: ArrayLike | None = None,
) -> F64:
    """Expected Reciprocal Rank (Chapelle et al. 2009, CIKM), per query, shape (Q,).

    ERR@l = Σ_{j=1}^{min(l,n)} (1/j) · R_{π(j)} · Π_{i<j} (1 − R_{π(i)}),
    R_d = (2^{r_d} − 1) / 2^{r_max}.

    ``labels``/``scores``/``mask``: (Q, L) or (L,). ``r_max="query"``: the highest label of
    the query, as in Niu et al. 2012 §3.3 (docs/metrics.md#err): of ``ideal_labels`` ``(Q, M)``
    (all judged documents) when given, else of the list; a number or a (Q,) array: the scale
    maximum (4 in Chapelle's paper, gdeval and RankLib; labels above it are an error). Not
    normalised. A query with no positive label (in ``ideal_labels`` when given) gets
    ``empty`` (default 0).
    """
    b, order, _, m = prepare(labels, scores, mask, at, ties, docids, nonlinear="ERR")
    il, im = ideal_source(b, ideal_labels, ideal_mask)
    top = np.where(im, il, -np.inf).max(axis=1, initial=-np.inf)
    top = np.where(np.isfinite(top), top, 0.0)
    rmax = _err_r_max(r_max, top, b)
    lab = b.labels if b.full else np.where(b.mask, b.labels, 0.0)
    r = np.maximum(np.take_along_axis(lab, order[:, :m], axis=1), 0.0)
    prob = (np.exp2(r) - 1.0) / np.exp2(rmax)[:, None]
    stop_before = np.ones_like(prob)
    if m > 1:
        stop_before[:, 1:] = np.cumprod(1.0 - prob[:, :-1], axis=1)
    values = rowdot(prob * stop_before, 1.0 / np.arange(1, m + 1, dtype=np.float64))
    values = apply_empty(values, top <= 0.0, empty)
    return apply_k_beyond(values, b, at, k_beyond)
