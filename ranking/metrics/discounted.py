"""DCG and NDCG, the discounted cumulative gain family (Järvelin & Kekäläinen 2002; Burges et
al. 2005; docs/metrics.md#ndcg)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ranking.metrics.chunking import row_chunked
from ranking.metrics.kernel import (
    F64,
    Discount,
    Empty,
    Gain,
    KBeyond,
    Ties,
    apply_empty,
    apply_k_beyond,
    dcg_at,
    ideal_dcg,
    ideal_source,
    prepare,
)


@row_chunked
def dcg(
    labels: ArrayLike,
    scores: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    at: int | None = None,
    gain: Gain = "exp",
    discount: Discount = "log2",
    ties: Ties = "stable",
    docids: ArrayLike | None = None,
) -> F64:
    """DCG@l = Σ_{j=1}^{min(l, n)} G(r_{π(j)}) · D(j), per query, shape (Q,).

    ``labels``, ``scores``, ``mask``: (Q, L) (or (L,) for one query). G and D as in the module
    docstring (defaults 2^r − 1 and 1/log2(1 + j)); ``at=None`` means the whole list.

    Reference: Järvelin & Kekäläinen 2002, ACM TOIS; Burges et al. 2005 (exp gain).
    """
    b, order, groups, m = prepare(labels, scores, mask, at, ties, docids)
    return dcg_at(b, order, groups, m, gain, discount)


@row_chunked
def ndcg(
    labels: ArrayLike,
    scores: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    at: int | None = None,
    gain: Gain = "exp",
    discount: Discount = "log2",
    ties: Ties = "stable",
    empty: Empty = 0,
    k_beyond: KBeyond = "clip",
    ideal_labels: ArrayLike | None = None,
    ideal_mask: ArrayLike | None = None,
    docids: ArrayLike | None = None,
) -> F64:
    """NDCG@l per query, shape (Q,) (docs/metrics.md#ndcg).

    NDCG@l = DCG@l / N_l, DCG@l = Σ_{j=1}^{min(l,n)} G(r_{π(j)}) D(j), and N_l the DCG@l of the
    labels sorted in descending order: of this list (default) or of ``ideal_labels``
    ``(Q, M)`` with ``ideal_mask`` (all judged documents, trec_eval style).
    ``labels``/``scores``/``mask``: (Q, L) or (L,); ``at=None`` means the whole list.

    Queries with N_l = 0 (no relevant item) get ``empty`` (0, 1 or "skip" -> NaN).
    ``k_beyond="zero"`` scores 0 when the list has fewer than ``at`` documents (LETOR 4.0).

    Reference: Järvelin & Kekäläinen 2002; Burges et al. 2005 (exp gain); Niu et al. 2012 §3.3.
    """
    b, order, groups, m = prepare(labels, scores, mask, at, ties, docids)
    actual = dcg_at(b, order, groups, m, gain, discount)
    il, im = ideal_source(b, ideal_labels, ideal_mask)
    ideal = ideal_dcg(il, im, il.shape[1] if at is None else int(at), gain, discount)
    empty_rows = ideal <= 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.where(empty_rows, 0.0, actual / np.where(empty_rows, 1.0, ideal))
    values = apply_empty(values, empty_rows, empty)
    return apply_k_beyond(values, b, at, k_beyond)
