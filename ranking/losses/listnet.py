"""ListNet (Cao et al. 2007; docs/ranking.md#listnet): top-one and exact permutation forms.

Top-one: ``P_s(j) = exp(s_j)/Σ_t exp(s_t)``, target ``P_y(j) = exp(y_j)/Σ_t exp(y_t)``
(ψ = identity on the labels), ``L = −Σ_j P_y(j) log P_s(j)``, ``∂L/∂s_j = P_s(j) − P_y(j)``.

Permutation form: ``L = −Σ_π P_y(π) log P_s(π)`` over all orderings π of the query's documents
with Plackett–Luce ``P(π) = Π_j exp(v_{π(j)})/Σ_{l≥j} exp(v_{π(l)})``; exponential in n, so it
is offered for n ≤ 6 only (a test oracle; docs/ranking.md#listnet).
"""

from __future__ import annotations

import itertools

import numpy as np

from ranking.losses._target import Target, as_scores, as_subset, as_target, finish

__all__ = [
    "MAX_PERMUTATION_DOCS",
    "listnet_permutation_loss",
    "listnet_top_one_loss",
    "softmax_cross_entropy",
]

MAX_PERMUTATION_DOCS = 6


def _masked_log_softmax(v: np.ndarray, mask: np.ndarray) -> np.ndarray:
    x = np.where(mask, v, -np.inf)
    m = np.max(x, axis=1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        lse = m + np.log(np.sum(np.where(mask, np.exp(x - m), 0.0), axis=1, keepdims=True))
    lse = np.where(np.isfinite(lse), lse, 0.0)
    return np.where(mask, np.where(mask, v, 0.0) - lse, 0.0)


def softmax_cross_entropy(
    scores: np.ndarray, labels: np.ndarray, subset: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per-query top-one cross-entropy over the documents in ``subset`` and its gradient.

    Queries whose subset is empty contribute 0. Returns ``(per_query (Q,), grad (Q, L))``.
    """
    log_ps = _masked_log_softmax(scores, subset)
    log_py = _masked_log_softmax(labels, subset)
    py = np.where(subset, np.exp(log_py), 0.0)
    per_query = -np.sum(py * log_ps, axis=1)
    grad = np.where(subset, np.exp(log_ps) - py, 0.0)
    return per_query, grad


def listnet_top_one_loss(
    scores: np.ndarray,
    target: Target | np.ndarray,
    mask: np.ndarray | None = None,
    *,
    reduction: str = "mean",
) -> tuple[float, np.ndarray]:
    """Top-one ListNet (Cao et al. 2007) over every real document of a query.

    ``L = −Σ_j P_y(j) log P_s(j)`` with ``P_s = softmax(s)``, ``P_y = softmax(labels)``
    (ψ = identity); ``∂L/∂s_j = P_s(j) − P_y(j)``.

    Shapes: ``scores`` and labels ``(Q, L)`` (or ``(L,)`` for one query), ``mask`` ``(Q, L)``
    bool; returns ``(value, grad)``: the mean (``reduction``) of the per-query losses and
    ``∂value/∂scores`` shaped like ``scores``, exactly 0 at padding.
    """
    t = as_target(target, mask)
    s = as_scores(scores, t)
    per_query, grad = softmax_cross_entropy(s, t.labels, t.mask)
    return finish(per_query, grad, reduction, np.shape(scores))


def _pl_log_prob(v: np.ndarray, perms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log P(π) under Plackett–Luce for each row of ``perms`` and its gradient w.r.t. ``v``."""
    vp = v[perms]  # (P, n)
    lse = np.logaddexp.accumulate(vp[:, ::-1], axis=1)[:, ::-1]
    logp = np.sum(vp - lse, axis=1)
    # ∂ log P/∂ v_{π(m)} = 1 − Σ_{j≤m} exp(v_{π(m)} − lse_j)
    g_sorted = 1.0 - np.exp(vp + np.logaddexp.accumulate(-lse, axis=1))
    grad = np.zeros_like(vp)
    np.put_along_axis(grad, perms, g_sorted, axis=1)
    return logp, grad


def listnet_permutation_loss(
    scores: np.ndarray,
    target: Target | np.ndarray,
    mask: np.ndarray | None = None,
    *,
    subset: np.ndarray | None = None,
    reduction: str = "mean",
) -> tuple[float, np.ndarray]:
    """Exact permutation-probability ListNet (Cao et al. 2007), n ≤ 6.

    ``L = −Σ_π P_y(π) log P_s(π)`` over all orderings π with Plackett–Luce
    ``P_v(π) = Π_j exp(v_{π(j)})/Σ_{l≥j} exp(v_{π(l)})``, ``v`` = labels (target) or scores.

    ``subset`` (``(Q, L)`` boolean, default the mask) restricts the permutations to those
    documents, e.g. the top-k set T of FocusedNet.

    Shapes: ``scores`` and labels ``(Q, L)`` (or ``(L,)`` for one query), ``mask`` ``(Q, L)``
    bool; returns ``(value, grad)``: the mean (``reduction``) of the per-query losses and
    ``∂value/∂scores`` shaped like ``scores``, exactly 0 at padding.
    """
    t = as_target(target, mask)
    s = as_scores(scores, t)
    sub = as_subset(subset, t, t.mask)
    per_query = np.zeros(t.shape[0])
    grad = np.zeros(t.shape)
    for q in range(t.shape[0]):
        idx = np.flatnonzero(sub[q])
        n = idx.size
        if n > MAX_PERMUTATION_DOCS:
            raise ValueError(
                f"query {q} has {n} documents; the exact permutation form is limited to "
                f"{MAX_PERMUTATION_DOCS} (n! orderings)"
            )
        if n < 2:
            continue
        perms = np.array(list(itertools.permutations(range(n))), dtype=np.int64)
        log_py, _ = _pl_log_prob(t.labels[q, idx], perms)
        log_ps, g = _pl_log_prob(s[q, idx], perms)
        py = np.exp(log_py)
        per_query[q] = -np.sum(py * log_ps)
        grad[q, idx] = -(py @ g)
    return finish(per_query, grad, reduction, np.shape(scores))
