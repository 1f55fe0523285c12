"""Ranking losses with ONE signature, vectorised over padded queries.

    loss(scores, target, mask=None, **params) -> (value: float, grad: ndarray like scores)

``scores`` is ``(Q, L)`` (or ``(L,)`` for one query); ``target`` is a ``(Q, L)`` label array
(larger = better; κ-labels for top-k truth) or a prepared :class:`Target` that caches the truth
order and the pair index arrays across calls. ``value`` is the mean over queries
(``reduction="mean"``) of the per-query loss; ``grad`` is ∂value/∂scores (a subgradient for the
hinges), zero at padding. :data:`LOSSES` maps names to functions (explicit, no dispatch tricks).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ranking.losses._target import PairIndex, Target, as_target
from ranking.losses.focused import focused_net_loss, focused_parts, focused_svm_loss
from ranking.losses.listmle import (
    listmle_loss,
    p_listmle_alpha,
    p_listmle_loss,
    topk_listmle_loss,
    w_listmle_loss,
)
from ranking.losses.listnet import listnet_permutation_loss, listnet_top_one_loss
from ranking.losses.pairwise import pair_loss, rankboost_loss, ranknet_loss, ranksvm_loss
from ranking.losses.structural import ndcg_structural_hinge_loss, svm_map_loss

LossFn = Callable[..., tuple[float, np.ndarray]]

LOSSES: dict[str, LossFn] = {
    "listmle": listmle_loss,
    "topk_listmle": topk_listmle_loss,
    "p_listmle": p_listmle_loss,
    "w_listmle": w_listmle_loss,
    "ranknet": ranknet_loss,
    "ranksvm": ranksvm_loss,
    "rankboost_exp": rankboost_loss,
    "listnet": listnet_top_one_loss,
    "listnet_permutation": listnet_permutation_loss,
    "svm_map": svm_map_loss,
    "ndcg_hinge": ndcg_structural_hinge_loss,
    "focused_net": focused_net_loss,
    "focused_svm": focused_svm_loss,
}

#: Losses whose gradient is a true gradient (checked by finite differences in the tests).
DIFFERENTIABLE = (
    "listmle",
    "topk_listmle",
    "p_listmle",
    "w_listmle",
    "ranknet",
    "rankboost_exp",
    "listnet",
    "listnet_permutation",
    "focused_net",
)


def get_loss(name: str) -> LossFn:
    """Look a loss up by name; unknown names list the valid ones."""
    try:
        return LOSSES[name]
    except KeyError:
        raise ValueError(f"unknown loss {name!r}; choose from {sorted(LOSSES)}") from None


__all__ = [
    "DIFFERENTIABLE",
    "LOSSES",
    "LossFn",
    "PairIndex",
    "Target",
    "as_target",
    "focused_net_loss",
    "focused_parts",
    "focused_svm_loss",
    "get_loss",
    "listmle_loss",
    "listnet_permutation_loss",
    "listnet_top_one_loss",
    "ndcg_structural_hinge_loss",
    "p_listmle_alpha",
    "p_listmle_loss",
    "pair_loss",
    "rankboost_loss",
    "ranknet_loss",
    "ranksvm_loss",
    "svm_map_loss",
    "topk_listmle_loss",
    "w_listmle_loss",
]
