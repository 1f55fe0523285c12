"""Binary-relevance metrics: precision, recall, average precision, reciprocal rank
(docs/metrics.md; a document is relevant when its label is at least ``rel_threshold``)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ranking.metrics.chunking import row_chunked
from ranking.metrics.kernel import F64, Empty, Ties, apply_empty, n_relevant, ranked_relevance


@row_chunked
def precision(
    labels: ArrayLike,
    scores: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    at: int,
    rel_threshold: float = 1.0,
    ties: Ties = "stable",
    denominator: Literal["k", "list"] = "k",
    docids: ArrayLike | None = None,
) -> F64:
    """P@k = |{j ≤ k : r_{π(j)} ≥ rel_threshold}| / k, per query, shape (Q,).

    ``labels``/``scores``/``mask``: (Q, L) or (L,). ``denominator="k"`` divides by k even for
    shorter lists (trec_eval, LETOR: missing ranks count as non-relevant); ``"list"`` divides
    by min(k, n). Queries without relevant documents score 0 (there is nothing to skip:
    precision is defined). ``ties="average"`` gives the expectation over tie orders.

    Reference: Manning, Raghavan & Schütze 2008, §8.4; trec_eval ``P``.
    """
    if at is None:
        raise ValueError("precision needs a cutoff 'at'")
    if denominator not in ("k", "list"):
        raise ValueError(f"denominator must be 'k' or 'list', got {denominator!r}")
    b, rel = ranked_relevance(labels, scores, mask, at, ties, docids, rel_threshold)
    hits: F64 = rel.sum(axis=1)
    if denominator == "k":
        return hits / float(at)
    listed: NDArray[np.intp] = b.mask.sum(axis=1)
    return hits / np.maximum(np.minimum(listed, at), 1)


@row_chunked
def average_precision(
    labels: ArrayLike,
    scores: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    at: int | None = None,
    rel_threshold: float = 1.0,
    ties: Ties = "stable",
    empty: Empty = 0,
    ideal_labels: ArrayLike | None = None,
    ideal_mask: ArrayLike | None = None,
    docids: ArrayLike | None = None,
) -> F64:
    """AP@l = (1/R) Σ_{j ≤ l, π(j) relevant} P@j, per query, shape (Q,); MAP is its mean.

    ``labels``/``scores``/``mask``: (Q, L) or (L,). R = number of relevant documents (label ≥
    ``rel_threshold``) in the list, or in ``ideal_labels`` (all qrels: trec_eval's ``map`` and
    ``map_cut``, ranx), never min(R, l). Queries with R = 0 get ``empty``.

    Reference: Voorhees & Harman 2005 (TREC, ch. 3); trec_eval ``m_map.c``.
    """
    b, rel = ranked_relevance(
        labels, scores, mask, at, ties, docids, rel_threshold, nonlinear="average precision"
    )
    prec = np.cumsum(rel, axis=1) / np.arange(1, rel.shape[1] + 1, dtype=np.float64)
    n_rel = n_relevant(b, ideal_labels, ideal_mask, rel_threshold)
    empty_rows = n_rel <= 0
    values = (prec * rel).sum(axis=1) / np.where(empty_rows, 1.0, n_rel)
    return apply_empty(values, empty_rows, empty)


@row_chunked
def reciprocal_rank(
    labels: ArrayLike,
    scores: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    at: int | None = None,
    rel_threshold: float = 1.0,
    ties: Ties = "stable",
    empty: Empty = 0,
    ideal_labels: ArrayLike | None = None,
    ideal_mask: ArrayLike | None = None,
    docids: ArrayLike | None = None,
) -> F64:
    """RR@l = 1 / (rank of the first relevant document within l), 0 if none; MRR is its mean.

    ``labels``/``scores``/``mask``: (Q, L) or (L,); per query, shape (Q,). Queries with no
    relevant document at all (in the list, or in ``ideal_labels``) get ``empty``.

    Reference: Voorhees 1999 (TREC-8 QA track); trec_eval ``recip_rank``.
    """
    b, rel = ranked_relevance(
        labels, scores, mask, at, ties, docids, rel_threshold, nonlinear="reciprocal rank"
    )
    hit = rel > 0
    found = hit.any(axis=1)
    first = np.argmax(hit, axis=1) if hit.shape[1] > 0 else np.zeros(hit.shape[0], np.intp)
    values = np.where(found, 1.0 / (first + 1.0), 0.0)
    empty_rows = n_relevant(b, ideal_labels, ideal_mask, rel_threshold) <= 0
    return apply_empty(values, empty_rows, empty)


@row_chunked
def recall(
    labels: ArrayLike,
    scores: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    at: int | None = None,
    rel_threshold: float = 1.0,
    ties: Ties = "stable",
    empty: Empty = 0,
    ideal_labels: ArrayLike | None = None,
    ideal_mask: ArrayLike | None = None,
    docids: ArrayLike | None = None,
) -> F64:
    """R@k = |{j ≤ k : r_{π(j)} ≥ rel_threshold}| / R, per query, shape (Q,).

    R = number of relevant documents in the list, or in ``ideal_labels`` (all qrels, as
    trec_eval's ``recall_k`` and ir-measures' ``R@k``). Queries with R = 0 get ``empty``
    (trec_eval: 0). ``ties="average"`` gives the expectation over tie orders.

    Reference: Manning, Raghavan & Schütze 2008, §8.3; trec_eval ``m_recall.c``.
    """
    b, rel = ranked_relevance(labels, scores, mask, at, ties, docids, rel_threshold)
    n_rel = n_relevant(b, ideal_labels, ideal_mask, rel_threshold)
    empty_rows = n_rel <= 0
    values = rel.sum(axis=1) / np.where(empty_rows, 1.0, n_rel)
    return apply_empty(values, empty_rows, empty)
