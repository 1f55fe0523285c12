"""Compatibility (Clarke, Vtyurina, Smucker, "Assessing top-k preferences", TOIS 2021;
"Offline evaluation by maximum similarity to an ideal ranking", CIKM 2020) on padded arrays:
rank-biased overlap of the ranked list with the ideal ranking its query's grades imply,
normalised by the ideal's own (docs/metrics.md#compat). Computed by
:func:`ranking.metrics.rbo.compatibility_of_grades`, one query at a time.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ranking.metrics.kernel import F64, Empty, Ties, apply_empty, ideal_source, prepare
from ranking.metrics.rbo import COMPAT_P, compatibility_of_grades


def compatibility(
    labels: ArrayLike,
    scores: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    p: float = COMPAT_P,
    normalize: bool = True,
    ties: Ties = "stable",
    empty: Empty = 0,
    ideal_labels: ArrayLike | None = None,
    ideal_mask: ArrayLike | None = None,
    docids: ArrayLike | None = None,
) -> F64:
    """Compatibility of each row's ranking with its ideal, per query, shape (Q,).

    The ideal holds the documents with a grade > 0 (of ``ideal_labels``, all judged labels of
    the query, when given; else of the list), larger grades first, ties within a grade broken
    in the ranking's favour; the whole ranking is compared (no cutoff). Queries without a
    positive grade get ``empty``. On κ-labels of a top-k truth the ideal is the top in its
    order and the rest is not relevant (:func:`ranking.metrics.rbo.compatibility_topk`).
    """
    b, order, _, _ = prepare(labels, scores, mask, None, ties, docids, nonlinear="compatibility")
    ranked = np.take_along_axis(b.labels, order, axis=1)
    lengths = b.mask.sum(axis=1)
    truth, truth_mask = ideal_source(b, ideal_labels, ideal_mask)
    values = np.array(
        [
            compatibility_of_grades(
                ranked[q, : lengths[q]], truth[q][truth_mask[q]], p, normalize=normalize
            )
            for q in range(ranked.shape[0])
        ],
        dtype=np.float64,
    )
    empty_rows = np.logical_not(np.any((truth > 0) & truth_mask, axis=1))
    return apply_empty(values, empty_rows, empty)
