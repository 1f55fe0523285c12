"""Structural SVM hinges: SVM-MAP (Yue et al. 2007) and the NDCG hinge of FocusedSVM option A.

Both return the structural hinge ``ξ = max_z [Δ(y, z) + wᵀΨ(z) − wᵀΨ(y)]`` per query with the
most violated ordering z found exactly, and its subgradient w.r.t. the scores (``s = Xw`` so
``wᵀΨ`` is linear in the scores). The regulariser lives in the solver
(:mod:`ranking.learners.optim`).
"""

from __future__ import annotations

import numpy as np

from ranking.losses._target import Target, as_scores, as_subset, as_target, finish

__all__ = ["ndcg_hinge_terms", "ndcg_structural_hinge_loss", "svm_map_loss"]


def _sorted_block(s: np.ndarray, member: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Columns of ``member`` documents sorted by descending score (stable), padded.

    Returns ``(columns (Q, M), scores (Q, M), valid (Q, M))`` with M = max members per query.
    """
    count = member.sum(axis=1)
    width = max(int(count.max(initial=0)), 1)
    key = np.where(member, -s, np.inf)
    cols = np.argsort(key, axis=1, kind="stable")[:, :width]
    valid = np.arange(width)[None, :] < count[:, None]
    return cols, np.where(valid, np.take_along_axis(s, cols, axis=1), 0.0), valid


_BLOCK = 48


def _svm_map_block(
    s: np.ndarray, rel: np.ndarray, irr: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """SVM-MAP hinge and subgradient for a block of queries (see :func:`svm_map_loss`)."""
    rcols, rs, rvalid = _sorted_block(s, rel)
    ncols, ns, nvalid = _sorted_block(s, irr)
    p = rvalid.sum(axis=1).astype(np.float64)
    n = nvalid.sum(axis=1).astype(np.float64)
    active = (p > 0) & (n > 0)
    pp = np.where(active, p, 1.0)[:, None, None]
    nn = np.where(active, n, 1.0)[:, None, None]
    i = np.arange(1, rs.shape[1] + 1, dtype=np.float64)[None, :, None]
    j = np.arange(1, ns.shape[1] + 1, dtype=np.float64)[None, None, :]
    d_ap = i / (i + j) - i / (i + j - 1.0)
    b = -d_ap / pp - 2.0 * (rs[:, :, None] - ns[:, None, :]) / (pp * nn)
    valid = rvalid[:, :, None] & nvalid[:, None, :] & active[:, None, None]
    b = np.where(valid, b, 0.0)
    # suffix[q, a, j] = Σ_{i > a} b[q, i, j] for a = 0..M⁺ (row M⁺ is the empty sum).
    suffix = np.concatenate(
        [np.cumsum(b[:, ::-1, :], axis=1)[:, ::-1, :], np.zeros((b.shape[0], 1, b.shape[2]))],
        axis=1,
    )
    m_plus = suffix.shape[1] - 1
    # Ties go to the largest a (the least violating placement).
    a = m_plus - np.argmax(suffix[:, ::-1, :], axis=1)  # (Q, M⁻)
    a = np.minimum(a, p[:, None].astype(np.int64))
    best = np.take_along_axis(suffix, a[:, None, :], axis=1)[:, 0, :]
    per_query = np.where(active, np.maximum(np.where(nvalid, best, 0.0).sum(axis=1), 0.0), 0.0)
    # Gradient: ∂/∂s⁺_i = −2/(PN)·#{j: a_j < i}; ∂/∂s⁻_j = 2/(PN)·(P − a_j).
    coef = np.where(active, 2.0 / (np.where(active, p, 1.0) * np.where(active, n, 1.0)), 0.0)
    below = (a[:, None, :] < i[:, :, 0][:, :, None]) & nvalid[:, None, :]
    g_rel = -coef[:, None] * below.sum(axis=2) * rvalid
    g_irr = coef[:, None] * (p[:, None] - a) * nvalid
    ngrad = np.zeros_like(s)
    np.put_along_axis(ngrad, ncols, g_irr, axis=1)
    rgrad = np.zeros_like(s)
    np.put_along_axis(rgrad, rcols, g_rel, axis=1)
    # Padding slots of one block hold zeros and may hit columns of the other class, so each
    # class keeps only its own columns.
    return per_query, np.where(rel, rgrad, np.where(irr, ngrad, 0.0))


def svm_map_loss(
    scores: np.ndarray,
    target: Target | np.ndarray,
    mask: np.ndarray | None = None,
    *,
    relevant_above: float = 0.0,
    reduction: str = "mean",
) -> tuple[float, np.ndarray]:
    """SVM-MAP structural hinge (Yue, Finley, Radlinski & Joachims, SIGIR 2007).

    Binary relevance: label > ``relevant_above``. With ``P = |C⁺|``, ``N = |C⁻|``,
    ``Ψ(x, ŷ) = 1/(PN) Σ_{i∈C⁺} Σ_{j∈C⁻} ŷ_ij (x_i − x_j)`` and ``Δ = 1 − AP(ŷ)``:

        ξ = max_ŷ [1 − AP(ŷ) + wᵀΨ(ŷ) − wᵀΨ(y*)].

    Yue's greedy argument: with both classes in descending score order, place the j-th
    irrelevant document after ``a_j`` relevant ones. Then
    ``1 − AP = −(1/P) Σ_j Σ_{i>a_j} (i/(i+j) − i/(i+j−1))`` and
    ``wᵀΨ(ŷ) − wᵀΨ(y*) = −2/(PN) Σ_j Σ_{i>a_j} (s⁺_i − s⁻_j)``, so the objective splits into
    independent per-j suffix sums, each maximised over ``a_j ∈ {0..P}`` (the maximisers are
    monotone in j, Yue et al. Lemma 1). Queries without a relevant or an irrelevant document
    have ξ = 0.

    Shapes: ``scores`` and labels ``(Q, L)`` (or ``(L,)`` for one query), ``mask`` ``(Q, L)``
    bool; returns ``(value, grad)``: the mean (``reduction``) of the per-query losses and
    ``∂value/∂scores`` shaped like ``scores``, exactly 0 at padding.
    """
    t = as_target(target, mask)
    s = as_scores(scores, t)
    rel = t.mask & (t.labels > relevant_above)
    irr = t.mask & ~rel
    per_query = np.zeros(s.shape[0])
    grad = np.zeros_like(s)
    # Queries in blocks of similar |C⁺|·|C⁻| so the (block, P, N) work arrays stay small.
    work = rel.sum(axis=1) * irr.sum(axis=1)
    order = np.argsort(work, kind="stable")
    order = order[work[order] > 0]
    for start in range(0, order.size, _BLOCK):
        rows = order[start : start + _BLOCK]
        per_query[rows], grad[rows] = _svm_map_block(s[rows], rel[rows], irr[rows])
    return finish(per_query, grad, reduction, np.shape(scores))


def ndcg_hinge_terms(s: np.ndarray, t: Target, subset: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-query NDCG structural hinge over ``subset`` and its subgradient, ``(Q,)``, ``(Q, L)``.

    See :func:`ndcg_structural_hinge_loss` for the formula.
    """
    length = s.shape[1]
    count = subset.sum(axis=1)
    width = max(int(count.max(initial=0)), 1)
    pos = np.empty(t.shape, dtype=np.int64)
    np.put_along_axis(pos, t.order, np.broadcast_to(np.arange(length), t.shape), axis=1)
    # Truth order restricted to the subset, and the model's loss-augmented order.
    y_cols = np.argsort(np.where(subset, pos, length + 1), axis=1, kind="stable")[:, :width]
    valid = np.arange(width)[None, :] < count[:, None]
    disc = 1.0 / np.log2(2.0 + np.arange(width, dtype=np.float64))[None, :]
    gain = np.exp2(t.labels) - 1.0
    y_gain = np.where(valid, np.take_along_axis(gain, y_cols, axis=1), 0.0)
    ideal = np.sum(np.sort(y_gain, axis=1)[:, ::-1] * disc, axis=1)
    norm = np.where(ideal > 0, ideal, 1.0)
    c = s - gain / norm[:, None]
    z_cols = np.argsort(np.where(subset, -c, np.inf), axis=1, kind="stable")[:, :width]
    aug = 1.0 + np.sum(np.where(valid, np.take_along_axis(c, z_cols, axis=1), 0.0) * disc, axis=1)
    truth = np.sum(np.where(valid, np.take_along_axis(s, y_cols, axis=1), 0.0) * disc, axis=1)
    live = (count >= 2) & (ideal > 0)
    per_query = np.where(live, np.maximum(aug - truth, 0.0), 0.0)
    on = (per_query > 0)[:, None] & valid
    grad_z = np.zeros_like(s)
    np.put_along_axis(grad_z, z_cols, np.where(on, disc, 0.0), axis=1)
    grad_y = np.zeros_like(s)
    np.put_along_axis(grad_y, y_cols, np.where(on, disc, 0.0), axis=1)
    grad = np.where(subset, grad_z - grad_y, 0.0)
    return per_query, grad


def ndcg_structural_hinge_loss(
    scores: np.ndarray,
    target: Target | np.ndarray,
    mask: np.ndarray | None = None,
    *,
    subset: np.ndarray | None = None,
    reduction: str = "mean",
) -> tuple[float, np.ndarray]:
    """Structural hinge with a position map and an NDCG loss (Chapelle, Le & Smola 2007 style).

    FocusedSVM option A's list part (docs/ranking.md#structural). Over the documents D' of
    ``subset`` (default: T = κ-label > 0) with truth order y:

    - ``Ψ(z) = Σ_j A(j)·x_{z(j)}``, ``A(j) = 1/log2(1 + j)``;
    - ``Δ(y, z) = 1 − Σ_j A(j)·G(y_{z(j)})/N``, ``G(r) = 2^r − 1``, N the ideal DCG of D';
    - loss-augmented inference is a rearrangement: sort D' by ``c_d = s_d − G(y_d)/N``
      descending to get ẑ; ``ξ = max(0, 1 + Σ_j A(j) c_{ẑ(j)} − Σ_j A(j) s_{y(j)})``;
    - subgradient ``A(pos_ẑ(d)) − A(pos_y(d))`` when ξ > 0.

    Queries with fewer than two documents in D' have ξ = 0.

    Shapes: ``scores`` and labels ``(Q, L)`` (or ``(L,)`` for one query), ``mask`` ``(Q, L)``
    bool; returns ``(value, grad)``: the mean (``reduction``) of the per-query losses and
    ``∂value/∂scores`` shaped like ``scores``, exactly 0 at padding.
    """
    t = as_target(target, mask)
    s = as_scores(scores, t)
    sub = as_subset(subset, t, t.top)
    per_query, grad = ndcg_hinge_terms(s, t, sub)
    return finish(per_query, grad, reduction, np.shape(scores))
