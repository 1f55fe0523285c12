"""The ListMLE family: ListMLE, top-k ListMLE, p-ListMLE, W-ListMLE (docs/ranking.md#listmle).

All four are position-weighted Plackett–Luce negative log-likelihoods of the truth order y:

    L(s; y) = Σ_{j=1}^{n} α_j · [ −s_{y(j)} + log Σ_{t=j}^{n} exp(s_{y(t)}) ]

with gradient, for the item at truth position m,

    ∂L/∂s_{y(m)} = −α_m + Σ_{j=1}^{m} α_j · exp(s_{y(m)}) / Σ_{t=j}^{n} exp(s_{y(t)}).

==============  ======================================================  ======================
loss            α_j                                                      reference
==============  ======================================================  ======================
ListMLE         1                                                        Xia et al. 2008
top-k ListMLE   [j ≤ k]                                                  Xia et al. 2009 eq. 10
p-ListMLE       2^{n−j} − 1, normalised by 2^{n−1} − 1 (default)         Lan et al. 2014 eq. 9
W-ListMLE       G(l(y(j))) · D(j), j ≤ n − 1, D(j) = 0 beyond a cutoff    Chen et al. 2009 §4
==============  ======================================================  ======================

Numerics: the reverse cumulative log-sum-exp and the cumulative gradient sums are computed with
``np.logaddexp.accumulate`` in log space, so neither overflows for any score range.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ranking.losses._target import Target, as_scores, as_target, reduce_queries

__all__ = [
    "listmle_loss",
    "p_listmle_alpha",
    "p_listmle_loss",
    "topk_listmle_loss",
    "w_listmle_loss",
    "weighted_listmle",
]


def weighted_listmle(
    scores: np.ndarray, target: Target, alpha: np.ndarray, reduction: str = "mean"
) -> tuple[float, np.ndarray]:
    """Plackett–Luce NLL with per-position weights ``alpha`` (``(Q, L)``, truth positions).

    ``alpha[q, j]`` weighs the term of truth position ``j`` (0-based) of query ``q``; weights at
    padded positions are ignored. Returns ``(value, grad)`` with grad of shape ``(Q, L)`` in
    the original (unsorted) document columns.
    """
    s = scores
    n = target.n_docs
    length = s.shape[1]
    valid = np.arange(length)[None, :] < n[:, None]  # sorted positions that hold a document
    ss = np.where(valid, np.take_along_axis(s, target.order, axis=1), -np.inf)
    a = np.where(valid, np.asarray(alpha, dtype=np.float64), 0.0)
    # lse[j] = log Σ_{t ≥ j} exp(ss[t]); −inf at padding.
    lse = np.logaddexp.accumulate(ss[:, ::-1], axis=1)[:, ::-1]
    terms = np.where(valid, a * (np.where(valid, lse, 0.0) - np.where(valid, ss, 0.0)), 0.0)
    per_query = terms.sum(axis=1)
    # acc[m] = log Σ_{j ≤ m} α_j exp(−lse_j); α_j = 0 contributes −inf.
    with np.errstate(divide="ignore"):
        log_a = np.where(valid & (a > 0), np.log(np.where(a > 0, a, 1.0)), -np.inf)
    if np.any(valid & (a < 0)):
        raise ValueError("position weights alpha must be non-negative")
    acc = np.logaddexp.accumulate(
        np.where(valid, log_a - np.where(valid, lse, 0.0), -np.inf), axis=1
    )
    with np.errstate(invalid="ignore"):
        g_sorted = np.where(valid, -a + np.exp(np.where(valid, ss, 0.0) + acc), 0.0)
    grad = np.zeros_like(s)
    np.put_along_axis(grad, target.order, g_sorted, axis=1)
    value, scale = reduce_queries(per_query, reduction)
    return value, grad * scale


def _positions(target: Target) -> np.ndarray:
    return np.broadcast_to(np.arange(target.shape[1])[None, :], target.shape)


def listmle_loss(
    scores: np.ndarray,
    target: Target | np.ndarray,
    mask: np.ndarray | None = None,
    *,
    reduction: str = "mean",
) -> tuple[float, np.ndarray]:
    """ListMLE (Xia et al. 2008, "Listwise Approach to Learning to Rank"): ``−log P(y | s)``
    under Plackett–Luce.

    ``L = Σ_{j=1}^{n} [−s_{y(j)} + log Σ_{t=j}^{n} exp(s_{y(t)})]``. The truth order is the
    target's ``order`` (stable label sort unless a seeded random total order was given).

    Shapes: ``scores`` and labels ``(Q, L)`` (or ``(L,)`` for one query), ``mask`` ``(Q, L)``
    bool; returns ``(value, grad)``: the mean (``reduction``) of the per-query losses and
    ``∂value/∂scores`` shaped like ``scores``, exactly 0 at padding.
    """
    t = as_target(target, mask)
    s = as_scores(scores, t)
    value, grad = weighted_listmle(s, t, np.ones(t.shape), reduction)
    return value, grad.reshape(np.shape(scores))


def topk_listmle_loss(
    scores: np.ndarray,
    target: Target | np.ndarray,
    mask: np.ndarray | None = None,
    *,
    k: int = 10,
    reduction: str = "mean",
) -> tuple[float, np.ndarray]:
    """Top-k ListMLE (Xia et al. 2009, "Statistical Consistency of Top-k Ranking", eq. 10).

    ``L = Σ_{j=1}^{k} [−s_{y(j)} + log Σ_{t=j}^{n} exp(s_{y(t)})]``: the denominators run over
    every remaining item, so the value does not depend on the order below position k.

    Shapes: ``scores`` and labels ``(Q, L)`` (or ``(L,)`` for one query), ``mask`` ``(Q, L)``
    bool; returns ``(value, grad)``: the mean (``reduction``) of the per-query losses and
    ``∂value/∂scores`` shaped like ``scores``, exactly 0 at padding.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    t = as_target(target, mask)
    s = as_scores(scores, t)
    alpha = (_positions(t) < k).astype(np.float64)
    value, grad = weighted_listmle(s, t, alpha, reduction)
    return value, grad.reshape(np.shape(scores))


