"""Pairwise surrogate losses: RankNet, RankSVM hinge, RankBoost exponential.

Chen et al. 2009, "Ranking Measures and Loss Functions in Learning to Rank", eq. 2:
``L_p = Σ_{(u,v): l(u) > l(v)} φ(s_u − s_v)`` with

==========  ==================  =====================
model       φ(z)                φ'(z)
==========  ==================  =====================
RankSVM     (1 − z)₊            −[z < 1] (subgradient)
RankBoost   exp(−z)             −exp(−z)
RankNet     log(1 + e^{−z})     −σ(−z)
==========  ==================  =====================

References: Herbrich et al. 2000 / Joachims 2002 (RankSVM), Freund et al. 2003 (RankBoost),
Burges et al. 2005 (RankNet). Pairs: every pair with different labels ("graded"), or only the
focused pairs T × F of top-k ground truth ("focused", docs/ranking.md#focusedrank).

Normalisation (shared with FocusedRank, docs/ranking.md#normalisation): ``"mean"`` divides each
query's sum by its number of pairs, so every query weighs the same whatever its size;
``"none"`` keeps the plain sum. Queries are then averaged (``reduction="mean"``) or summed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ranking.losses._target import PairIndex, Target, as_scores, as_target, finish

__all__ = ["pair_loss", "rankboost_loss", "ranknet_loss", "ranksvm_loss"]

Phi = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def _logistic(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # log(1 + e^{−z}) = max(−z, 0) + log1p(e^{−|z|}): never overflows (docs/ranking.md#numerics,
    # the same value as logaddexp(0, −z) with one exp instead of two).
    e = np.exp(-np.abs(z))
    value = np.maximum(-z, 0.0) + np.log1p(e)
    inv = 1.0 / (1.0 + e)
    # −σ(−z): σ(−z) = e/(1+e) for z ≥ 0 and 1/(1+e) for z < 0 (e = e^{−|z|}).
    return value, -np.where(z >= 0, e * inv, inv)


def _hinge(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.maximum(0.0, 1.0 - z), -(z < 1.0).astype(np.float64)


def _exponential(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    e = np.exp(-z)
    return e, -e


PHI: dict[str, Phi] = {"logistic": _logistic, "hinge": _hinge, "exp": _exponential}


def pair_terms(
    scores: np.ndarray, pairs: PairIndex, phi: Phi, normalization: str
) -> tuple[np.ndarray, np.ndarray]:
    """Per-query pair loss ``(Q,)`` and its gradient w.r.t. the flat padded scores.

    ``normalization="mean"`` divides query q's sum by ``|pairs of q|``
    (docs/ranking.md#normalisation).
    """
    n_q, length = scores.shape
    flat = scores.ravel()
    z = flat[pairs.u] - flat[pairs.v]
    value, slope = phi(z)
    if normalization == "mean":
        weight = pairs.mean_weight()
        value = value * weight
        slope = slope * weight
    elif normalization != "none":
        raise ValueError(f"normalization must be 'mean' or 'none', got {normalization!r}")
    per_query = np.bincount(pairs.query, weights=value, minlength=n_q)
    grad = np.bincount(pairs.uv, weights=np.concatenate([slope, -slope]), minlength=n_q * length)
    return per_query, grad.reshape(n_q, length)


def pair_loss(
    scores: np.ndarray,
    target: Target | np.ndarray,
    mask: np.ndarray | None = None,
    *,
    phi: str = "logistic",
    pairs: str = "graded",
    normalization: str = "mean",
    reduction: str = "mean",
) -> tuple[float, np.ndarray]:
    """Generic pairwise loss ``Σ_q w_q Σ_{(u,v) ∈ P_q} φ(s_u − s_v)``; see the module docstring.

    ``phi`` ∈ {"logistic", "hinge", "exp"}; ``pairs`` ∈ {"graded", "focused"}.
    Returns ``(value, ∂value/∂scores)`` with the shape of ``scores``.
    """
    t = as_target(target, mask)
    s = as_scores(scores, t)
    if phi not in PHI:
        raise ValueError(f"phi must be one of {sorted(PHI)}, got {phi!r}")
    if pairs == "graded":
        index = t.graded_pairs()
    elif pairs == "focused":
        index = t.focused_pairs()
    else:
        raise ValueError(f"pairs must be 'graded' or 'focused', got {pairs!r}")
    per_query, grad = pair_terms(s, index, PHI[phi], normalization)
    return finish(per_query, grad, reduction, np.shape(scores))


def _named_pair_loss(phi: str, name: str, doc: str) -> Callable[..., tuple[float, np.ndarray]]:
    """:func:`pair_loss` with ``phi`` fixed, under its model's name and docstring."""

    def loss(
        scores: np.ndarray,
        target: Target | np.ndarray,
        mask: np.ndarray | None = None,
        *,
        pairs: str = "graded",
        normalization: str = "mean",
        reduction: str = "mean",
    ) -> tuple[float, np.ndarray]:
        return pair_loss(
            scores,
            target,
            mask,
            phi=phi,
            pairs=pairs,
            normalization=normalization,
            reduction=reduction,
        )

    loss.__name__ = loss.__qualname__ = name
    loss.__doc__ = doc + _PAIR_LOSS_ARGS
    return loss


_PAIR_LOSS_ARGS = """

    ``scores`` ``(Q, L)`` or ``(L,)``; ``target`` labels of the same shape or a prepared
    :class:`~ranking.losses.Target`; ``pairs`` ∈ {"graded", "focused"}; ``normalization`` ∈
    {"mean", "none"}. Returns ``(value, ∂value/∂scores)`` shaped like ``scores``, zero at padding.
    """

ranknet_loss = _named_pair_loss(
    "logistic",
    "ranknet_loss",
    """RankNet (Burges et al. 2005): ``Σ_{u ≻ v} log(1 + exp(−(s_u − s_v)))``.

    Cross-entropy with target probability 1 for ``u ≻ v`` and ``P_uv = σ(s_u − s_v)``;
    gradient ``−σ(−(s_u − s_v))`` on ``s_u`` and the opposite on ``s_v``
    (docs/ranking.md#pairwise).""",
)

ranksvm_loss = _named_pair_loss(
    "hinge",
    "ranksvm_loss",
    """RankSVM hinge (Herbrich 2000; Joachims 2002): ``Σ_{u ≻ v} (1 − (s_u − s_v))₊``.

    The primal ``½‖w‖² + C Σ (1 − wᵀ(x_u − x_v))₊`` adds the regulariser in the solver
    (:func:`ranking.learners.optim.pegasos`). Returns a subgradient (``−1`` on ``s_u`` where the
    margin is violated).""",
)

rankboost_loss = _named_pair_loss(
    "exp",
    "rankboost_loss",
    """RankBoost's exponential pair loss (Freund et al. 2003): ``Σ_{u ≻ v} exp(−(s_u − s_v))``.

    RankBoost (:mod:`ranking.learners.boosting`) minimises it greedily; exposed here for gradient
    training and tests.""",
)
