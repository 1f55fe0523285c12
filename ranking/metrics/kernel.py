"""The shared kernel of the metrics (docs/metrics.md#arrays): validated padded arrays, the
ranking permutation with its tie rules, gains, discounts, ideal DCG, and the empty-query and
short-list conventions. Every metric module starts from :func:`prepare`.

Conventions and references: :mod:`ranking.metrics`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

Gain = Literal["exp", "linear"]
Discount = Literal["log2", "letor"]
Ties = Literal["stable", "docid", "docid_asc", "pessimistic", "optimistic", "average"]
Empty = Literal[0, 1, "skip"]
KBeyond = Literal["clip", "zero"]
Ideal = Literal["list", "qrels"]

GAINS: tuple[str, ...] = ("exp", "linear")
DISCOUNTS: tuple[str, ...] = ("log2", "letor")
TIES: tuple[str, ...] = ("stable", "docid", "docid_asc", "pessimistic", "optimistic", "average")
#: Tie rules that read the document ids.
DOCID_TIES: tuple[str, ...] = ("docid", "docid_asc")
EMPTIES: tuple[Any, ...] = (0, 1, "skip")
K_BEYONDS: tuple[str, ...] = ("clip", "zero")
IDEALS: tuple[str, ...] = ("list", "qrels")
SCORE_PRECISIONS: tuple[str, ...] = ("double", "single")

F64 = NDArray[np.float64]


# --------------------------------------------------------------------------------------------
# input handling
# --------------------------------------------------------------------------------------------


def _rows(x: ArrayLike, dtype: Any) -> NDArray[Any]:
    """``x`` as an array of ``dtype``; a 1-D array is one query, ``(1, L)``."""
    arr = np.asarray(x, dtype=dtype)
    return arr[None, :] if arr.ndim == 1 else arr


def _mask_for(mask: ArrayLike | None, shape: tuple[int, ...], what: str) -> NDArray[np.bool_]:
    """A boolean mask of ``shape`` (all True when ``mask`` is None)."""
    if mask is None:
        return np.ones(shape, dtype=bool)
    msk = _rows(mask, bool)
    if msk.shape != shape:
        raise ValueError(f"{what} shape {np.shape(mask)} does not match {shape}")
    return msk


def _first_bad_cell(bad: NDArray[np.bool_], message: str) -> None:
    """Raise ``message`` at the first True cell of ``bad`` (query row, position), if any."""
    if bad.any():
        q, j = np.argwhere(bad)[0]
        raise ValueError(f"{message} at query row {q}, position {j}")


class Batch:
    """Validated float64 ``labels``/``scores`` and bool ``mask``, all ``(Q, L)``."""

    __slots__ = ("full", "labels", "mask", "scores")

    def __init__(self, labels: ArrayLike, scores: ArrayLike, mask: ArrayLike | None) -> None:
        lab = _rows(labels, np.float64)
        sco = _rows(scores, np.float64)
        if lab.ndim != 2 or sco.shape != lab.shape:
            raise ValueError(
                f"labels and scores must have one shape, (Q, L) or (L,), got {np.shape(labels)} "
                f"and {np.shape(scores)}"
            )
        msk = _mask_for(mask, lab.shape, "mask")
        self.full = mask is None or bool(msk.all())
        # Whole-array checks first (no copies); locate the offending cell only on failure.
        if np.isnan(sco).any():
            _first_bad_cell(np.isnan(sco) & msk, "score is NaN")
        if not np.isfinite(lab).all():
            _first_bad_cell(~np.isfinite(lab) & msk, "label is not finite")
        self.labels = lab
        self.scores = sco
        self.mask = msk


def ideal_source(
    batch: Batch, ideal_labels: ArrayLike | None, ideal_mask: ArrayLike | None
) -> tuple[F64, NDArray[np.bool_]]:
    """Labels (Q, M) + mask from which ideal DCG, R and r_max are taken: ``ideal_labels``
    (all judged documents of each query) when given, else the ranked list itself."""
    if ideal_labels is None:
        if ideal_mask is not None:
            raise ValueError("ideal_mask given without ideal_labels")
        return batch.labels, batch.mask
    il = _rows(ideal_labels, np.float64)
    if il.ndim != 2 or il.shape[0] != batch.labels.shape[0]:
        raise ValueError(
            f"ideal_labels must be (Q, M) with Q = {batch.labels.shape[0]}, got {il.shape}"
        )
    im = _mask_for(ideal_mask, il.shape, "ideal_mask")
    if not np.isfinite(il[im]).all():
        raise ValueError("ideal_labels contain a non-finite value")
    return il, im


def check_choice(name: str, value: Any, allowed: Sequence[Any]) -> None:
    """Raise ValueError unless ``value`` is one of ``allowed`` (the convention ``name``)."""
    # ``True == 1`` in Python; refuse bools so that ``empty=True`` is not silently 1.
    if isinstance(value, bool) or value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")


def _check_at(at: int | None) -> None:
    if at is not None and (isinstance(at, bool) or int(at) != at or at < 1):
        raise ValueError(f"cutoff 'at' must be a positive integer or None, got {at!r}")


def _docid_codes(docids: ArrayLike | None, shape: tuple[int, ...]) -> NDArray[np.int64]:
    """Integer codes whose order is the byte order of the doc ids (strcmp for ASCII/UTF-8)."""
    if docids is None:
        raise ValueError("ties='docid' needs docids, an array of document ids shaped like scores")
    d = np.asarray(docids)
    if d.ndim == 1:
        d = d[None, :]
    if d.shape != shape:
        raise ValueError(f"docids shape {d.shape} does not match scores {shape}")
    if d.dtype == object:
        d = d.astype(str)
    if np.issubdtype(d.dtype, np.number):
        return d.astype(np.int64)
    # numpy compares str arrays by code point, which is the UTF-8 byte order strcmp uses.
    _, inv = np.unique(d.ravel(), return_inverse=True)
    return inv.reshape(shape).astype(np.int64)


# --------------------------------------------------------------------------------------------
# ranking
# --------------------------------------------------------------------------------------------


def _rank(
    batch: Batch, ties: str, docids: ArrayLike | None, m: int | None = None
) -> tuple[NDArray[np.intp], NDArray[np.intp] | None]:
    """Column indices by descending score (padding last), shape (Q, L) or, when only the
    first ``m`` positions are needed, (Q, m') with m' >= min(m, L); for ``ties="average"``
    also the flat group id of each sorted position.
    """
    check_choice("ties", ties, TIES)
    # NaN sorts last in numpy, which puts padding after every real document.
    key = -batch.scores if batch.full else np.where(batch.mask, -batch.scores, np.nan)
    width = key.shape[1]
    if ties == "stable" and m is not None and 0 < m < width // 2:
        return top_stable(key, m), None
    if ties in ("stable", "average"):
        order = np.argsort(key, axis=1, kind="stable")
    else:
        if ties == "pessimistic":
            secondary = batch.labels
        elif ties == "optimistic":
            secondary = -batch.labels
        elif ties == "docid":  # trec_eval sorts ties by docno descending
            secondary = -_docid_codes(docids, batch.scores.shape)
        else:  # docid_asc: ir-measures' compat provider sorts ties by docno ascending
            secondary = _docid_codes(docids, batch.scores.shape)
        # Two stable passes = lexicographic (score desc, secondary asc, input order).
        first = np.argsort(secondary, axis=1, kind="stable")
        second = np.argsort(np.take_along_axis(key, first, axis=1), axis=1, kind="stable")
        order = np.take_along_axis(first, second, axis=1)
    if ties != "average":
        return order, None
    skey = np.take_along_axis(key, order, axis=1)
    new = np.ones(skey.shape, dtype=bool)
    new[:, 1:] = skey[:, 1:] != skey[:, :-1]  # NaN != NaN: each padding cell is its own group
    groups = np.cumsum(new, axis=1) - 1
    groups += (np.arange(skey.shape[0]) * skey.shape[1])[:, None]
    return order, groups


def top_stable(key: F64, m: int) -> NDArray[np.intp]:
    """The first ``m`` columns of ``argsort(key, kind="stable")`` without a full sort.

    ``argpartition`` finds m smallest keys in O(L); that set is the stable one unless the
    m-th key is tied with keys outside the set (then which tied index gets in matters). Rows
    with such a boundary tie fall back to a full stable sort, so the result is exact.
    """
    cand = np.sort(np.argpartition(key, m - 1, axis=1)[:, :m], axis=1)  # ascending index
    ckey = np.take_along_axis(key, cand, axis=1)
    kth = np.max(ckey, axis=1, keepdims=True)  # NaN if the row has < m real documents
    # rows where more than m keys are <= the m-th key: the boundary tie needs the full sort
    ambiguous = (key <= kth).sum(axis=1) > m
    order = np.take_along_axis(cand, np.argsort(ckey, axis=1, kind="stable"), axis=1)
    if ambiguous.any():
        rows = np.flatnonzero(ambiguous)
        order[rows] = np.argsort(key[rows], axis=1, kind="stable")[:, :m]
    return order


def _sorted(values: F64, order: NDArray[np.intp], groups: NDArray[np.intp] | None) -> F64:
    """``values`` in ranked order; with tie groups, each replaced by its group mean."""
    out = np.take_along_axis(values, order, axis=1)
    if groups is None:
        return out
    flat = groups.ravel()
    size = out.size
    sums = np.bincount(flat, weights=out.ravel(), minlength=size)
    counts = np.bincount(flat, minlength=size)
    means = sums / np.maximum(counts, 1)
    return means[flat].reshape(out.shape)


def _ranked_gains(
    b: Batch, order: NDArray[np.intp], groups: NDArray[np.intp] | None, gain: str
) -> F64:
    """Gains in ranked order (tie-group means for ``ties="average"``); padding gains 0."""
    if groups is None:
        lab = b.labels if b.full else np.where(b.mask, b.labels, 0.0)
        return _gain(np.take_along_axis(lab, order, axis=1), gain)
    return _sorted(np.where(b.mask, _gain(b.labels, gain), 0.0), order, groups)


def _gain(labels: F64, gain: str) -> F64:
    check_choice("gain", gain, GAINS)
    pos = np.maximum(labels, 0.0)  # negative (TREC -1) labels carry no gain
    return np.exp2(pos) - 1.0 if gain == "exp" else pos


def rowdot(x: F64, w: F64) -> F64:
    """Row-wise Σ_j x[q, j] w[j]. Not ``x @ w``: BLAS may sum in a blocking-dependent order,
    and a query's value must not depend on which other queries share its batch."""
    dot: F64 = (x * w).sum(axis=1)  # numpy's stubs type an axis reduction as Any
    return dot


def _discounts(n: int, discount: str) -> F64:
    check_choice("discount", discount, DISCOUNTS)
    j = np.arange(1, n + 1, dtype=np.float64)
    if discount == "log2":
        return 1.0 / np.log2(1.0 + j)
    return 1.0 / np.maximum(1.0, np.log2(j))


def ideal_dcg(labels: F64, mask: NDArray[np.bool_], m: int, gain: str, discount: str) -> F64:
    """DCG@m of each row's labels sorted descending (padding ignored).

    Gains are monotone in the label, so the top-m labels are selected (O(L) partition) and
    only those m are turned into gains.
    """
    lab = labels if mask.all() else np.where(mask, labels, -np.inf)
    m = min(m, lab.shape[1])
    if m == 0:
        return np.zeros(lab.shape[0])
    top = -np.partition(-lab, m - 1, axis=1)[:, :m] if m < lab.shape[1] else lab
    top = -np.sort(-top, axis=1)[:, :m]
    return rowdot(np.where(np.isneginf(top), 0.0, _gain(top, gain)), _discounts(m, discount))


def apply_empty(values: F64, empty_rows: NDArray[np.bool_], empty: Any) -> F64:
    """``values`` with the rows of queries without a relevant item set to ``empty`` (0, 1, or
    NaN for "skip")."""
    check_choice("empty", empty, EMPTIES)
    if empty_rows.any():
        values = values.copy()
        values[empty_rows] = np.nan if empty == "skip" else float(empty)
    return values


def apply_k_beyond(values: F64, batch: Batch, at: int | None, k_beyond: str) -> F64:
    """``values`` with queries shorter than ``at`` scored 0 when ``k_beyond="zero"``."""
    check_choice("k_beyond", k_beyond, K_BEYONDS)
    if k_beyond == "zero" and at is not None:
        short = batch.mask.sum(axis=1) < at
        if short.any():
            values = values.copy()
            values[short & ~np.isnan(values)] = 0.0
    return values


# --------------------------------------------------------------------------------------------
# shared kernels
# --------------------------------------------------------------------------------------------


def prepare(
    labels: ArrayLike,
    scores: ArrayLike,
    mask: ArrayLike | None,
    at: int | None,
    ties: str,
    docids: ArrayLike | None,
    *,
    nonlinear: str | None = None,
) -> tuple[Batch, NDArray[np.intp], NDArray[np.intp] | None, int]:
    """The common start of every metric: ``(batch, order, tie groups, m)``.

    ``order`` ranks each row (see :func:`_rank`), ``m = min(at, L)`` is the number of ranked
    positions the metric reads. ``nonlinear`` names a metric that is not linear in the gains
    (ERR, AP, RR): the expectation over tie orders is then not the metric of the averaged
    gains, so ``ties="average"`` is refused rather than silently replaced by another rule.
    """
    _check_at(at)
    if nonlinear is not None and ties == "average":
        raise ValueError(
            "ties='average' is defined only for metrics linear in the gains (DCG, NDCG, P@k); "
            f"{nonlinear} is not, use 'stable', 'docid', 'pessimistic' or 'optimistic'"
        )
    b = Batch(labels, scores, mask)
    order, groups = _rank(b, ties, docids, at)
    m = order.shape[1] if at is None else min(int(at), order.shape[1])
    return b, order, groups, m


def dcg_at(
    b: Batch,
    order: NDArray[np.intp],
    groups: NDArray[np.intp] | None,
    m: int,
    gain: str,
    discount: str,
) -> F64:
    """Σ_{j ≤ m} G(r_{π(j)}) D(j) of each row, shape (Q,)."""
    return rowdot(_ranked_gains(b, order, groups, gain)[:, :m], _discounts(m, discount))


def _relevant(labels: F64, mask: NDArray[np.bool_], threshold: float) -> F64:
    """1.0 where a real document has a label ≥ ``threshold``, else 0.0."""
    return (mask & (labels >= threshold)).astype(np.float64)


def n_relevant(
    b: Batch, ideal_labels: ArrayLike | None, ideal_mask: ArrayLike | None, threshold: float
) -> F64:
    """R per query: relevant documents in the list, or in ``ideal_labels`` (all qrels)."""
    count: F64 = _relevant(*ideal_source(b, ideal_labels, ideal_mask), threshold).sum(axis=1)
    return count


def ranked_relevance(
    labels: ArrayLike,
    scores: ArrayLike,
    mask: ArrayLike | None,
    at: int | None,
    ties: str,
    docids: ArrayLike | None,
    threshold: float,
    *,
    nonlinear: str | None = None,
) -> tuple[Batch, F64]:
    """Batch and the 0/1 relevance of the first ``m`` ranked positions, shape (Q, m) (tie-group
    means for ``ties="average"``), shared by P@k, AP and RR."""
    b, order, groups, m = prepare(labels, scores, mask, at, ties, docids, nonlinear=nonlinear)
    rel = _sorted(_relevant(b.labels, b.mask, threshold), order, groups)
    return b, rel[:, :m]


def mean(values: ArrayLike) -> float:
    """Mean over queries, ignoring NaN (queries skipped by ``empty="skip"``); NaN if none."""
    v = np.asarray(values, dtype=np.float64)
    keep = ~np.isnan(v)
    return float(v[keep].mean()) if keep.any() else float("nan")