def p_listmle_alpha(
    n_docs: np.ndarray, length: int, alpha: str = "normalized", k: int = 10
) -> NDArray[np.float64]:
    """Position weights of p-ListMLE, ``(Q, length)`` (docs/ranking.md#listmle).

    - ``"paper"``: Lan et al.'s ``α(i) = 2^{n−i} − 1`` (overflows beyond n ≈ 1000; fails the
      paper's own toy example).
    - ``"normalized"`` (default): ``α̃(i) = (2^{n−i} − 1)/(2^{n−1} − 1)``, the same minimiser,
      computed as ``(2^{1−i} − 2^{1−n})/(1 − 2^{1−n})`` so it never overflows; for n = 1 the
      only term is zero anyway.
    - ``"topk"``: ``α(i) = (2^{k+1−i} − 1)·[i ≤ k]`` (the κ-gain of position i).
    """
    i = np.arange(1, length + 1, dtype=np.float64)[None, :]
    n = np.asarray(n_docs, dtype=np.float64)[:, None]
    if alpha == "paper":
        return np.exp2(np.maximum(n - i, 0.0)) - 1.0
    if alpha == "normalized":
        tail = np.exp2(1.0 - n)
        denom = np.where(n > 1, 1.0 - tail, 1.0)
        # numpy's stubs lose the dtype through exp2 and where; the values are float64.
        normalized: NDArray[np.float64] = np.maximum(np.exp2(1.0 - i) - tail, 0.0) / denom
        return normalized
    if alpha == "topk":
        gains: NDArray[np.float64] = np.where(
            i <= k, np.exp2(np.maximum(k + 1 - i, 0.0)) - 1.0, 0.0
        )
        return gains * np.ones_like(n)
    raise ValueError(f"alpha must be 'normalized', 'paper', 'topk' or an array, got {alpha!r}")


def p_listmle_loss(
    scores: np.ndarray,
    target: Target | np.ndarray,
    mask: np.ndarray | None = None,
    *,
    alpha: str | np.ndarray = "normalized",
    k: int = 10,
    reduction: str = "mean",
) -> tuple[float, np.ndarray]:
    """Position-aware p-ListMLE (Lan et al. 2014, "Position-Aware ListMLE", eq. 9).

    ``L_p = Σ_{i=1}^{n} α(i)·[−s_{y(i)} + log Σ_{j=i}^{n} exp(s_{y(j)})]`` with α strictly
    decreasing; ``alpha`` is a scheme name (see :func:`p_listmle_alpha`) or explicit weights,
    ``(L,)`` or ``(Q, L)``, by truth position.

    Shapes: ``scores`` and labels ``(Q, L)`` (or ``(L,)`` for one query), ``mask`` ``(Q, L)``
    bool; returns ``(value, grad)``: the mean (``reduction``) of the per-query losses and
    ``∂value/∂scores`` shaped like ``scores``, exactly 0 at padding.
    """
    t = as_target(target, mask)
    s = as_scores(scores, t)
    if isinstance(alpha, str):
        a = p_listmle_alpha(t.n_docs, t.shape[1], alpha, k)
    else:
        a = np.asarray(alpha, dtype=np.float64)
        if a.ndim == 1:
            if a.shape[0] < t.shape[1]:
                a = np.concatenate([a, np.zeros(t.shape[1] - a.shape[0])])
            a = np.broadcast_to(a[None, : t.shape[1]], t.shape)
        if a.shape != t.shape:
            raise ValueError(f"alpha shape {a.shape} does not match the target {t.shape}")
    value, grad = weighted_listmle(s, t, a, reduction)
    return value, grad.reshape(np.shape(scores))


def w_listmle_loss(
    scores: np.ndarray,
    target: Target | np.ndarray,
    mask: np.ndarray | None = None,
    *,
    cutoff: int | None = None,
    reduction: str = "mean",
) -> tuple[float, np.ndarray]:
    """W-ListMLE (Chen et al. 2009, "Ranking Measures and Loss Functions in Learning to Rank", §4).

    ``L = Σ_{s=1}^{n−1} G(l(y(s)))·D(s)·[−s_{y(s)} + ln Σ_{i=s}^{n} exp(s_{y(i)})]`` with
    ``G(r) = 2^r − 1`` and ``D(s) = 1/log2(1 + s)``, ``D(s) = 0`` for ``s > cutoff``.
    Objects with label 0 get weight 0.

    Shapes: ``scores`` and labels ``(Q, L)`` (or ``(L,)`` for one query), ``mask`` ``(Q, L)``
    bool; returns ``(value, grad)``: the mean (``reduction``) of the per-query losses and
    ``∂value/∂scores`` shaped like ``scores``, exactly 0 at padding.
    """
    t = as_target(target, mask)
    s = as_scores(scores, t)
    pos = _positions(t) + 1.0
    sorted_labels = np.take_along_axis(t.labels, t.order, axis=1)
    alpha = (np.exp2(sorted_labels) - 1.0) / np.log2(1.0 + pos)
    if cutoff is not None:
        alpha = np.where(pos <= cutoff, alpha, 0.0)
    value, grad = weighted_listmle(s, t, alpha, reduction)
    return value, grad.reshape(np.shape(scores))
