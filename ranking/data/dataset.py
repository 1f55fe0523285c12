"""Query-grouped learning-to-rank data and the ground-truth conversions of the paper.

A :class:`QueryDataset` stores N rows grouped by query (each query contiguous):

- ``X`` ``(N, d)`` features, ``labels`` ``(N,)`` (graded 0..4, or κ-labels for top-k truth),
- ``qid`` ``(N,)``, ``offsets`` ``(Q + 1,)`` boundaries, ``doc_ids`` ``(N,)``,
- ``rank`` ``(N,)`` optional: each document's 0-based position in a *total* truth order of its
  query (consistent with the labels); ``None`` means "stable sort of the labels".

Padded ``(Q, L)`` views with a boolean mask (:meth:`QueryDataset.pad`) feed the vectorised losses
and metrics; ``padded[mask]`` is exactly the flat row order, so scores computed on the flat
``X`` scatter into the padded layout with one indexing operation.

Conversions (Niu et al. 2012 §6.3; docs/ranking.md#conversions):

- graded labels -> a seeded random total order consistent with the grades
  (:func:`random_total_order`: higher grade first, ties in random order);
- total order -> top-k ground truth ``(T ordered, F)`` (:func:`topk_from_rank`);
- top-k ground truth -> κ-labels ``y_d = k + 1 − pos(d)`` for d ∈ T, 0 for d ∈ F
  (:func:`kappa_from_rank`, the array form of :func:`ranking.io.topk.kappa_labels`;
  :func:`dataset_from_topk` for the service's export).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ranking.io.letor import read_letor
from ranking.io.topk import kappa_labels
from ranking.losses import Target
from ranking.padding import offsets_from_qids, pad_groups

__all__ = [
    "QueryDataset",
    "dataset_from_topk",
    "kappa_from_rank",
    "normalize_per_query",
    "random_total_order",
    "topk_from_rank",
]


class _Derived(TypedDict, total=False):
    """What a :class:`QueryDataset` computes on first use and keeps."""

    mask: NDArray[np.bool_]
    target: Target


@dataclass(frozen=True, eq=False)
class QueryDataset:
    """Features, labels and query structure of a ranking data set (see module docstring)."""

    X: NDArray[np.float64]
    labels: NDArray[np.float64]
    qid: NDArray[Any]
    offsets: NDArray[np.int64]
    doc_ids: NDArray[Any]
    rank: NDArray[np.int64] | None = None
    topk: int | None = None
    _cache: _Derived = field(default_factory=_Derived, repr=False, compare=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_arrays(
        cls,
        X: ArrayLike,
        labels: ArrayLike,
        qid: ArrayLike,
        doc_ids: ArrayLike | None = None,
        rank: ArrayLike | None = None,
        topk: int | None = None,
    ) -> QueryDataset:
        """Build from flat arrays whose rows are already grouped by query.

        ``topk`` marks the labels as κ-labels of top-k ground truth with that k.
        """
        x = np.asarray(X, dtype=np.float64)
        if x.ndim != 2:
            raise ValueError(f"X must be 2-D (N, d), got shape {x.shape}")
        n = x.shape[0]
        y = np.asarray(labels, dtype=np.float64).reshape(-1)
        q = np.asarray(qid)
        if y.shape[0] != n or q.shape != (n,):
            raise ValueError(f"X has {n} rows but labels has {y.shape[0]} and qid {q.shape}")
        if not np.all(np.isfinite(x)):
            row = int(np.flatnonzero(~np.all(np.isfinite(x), axis=1))[0])
            raise ValueError(f"X row {row} contains NaN or infinite values")
        if not np.all(np.isfinite(y)):
            bad = int(np.flatnonzero(~np.isfinite(y))[0])
            raise ValueError(f"label of row {bad} is not finite")
        offsets = offsets_from_qids(q)
        ids = (
            np.array([f"{qq}:{i}" for i, qq in enumerate(q)], dtype=object)
            if doc_ids is None
            else np.asarray(doc_ids, dtype=object)
        )
        if ids.shape != (n,):
            raise ValueError(f"doc_ids must have {n} entries, got {ids.shape}")
        r = None if rank is None else _check_rank(np.asarray(rank), y, offsets)
        return cls(X=x, labels=y, qid=q, offsets=offsets, doc_ids=ids, rank=r, topk=topk)

    @classmethod
    def from_letor(cls, data: Any) -> QueryDataset:
        """From a :class:`ranking.io.letor.LetorData` (features, labels, qids, docids)."""
        return cls.from_arrays(
            data.features,
            data.labels,
            np.asarray(data.qids, dtype=object),
            np.asarray(data.docids, dtype=object),
        )

    @classmethod
    def read(cls, path: str | Path) -> QueryDataset:
        """Read a LETOR/SVMlight file with :func:`ranking.io.letor.read_letor`."""
        return cls.from_letor(read_letor(path))

    # ------------------------------------------------------------------ shape
    @property
    def n_queries(self) -> int:
        return int(self.offsets.size - 1)

    @property
    def n_docs(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def sizes(self) -> NDArray[np.int64]:
        return np.diff(self.offsets)

    @property
    def query_ids(self) -> NDArray[Any]:
        """One id per query, in dataset order."""
        return self.qid[self.offsets[:-1]]

    # ------------------------------------------------------------------ views
    def pad(self, values: ArrayLike, fill: float = 0.0) -> tuple[NDArray[Any], NDArray[np.bool_]]:
        """Flat per-row values ``(N, ...)`` -> padded ``(Q, L, ...)`` plus mask ``(Q, L)``."""
        return pad_groups(np.asarray(values), self.offsets, fill=fill)

    @property
    def mask(self) -> NDArray[np.bool_]:
        """``(Q, L)`` boolean, True for real documents (as in :meth:`pad`)."""
        if "mask" not in self._cache:
            self._cache["mask"] = self.pad(np.zeros(self.n_docs))[1]
        return self._cache["mask"]

    def target(self) -> Target:
        """The padded :class:`~ranking.losses.Target` (labels, mask, truth order), cached."""
        if "target" not in self._cache:
            labels, mask = self.pad(self.labels)
            order = None
            if self.rank is not None:
                # rank is each row's truth position; invert it per query into column indices.
                pos, _ = self.pad(self.rank, fill=np.iinfo(np.int64).max)
                order = np.argsort(pos, axis=1, kind="stable")
            self._cache["target"] = Target(labels, mask, order=order)
        return self._cache["target"]

    # ------------------------------------------------------------------ selection
    def subset(self, queries: ArrayLike) -> QueryDataset:
        """The queries with the given indices (in that order)."""
        qs = np.asarray(queries, dtype=np.int64).reshape(-1)
        if qs.size and (qs.min() < 0 or qs.max() >= self.n_queries):
            raise ValueError(f"query index out of range 0..{self.n_queries - 1}")
        rows = (
            np.concatenate([np.arange(self.offsets[q], self.offsets[q + 1]) for q in qs])
            if qs.size
            else np.zeros(0, dtype=np.int64)
        )
        sizes = self.sizes[qs]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return QueryDataset(
            X=self.X[rows],
            labels=self.labels[rows],
            qid=self.qid[rows],
            offsets=offsets,
            doc_ids=self.doc_ids[rows],
            rank=None if self.rank is None else self.rank[rows],
            topk=self.topk,
        )

    def with_labels(
        self, labels: ArrayLike, rank: ArrayLike | None = None, topk: int | None = None
    ) -> QueryDataset:
        """Same documents with new labels (optionally a total order and the κ marker k)."""
        y = np.asarray(labels, dtype=np.float64).reshape(-1)
        if y.shape[0] != self.n_docs:
            raise ValueError(f"expected {self.n_docs} labels, got {y.shape[0]}")
        r = None if rank is None else _check_rank(np.asarray(rank), y, self.offsets)
        return QueryDataset(
            X=self.X,
            labels=y,
            qid=self.qid,
            offsets=self.offsets,
            doc_ids=self.doc_ids,
            rank=r,
            topk=topk,
        )

    @classmethod
    def concat(cls, parts: Sequence[QueryDataset]) -> QueryDataset:
        """Stack data sets (queries keep their order; query ids must not repeat)."""
        if not parts:
            raise ValueError("concat needs at least one data set")
        has_rank = all(p.rank is not None for p in parts)
        sizes = np.concatenate([p.sizes for p in parts])
        qids = np.concatenate([p.query_ids for p in parts])
        if np.unique(qids).size != qids.size:
            raise ValueError("the same query id appears in two of the concatenated data sets")
        return cls(
            X=np.vstack([p.X for p in parts]),
            labels=np.concatenate([p.labels for p in parts]),
            qid=np.concatenate([p.qid for p in parts]),
            offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            doc_ids=np.concatenate([p.doc_ids for p in parts]),
            rank=np.concatenate([p.rank for p in parts]) if has_rank else None,
            topk=parts[0].topk if len({p.topk for p in parts}) == 1 else None,
        )

    # ------------------------------------------------------------------ conversions
    def to_topk(self, k: int = 10, seed: int = 0) -> QueryDataset:
        """Top-k ground truth as κ-labels (paper §6.3): graded -> random total order -> top k.

        If the data set already carries a total order (``rank``) it is used as is. Below
        position k the truth carries no order, so the returned ``rank`` orders F by a fresh
        seeded shuffle (it must not leak the grades of F to list losses that need a total
        order). Already κ-labelled data (``topk`` set) is returned unchanged.
        """
        if self.topk is not None:
            if self.topk != k:
                raise ValueError(f"data set holds top-{self.topk} truth, not top-{k}")
            return self
        rank = (
            self.rank
            if self.rank is not None
            else random_total_order(self.labels, self.offsets, seed)
        )
        kappa = kappa_from_rank(rank, k)
        fresh = random_total_order(kappa, self.offsets, seed + 1)
        return self.with_labels(kappa, rank=fresh, topk=k)

    def with_total_order(self, seed: int = 0) -> QueryDataset:
        """Same graded labels plus a seeded random total order consistent with them."""
        return self.with_labels(self.labels, random_total_order(self.labels, self.offsets, seed))


def _check_rank(rank: np.ndarray, labels: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    r = rank.astype(np.int64).reshape(-1)
    if r.shape != labels.shape:
        raise ValueError(f"rank must have {labels.size} entries, got {r.size}")
    sizes = np.diff(offsets)
    q = np.repeat(np.arange(sizes.size), sizes)
    key = np.lexsort((r, q))  # rows by query, then by truth position
    expected = np.arange(r.size) - np.repeat(offsets[:-1], sizes)
    wrong = r[key] != expected
    if wrong.any():
        bad = int(q[key][np.flatnonzero(wrong)[0]])
        raise ValueError(f"rank of query {bad} is not a permutation of 0..n-1")
    # Consistency with the labels: along the order, labels never increase.
    rise = (np.diff(labels[key]) > 0) & (np.diff(q[key]) == 0)
    if rise.any():
        bad = int(q[key][np.flatnonzero(rise)[0]])
        raise ValueError(f"rank of query {bad} puts a lower label above a higher one")
    return r


def random_total_order(labels: ArrayLike, offsets: ArrayLike, seed: int) -> NDArray[np.int64]:
    """Each row's 0-based position in a random total order consistent with the grades.

    Within a query, higher labels come first; documents with equal labels are ordered by a
    seeded uniform random permutation (docs/ranking.md#conversions; Niu et al. 2012 §6.3).
    """
    y = np.asarray(labels, dtype=np.float64)
    off = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(off)
    q = np.repeat(np.arange(sizes.size), sizes)
    noise = np.random.default_rng(seed).random(y.size)
    order = np.lexsort((noise, -y, q))  # rows sorted by query, then grade desc, then noise
    rank = np.empty(y.size, dtype=np.int64)
    rank[order] = np.arange(y.size) - np.repeat(off[:-1], sizes)
    return rank


def kappa_from_rank(rank: ArrayLike, k: int) -> NDArray[np.float64]:
    """κ-labels from truth positions: ``k − rank`` (= k + 1 − pos) in the top k, else 0.

    The array form of :func:`ranking.io.topk.kappa_labels` (the definition, over document ids):
    for a query whose documents sit at 0-based positions ``rank`` of the truth order,
    ``kappa_from_rank(rank, k)[i] == kappa_labels(top, rest, k)[doc_i]`` with ``top`` the first
    k of that order and ``rest`` the others. Vectorised over whole data sets (no Python loop),
    which is why it is not written as a call of the dict form.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    r = np.asarray(rank, dtype=np.int64)
    return np.where(r < k, k - r, 0).astype(np.float64)


def topk_from_rank(ds: QueryDataset, k: int) -> list[tuple[list[str], list[str]]]:
    """Per query ``(top, rest)`` doc-id lists from the data set's total order ``rank``."""
    if ds.rank is None:
        raise ValueError("the data set has no total order; call with_total_order(seed) first")
    out = []
    for qi in range(ds.n_queries):
        sl = slice(ds.offsets[qi], ds.offsets[qi + 1])
        ids = ds.doc_ids[sl][np.argsort(ds.rank[sl], kind="stable")]
        out.append(([str(d) for d in ids[:k]], [str(d) for d in ids[k:]]))
    return out


def dataset_from_topk(
    features: Mapping[str, Mapping[str, Sequence[float]]],
    truth: Mapping[str, tuple[Sequence[str], Sequence[str]]],
    k: int,
) -> QueryDataset:
    """κ-labelled data set from exported top-k ground truth and document feature vectors.

    ``features[qid][doc_id]`` is a feature vector; ``truth[qid] = (top, rest)`` (top best
    first, as the service exports it). Documents in ``rest`` keep their feature order as the
    (arbitrary) order of F. Every judged document needs a feature vector of the same length.
    """
    rows: list[Sequence[float]] = []
    labels: list[float] = []
    qids: list[str] = []
    ids: list[str] = []
    ranks: list[int] = []
    width: int | None = None
    for qid, (top, rest) in truth.items():
        kappa = kappa_labels(list(top), list(rest), k)
        feats = features.get(qid)
        if feats is None:
            raise ValueError(f"query {qid!r}: no feature vectors")
        for pos, doc in enumerate([*top, *rest]):
            if doc not in feats:
                raise ValueError(f"query {qid!r}: document {doc!r} has no feature vector")
            vec = list(feats[doc])
            if width is None:
                width = len(vec)
            elif len(vec) != width:
                raise ValueError(
                    f"query {qid!r}: document {doc!r} has {len(vec)} features, expected {width}"
                )
            rows.append(vec)
            labels.append(float(kappa[doc]))
            qids.append(str(qid))
            ids.append(str(doc))
            ranks.append(pos)
    if not rows:
        raise ValueError("no judged documents in the top-k truth")
    return QueryDataset.from_arrays(
        np.array(rows, dtype=np.float64),
        labels,
        np.array(qids, dtype=object),
        np.array(ids, dtype=object),
        rank=ranks,
        topk=k,
    )


def normalize_per_query(X: ArrayLike, offsets: ArrayLike) -> NDArray[np.float64]:
    """LETOR's QueryLevelNorm: min-max scale every feature to [0, 1] within each query.

    A feature that is constant within a query becomes 0 there. (The shared MQ2008 files are
    already normalised this way.)
    """
    x = np.asarray(X, dtype=np.float64)
    off = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(off)
    nonempty = sizes > 0
    starts = off[:-1][nonempty]
    lo = np.minimum.reduceat(x, starts, axis=0)
    hi = np.maximum.reduceat(x, starts, axis=0)
    reps = sizes[nonempty]
    span = np.repeat(hi - lo, reps, axis=0)
    low = np.repeat(lo, reps, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(span > 0, (x - low) / np.where(span > 0, span, 1.0), 0.0)
