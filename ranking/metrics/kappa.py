"""κ-NDCG and κ-ERR (Niu et al. 2012 §3.3; docs/metrics.md#kappa): NDCG and ERR on the
κ-labels of a top-k ground truth (:func:`ranking.io.topk.kappa_labels`)."""

from __future__ import annotations

from typing import Any

from numpy.typing import ArrayLike

from ranking.metrics.cascade import err
from ranking.metrics.discounted import ndcg
from ranking.metrics.kernel import F64


def kappa_ndcg(
    kappa_labels: ArrayLike, scores: ArrayLike, mask: ArrayLike | None = None, **options: Any
) -> F64:
    """κ-NDCG@l (Niu et al. 2012 §3.3; docs/metrics.md#kappa), per query, shape (Q,).

    κ-NDCG@l = (1/N^κ_l) Σ_{j=1}^{min(l,n)} G(y_{π(j)}) D(j), with κ-labels y (see
    :func:`ranking.io.topk.kappa_labels`) in ``kappa_labels`` (Q, L) and N^κ_l =
    Σ_{j=1}^{min(l,|T|)} G(k + 1 − j) D(j), the DCG of the true top-k in true order. That ideal
    equals the list's own ideal whenever all of T is in the list; if the ranked list may miss
    some of T, pass the whole truth as ``ideal_labels``. The gain is a parameter because the
    paper does not say (docs/metrics.md#kappa).

    ``options`` are those of :func:`ndcg` (``at``, ``gain``, ``discount``, ``ties``,
    ``empty``, ``k_beyond``, ``ideal_labels``, ``ideal_mask``, ``docids``), same defaults: it
    is NDCG on κ-labels.
    """
    return ndcg(kappa_labels, scores, mask, **options)


def kappa_err(
    kappa_labels: ArrayLike,
    scores: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    k: int | ArrayLike | None = None,
    **options: Any,
) -> F64:
    """κ-ERR (Niu et al. 2012 §3.3; docs/metrics.md#kappa), per query, shape (Q,). Not normalised.

    κ-ERR = Σ_{j=1}^{n} (1/j) R_{π(j)} Π_{i<j} (1 − R_{π(i)}), R_d = (2^{y_d} − 1)/2^{k}:
    the satisfaction probability uses y_max = k (an int, or a (Q,) array). ``k=None`` takes
    each query's highest κ-label (of ``ideal_labels`` when given), which is k whenever the true
    top-1 is there. A perfect ranking with k = 10 scores 0.9993255681, not 1.

    ``options`` are those of :func:`err` except ``r_max`` (``at``, ``ties``, ``empty``,
    ``k_beyond``, ``ideal_labels``, ``ideal_mask``, ``docids``): it is ERR on κ-labels with
    r_max = k.
    """
    if "r_max" in options:
        raise TypeError("kappa_err takes k (its r_max is k), not r_max")
    return err(kappa_labels, scores, mask, r_max="query" if k is None else k, **options)
