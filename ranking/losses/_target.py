"""Prepared ranking targets shared by every loss.

Every loss in :mod:`ranking.losses` has the signature
``loss(scores, target, mask=None, **params) -> (value, grad)`` where ``scores`` is a padded
``(Q, L)`` array. ``target`` is either a ``(Q, L)`` label array (larger = better) or a
:class:`Target`, which caches the structures derived from the labels (truth order, pair index
arrays) so that a training loop computes them once instead of once per epoch.

Conventions (docs/ranking.md#conversions):

- The truth order of a query is the stable sort of its labels in descending order (ties keep the
  input order) unless an explicit ``order`` is given (e.g. a seeded random total order
  consistent with grades, docs/ranking.md#conversions).
- Top-k ground truth is carried as κ-labels (docs/ranking.md#notation): ``T`` = documents with
  label > 0 (ordered by label), ``F`` = documents with label 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["PairIndex", "Target", "as_target"]


@dataclass(frozen=True)
class PairIndex:
    """Flat index arrays of preference pairs ``u ≻ v`` into a ``(Q, L)`` array.

    ``u`` and ``v`` index the flattened padded array (``q * L + j``); ``query`` is the query of
    each pair and ``count`` the number of pairs per query (shape ``(Q,)``).
    """

    u: np.ndarray
    v: np.ndarray
    query: np.ndarray
    count: np.ndarray
    _cache: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    @property
    def uv(self) -> np.ndarray:
        """``u`` then ``v`` in one array, for a single scatter of ±gradients."""
        if "uv" not in self._cache:
            self._cache["uv"] = np.concatenate([self.u, self.v])
        return self._cache["uv"]

    def mean_weight(self) -> np.ndarray:
        """Per-pair weight ``1/|pairs of its query|`` (the "mean" normalisation)."""
        if "mean" not in self._cache:
            self._cache["mean"] = 1.0 / np.maximum(self.count, 1)[self.query]
        return self._cache["mean"]


def _pairs_from_masks(better: np.ndarray) -> PairIndex:
    """Pairs from a boolean ``(Q, L, L)`` array ``better[q, i, j]`` = "i must beat j"."""
    q, i, j = np.nonzero(better)
    length = better.shape[1]
    count = np.bincount(q, minlength=better.shape[0]).astype(np.int64)
    return PairIndex(u=q * length + i, v=q * length + j, query=q, count=count)


class _Derived(TypedDict, total=False):
    """What a :class:`Target` computes on first use and keeps."""

    top: NDArray[np.bool_]
    graded: PairIndex
    top_block: tuple[NDArray[np.intp], NDArray[np.bool_]]
    focused: PairIndex


@dataclass(init=False)
class Target:
    """Labels of padded queries plus lazily computed, cached derived structures.

    Parameters
    ----------
    labels:
        ``(Q, L)`` relevance labels (graded or κ-labels), larger is better.
    mask:
        ``(Q, L)`` boolean, True for real documents. Defaults to all True.
    order:
        Optional ``(Q, L)`` integer array: for each query the column indices of its documents
        from best to worst (real documents first, padding after). Must be consistent with the
        labels. Defaults to a stable descending sort of the labels.

    After construction all three are validated 2-D arrays: ``labels`` float (0 at padding),
    ``mask`` bool and ``order`` integer column indices.
    """

    labels: NDArray[np.float64]
    mask: NDArray[np.bool_]
    order: NDArray[np.intp]
    _cache: _Derived = field(repr=False)

    def __init__(
        self, labels: ArrayLike, mask: ArrayLike | None = None, order: ArrayLike | None = None
    ) -> None:
        lab: NDArray[np.float64] = np.asarray(labels, dtype=np.float64)
        if lab.ndim == 1:
            lab = lab[None, :]
        if lab.ndim != 2:
            raise ValueError(f"labels must be 1-D or 2-D (Q, L), got shape {lab.shape}")
        real: NDArray[np.bool_]
        if mask is None:
            real = np.ones(lab.shape, dtype=bool)
        else:
            real = np.asarray(mask, dtype=bool)
            if real.ndim == 1:
                real = real[None, :]
        if real.shape != lab.shape:
            raise ValueError(f"mask shape {real.shape} != labels shape {lab.shape}")
        if not np.all(np.isfinite(lab[real])):
            raise ValueError("labels contain NaN or infinite values at real documents")
        self.labels = np.where(real, lab, 0.0)
        self.mask = real
        self._cache = {}
        if order is None:
            # Stable descending sort; padding sorts last because its key is +inf.
            key = np.where(real, -self.labels, np.inf)
            self.order = np.argsort(key, axis=1, kind="stable")
        else:
            ranked: NDArray[np.intp] = np.asarray(order, dtype=np.intp)
            if ranked.ndim == 1:
                ranked = ranked[None, :]
            if ranked.shape != lab.shape:
                raise ValueError(f"order shape {ranked.shape} != labels shape {lab.shape}")
            n = real.sum(axis=1)
            ranked_mask = np.take_along_axis(real, ranked, axis=1)
            if not np.array_equal(ranked_mask, np.arange(real.shape[1])[None, :] < n[:, None]):
                raise ValueError("order must list every real document before the padding")
            self.order = ranked

    @property
    def shape(self) -> tuple[int, int]:
        q, length = self.labels.shape
        return q, length

    @property
    def n_docs(self) -> NDArray[np.intp]:
        """Number of real documents per query, ``(Q,)``."""
        count: NDArray[np.intp] = self.mask.sum(axis=1)
        return count

    @property
    def top(self) -> NDArray[np.bool_]:
        """``(Q, L)`` boolean: members of T (κ-label > 0)."""
        if "top" not in self._cache:
            self._cache["top"] = self.mask & (self.labels > 0)
        return self._cache["top"]

    @property
    def rest(self) -> NDArray[np.bool_]:
        """``(Q, L)`` boolean: members of F (κ-label 0)."""
        return self.mask & (self.labels <= 0)

    def graded_pairs(self) -> PairIndex:
        """All pairs ``(u, v)`` of one query with ``label(u) > label(v)``
        (docs/ranking.md#pairwise)."""
        if "graded" not in self._cache:
            lab, m = self.labels, self.mask
            better = (lab[:, :, None] > lab[:, None, :]) & m[:, :, None] & m[:, None, :]
            self._cache["graded"] = _pairs_from_masks(better)
        return self._cache["graded"]

    def top_block(self) -> tuple[NDArray[np.intp], NDArray[np.bool_]]:
        """Columns of T per query in truth order, padded: ``(cols (Q, K), valid (Q, K))``.

        K = the largest |T|. Lets list parts over T work on ``(Q, K)`` instead of ``(Q, L)``.
        """
        if "top_block" not in self._cache:
            top = self.top
            count = top.sum(axis=1)
            width = max(int(count.max(initial=0)), 1)
            pos = np.empty(self.shape, dtype=np.int64)
            np.put_along_axis(
                pos, self.order, np.broadcast_to(np.arange(self.shape[1]), self.shape), axis=1
            )
            cols = np.argsort(np.where(top, pos, self.shape[1] + 1), axis=1, kind="stable")[
                :, :width
            ]
            valid = np.arange(width)[None, :] < count[:, None]
            self._cache["top_block"] = (cols, valid)
        return self._cache["top_block"]

    def focused_pairs(self) -> PairIndex:
        """The focused pairs ``P = T × F`` of FocusedRank (docs/ranking.md#focusedrank)."""
        if "focused" not in self._cache:
            better = self.top[:, :, None] & self.rest[:, None, :]
            self._cache["focused"] = _pairs_from_masks(better)
        return self._cache["focused"]


def as_target(target: Target | np.ndarray, mask: np.ndarray | None = None) -> Target:
    """Accept either a prepared :class:`Target` or a label array (with an optional mask)."""
    if isinstance(target, Target):
        if mask is not None and not np.array_equal(np.asarray(mask, dtype=bool), target.mask):
            raise ValueError("mask disagrees with the prepared Target's mask")
        return target
    return Target(np.asarray(target, dtype=np.float64), mask)


def as_scores(scores: np.ndarray, target: Target) -> np.ndarray:
    """Validate scores against the target's shape; 1-D scores mean one query."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 1:
        s = s[None, :]
    if s.shape != target.shape:
        raise ValueError(f"scores shape {s.shape} != target shape {target.shape}")
    s = np.where(target.mask, s, 0.0)
    if not np.isfinite(s).all():  # padding is 0 now, so only real documents can fail
        raise ValueError("scores contain NaN or infinite values at real documents")
    return s


def reduce_queries(per_query: np.ndarray, reduction: str) -> tuple[float, float]:
    """Return ``(value, scale)`` where ``scale`` multiplies per-query gradients.

    ``reduction="mean"`` averages over the Q queries (every query, even one with no terms,
    counts), ``"sum"`` adds them.
    """
    if reduction == "mean":
        scale = 1.0 / max(per_query.shape[0], 1)
    elif reduction == "sum":
        scale = 1.0
    else:
        raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
    return float(per_query.sum() * scale), scale


def finish(
    per_query: np.ndarray, grad: np.ndarray, reduction: str, shape: tuple[int, ...]
) -> tuple[float, np.ndarray]:
    """Reduce per-query values (:func:`reduce_queries`) and scale and reshape the gradient
    ``(Q, L)`` to the caller's ``shape`` (``(L,)`` for a single query)."""
    value, scale = reduce_queries(per_query, reduction)
    return value, (grad * scale).reshape(shape)


def as_subset(subset: np.ndarray | None, target: Target, default: np.ndarray) -> np.ndarray:
    """A ``(Q, L)`` boolean document subset restricted to real documents (``default`` if None)."""
    if subset is None:
        return default
    return np.asarray(subset, dtype=bool).reshape(target.shape) & target.mask
