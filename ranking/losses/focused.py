"""FocusedRank losses (Niu et al. SIGIR 2012 §3.2.2; docs/ranking.md#focusedrank).

Per query with top-k ground truth (T ordered, F = the rest, focused pairs P = T × F):

    L(f; q) = β · L_list(f; T, y) / c_list + (1 − β) · L_pair(f; P) / c_pair

Normalisation (the paper's footnote 2 leaves it open; docs/ranking.md#normalisation):

- ``"mean"`` (default): ``c_pair = |P|`` (mean pair loss); ``c_list = 1`` because both list
  parts used here (top-one ListNet, one structural hinge) are already O(1) per query;
- ``"none"``: ``c_list = c_pair = 1``;
- ``"init"``: as ``"mean"`` and additionally divided by ``list_scale`` / ``pair_scale``, the
  values of the two (mean-normalised) parts at the initial model, which the trainer computes
  (:class:`ranking.estimators.FocusedNet`) and passes in.

If F is empty the pair part is 0; if |T| < 2 the list part is 0.
"""

from __future__ import annotations

import numpy as np

from ranking.losses._target import Target, as_scores, as_target, finish
from ranking.losses.listnet import MAX_PERMUTATION_DOCS, listnet_permutation_loss
from ranking.losses.listnet import softmax_cross_entropy as _top_one
from ranking.losses.pairwise import PHI, pair_terms
from ranking.losses.structural import ndcg_hinge_terms

__all__ = ["NORMALIZATIONS", "focused_net_loss", "focused_parts", "focused_svm_loss"]

NORMALIZATIONS = ("mean", "none", "init")


def _check(beta: float, normalization: str) -> None:
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta must be in [0, 1], got {beta}")
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")


def focused_parts(
    scores: np.ndarray,
    target: Target | np.ndarray,
    mask: np.ndarray | None = None,
    *,
    family: str = "net",
    normalization: str = "mean",
    list_form: str = "top_one",
    skip_list: bool = False,
    skip_pair: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-query list and pair parts and their gradients, before β and query reduction.

    ``family="net"``: ListNet on T + RankNet on P; ``family="svm"``: NDCG structural hinge on
    T + RankSVM hinge on P. Returns ``(list (Q,), grad_list (Q, L), pair (Q,), grad_pair)``.
    ``skip_list`` / ``skip_pair`` return zeros for a part whose weight is 0 (β = 0 or 1).
    """
    t = as_target(target, mask)
    s = as_scores(scores, t)
    if family not in ("net", "svm"):
        raise ValueError(f"family must be 'net' or 'svm', got {family!r}")
    top = t.top
    big_t = top.sum(axis=1) >= 2
    zeros_q, zeros_s = np.zeros(s.shape[0]), np.zeros_like(s)
    pair_norm = "none" if normalization == "none" else "mean"
    phi = PHI["logistic" if family == "net" else "hinge"]
    if skip_pair:
        pair, g_pair = zeros_q, zeros_s
    else:
        pair, g_pair = pair_terms(s, t.focused_pairs(), phi, pair_norm)
    if skip_list:
        return zeros_q, zeros_s, pair, g_pair
    if family == "net":
        if list_form == "top_one":
            # Work on the (Q, |T|max) block of T's columns rather than the whole (Q, L) row.
            cols, valid = t.top_block()
            lst, g_blk = _top_one(
                np.take_along_axis(s, cols, axis=1),
                np.take_along_axis(t.labels, cols, axis=1),
                valid,
            )
            g_lst = np.zeros_like(s)
            np.put_along_axis(g_lst, cols, g_blk, axis=1)
        elif list_form == "permutation":
            if int(top.sum(axis=1).max(initial=0)) > MAX_PERMUTATION_DOCS:
                raise ValueError("list_form='permutation' needs |T| <= 6")
            _, g_lst = listnet_permutation_loss(s, t, subset=top, reduction="sum")
            lst = np.array(
                [
                    listnet_permutation_loss(
                        s[q : q + 1],
                        t.labels[q : q + 1],
                        t.mask[q : q + 1],
                        subset=top[q : q + 1],
                        reduction="sum",
                    )[0]
                    for q in range(s.shape[0])
                ]
            )
        else:
            raise ValueError(f"list_form must be 'top_one' or 'permutation', got {list_form!r}")
    else:
        lst, g_lst = ndcg_hinge_terms(s, t, top)
    lst = np.where(big_t, lst, 0.0)
    g_lst = np.where(big_t[:, None], g_lst, 0.0)
    return lst, g_lst, pair, g_pair


def _focused(
    scores: np.ndarray,
    target: Target | np.ndarray,
    mask: np.ndarray | None,
    family: str,
    beta: float,
    normalization: str,
    list_scale: float,
    pair_scale: float,
    reduction: str,
    list_form: str = "top_one",
) -> tuple[float, np.ndarray]:
    """``β·L_list/c_list + (1 − β)·L_pair/c_pair`` per query, reduced over queries."""
    _check(beta, normalization)
    lst, g_lst, pair, g_pair = focused_parts(
        scores,
        target,
        mask,
        family=family,
        normalization=normalization,
        list_form=list_form,
        skip_list=beta == 0.0,
        skip_pair=beta == 1.0,
    )
    if normalization == "init":
        if list_scale <= 0 or pair_scale <= 0:
            raise ValueError("normalization='init' needs positive list_scale and pair_scale")
        wl, wp = beta / list_scale, (1.0 - beta) / pair_scale
    else:
        wl, wp = beta, 1.0 - beta
    return finish(wl * lst + wp * pair, wl * g_lst + wp * g_pair, reduction, np.shape(scores))


def focused_net_loss(
    scores: np.ndarray,
    target: Target | np.ndarray,
    mask: np.ndarray | None = None,
    *,
    beta: float = 0.5,
    normalization: str = "mean",
    list_form: str = "top_one",
    list_scale: float = 1.0,
    pair_scale: float = 1.0,
    reduction: str = "mean",
) -> tuple[float, np.ndarray]:
    """FocusedNet = ListNet on T + RankNet on P = T × F (docs/ranking.md#focusedrank).

    ``L_list = −Σ_{d∈T} P_y(d) log P_s(d)`` with both softmaxes over T only (top-one form;
    ``list_form="permutation"`` uses the exact Plackett–Luce cross-entropy, |T| ≤ 6);
    ``L_pair = Σ_{(u,v)∈P} log(1 + exp(−(s_u − s_v)))``. Gradient of the list part is
    ``P_s(d) − P_y(d)``; of the pair part ``∓σ(−(s_u − s_v))``. Per query
    ``β·L_list + (1 − β)·L_pair/|P|`` under the default ``normalization="mean"`` (module
    docstring); ``L_pair = 0`` if F is empty, ``L_list = 0`` if |T| < 2.

    Shapes: ``scores`` and labels ``(Q, L)`` (or ``(L,)`` for one query), ``mask`` ``(Q, L)``
    bool; returns ``(value, grad)``: the mean (``reduction``) of the per-query losses and
    ``∂value/∂scores`` shaped like ``scores``, exactly 0 at padding.
    """
    return _focused(
        scores,
        target,
        mask,
        "net",
        beta,
        normalization,
        list_scale,
        pair_scale,
        reduction,
        list_form=list_form,
    )


def focused_svm_loss(
    scores: np.ndarray,
    target: Target | np.ndarray,
    mask: np.ndarray | None = None,
    *,
    beta: float = 0.5,
    normalization: str = "mean",
    list_scale: float = 1.0,
    pair_scale: float = 1.0,
    reduction: str = "mean",
) -> tuple[float, np.ndarray]:
    """FocusedSVM option A (docs/ranking.md#structural): NDCG hinge on T + RankSVM on P.

    Per query ``β·ξ + (1 − β)·(1/|P|)·Σ_{(u,v)∈P} (1 − (s_u − s_v))₊``, ξ from
    :func:`ranking.losses.structural.ndcg_structural_hinge_loss` (exact sort-based
    loss-augmented inference). The solver adds ``½‖w‖²/C`` (:func:`ranking.learners.optim.pegasos`).

    Shapes: ``scores`` and labels ``(Q, L)`` (or ``(L,)`` for one query), ``mask`` ``(Q, L)``
    bool; returns ``(value, grad)``: the mean (``reduction``) of the per-query losses and
    ``∂value/∂scores`` shaped like ``scores``, exactly 0 at padding.
    """
    return _focused(
        scores, target, mask, "svm", beta, normalization, list_scale, pair_scale, reduction
    )
