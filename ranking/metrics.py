"""Ranking metrics with every number-changing convention as a named parameter.

All metrics take padded arrays (docs/metrics.md#arrays)::

    labels (Q, L), scores (Q, L), mask (Q, L) bool  -> per-query values (Q,)

or 1-D arrays for a single query (then Q = 1). ``mask[q, j]`` is True for a real document;
padding cells are ignored wherever they are (see :func:`ranking.padding.pad_groups`). The work
is vectorised over queries and documents, with no Python loop per query or document: one sort
per call (for a cutoff ``at`` with stable ties, an O(L) ``argpartition`` selection of the top
``at``, exact even with boundary ties), then row-wise sums. Large batches run in blocks of
about 2^18 cells on up to 4 threads (``HEAPJUDGE_THREADS``); blocks change no value.

Ranking ``π``: documents sorted by descending score. Score ties (the ``ties`` parameter):

* ``"stable"``   input order (the paper's choice; LightGBM, XGBoost, LETOR);
* ``"docid"``    doc id *descending*, as trec_eval's ``comp_sim_docno`` and gdeval (needs
  ``docids``, a (Q, L) array of str compared bytewise like strcmp, or of integers compared
  numerically);
* ``"pessimistic"`` / ``"optimistic"``  the worst / best label first (bounds on any tie order);
* ``"average"``  the expectation over all orders of each tied group (McSherry & Najork 2008,
  ECIR, as scikit-learn's ``ndcg_score``): every position of a tied group gets the group's
  mean gain. Exact for the linear metrics (DCG, NDCG, P@k); ERR, AP and RR are not linear
  in the order, so they refuse it.

Other conventions (paper defaults first; docs/metrics.md):

* ``gain``: ``"exp"`` G(r) = 2^r − 1, or ``"linear"`` G(r) = r.
* ``discount``: ``"log2"`` D(j) = 1/log2(1 + j), or ``"letor"`` D(j) = 1/max(1, log2 j)
  (LETOR's Eval-Score scripts: positions 1 and 2 undiscounted).
* ideal DCG: from the ranked list itself (default), or from ``ideal_labels`` / ``ideal_mask``,
  an independent padded array of *all* judged labels of each query (trec_eval, gdeval, ranx
  take the ideal from the qrels, so unretrieved relevant documents lower the score).
* ``empty``: a query whose ideal gain is 0 (no relevant item) scores ``0``, ``1`` or
  ``"skip"`` (returned as NaN; :func:`mean` ignores NaN).
* ``k_beyond``: when ``at`` exceeds the list length, ``"clip"`` to the list (default) or score
  ``"zero"`` (LETOR 4.0's script leaves NDCG@k undefined, averaged as 0).
* ERR's ``r_max``: ``"query"`` (the highest label of the query, Niu et al. 2012: of all its
  judged documents when ``ideal_labels`` are given, which :func:`compute` always passes to
  ERR) or a number (the scale maximum, e.g. 4 as in Chapelle et al. 2009, gdeval, RankLib).
* ``score_precision`` (:class:`Conventions` only): ``"double"``, or ``"single"`` to round
  the scores to C ``float`` first as trec_eval does, so that scores equal in single
  precision tie (and are then ordered by the tie rule).

Negative labels (TREC's −1 = "judged unusable") have zero gain and are not relevant.

Presets (:data:`PRESETS`, :func:`preset`; docs/metrics.md#presets), as (gain, discount, ideal,
empty, ties, k_beyond, ERR r_max):

=========== ======= ======= ======= ====== ======= ====== =====================================
preset      gain    disc.   ideal   empty  ties    k>n    notes
=========== ======= ======= ======= ====== ======= ====== =====================================
paper       exp     log2    list    0      stable  clip   Niu et al. 2012; r_max
                                                          per query (the default)
trec_eval   linear  log2    qrels   0      docid   clip   ndcg, ndcg_cut, map, P, recip_rank;
                                                          also pytrec_eval (same C code);
                                                          scores in single precision
gdeval      exp     log2    qrels   skip   docid   clip   TREC Web track; ERR R=(2^g−1)/16
lightgbm    exp     log2    list    1      stable  clip   LightGBM ndcg@k (label_gain 2^r−1)
letor4      exp     letor   list    0      stable  zero   Eval-Score-4.0.pl; P@k over k
ranx        linear  log2    qrels   0      stable  clip   ranx ``ndcg``; use gain=exp for
                                                          ``ndcg_burges``; ranx's own tie order
                                                          is an unstable numba argsort
=========== ======= ======= ======= ====== ======= ====== =====================================

References: Järvelin & Kekäläinen 2002 (DCG); Burges et al. 2005 (2^r − 1 gain);
Chapelle et al. 2009 (ERR); Niu, Guo, Lan, Cheng 2012, SIGIR, "Top-k learning to rank:
labeling, ranking and evaluation" (κ-NDCG, κ-ERR; per-query r_max).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "METRIC_NAMES",
    "PRESETS",
    "Conventions",
    "average_precision",
    "compute",
    "dcg",
    "err",
    "kappa_err",
    "kappa_labels_from_topk",
    "kappa_ndcg",
    "mean",
    "ndcg",
    "parse_metric",
    "precision",
    "reciprocal_rank",
]

Gain = Literal["exp", "linear"]
Discount = Literal["log2", "letor"]
Ties = Literal["stable", "docid", "pessimistic", "optimistic", "average"]
Empty = Literal[0, 1, "skip"]
KBeyond = Literal["clip", "zero"]
Ideal = Literal["list", "qrels"]

GAINS: tuple[str, ...] = ("exp", "linear")
DISCOUNTS: tuple[str, ...] = ("log2", "letor")
TIES: tuple[str, ...] = ("stable", "docid", "pessimistic", "optimistic", "average")
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


class _Batch:
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


def _ideal_source(
    batch: _Batch, ideal_labels: ArrayLike | None, ideal_mask: ArrayLike | None
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


def _check_choice(name: str, value: Any, allowed: Sequence[Any]) -> None:
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
    batch: _Batch, ties: str, docids: ArrayLike | None, m: int | None = None
) -> tuple[NDArray[np.intp], NDArray[np.intp] | None]:
    """Column indices by descending score (padding last), shape (Q, L) or, when only the
    first ``m`` positions are needed, (Q, m') with m' >= min(m, L); for ``ties="average"``
    also the flat group id of each sorted position.
    """
    _check_choice("ties", ties, TIES)
    # NaN sorts last in numpy, which puts padding after every real document.
    key = -batch.scores if batch.full else np.where(batch.mask, -batch.scores, np.nan)
    width = key.shape[1]
    if ties == "stable" and m is not None and 0 < m < width // 2:
        return _top_stable(key, m), None
    if ties in ("stable", "average"):
        order = np.argsort(key, axis=1, kind="stable")
    else:
        if ties == "pessimistic":
            secondary = batch.labels
        elif ties == "optimistic":
            secondary = -batch.labels
        else:  # docid: trec_eval sorts ties by docno descending
            secondary = -_docid_codes(docids, batch.scores.shape)
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


def _top_stable(key: F64, m: int) -> NDArray[np.intp]:
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
    b: _Batch, order: NDArray[np.intp], groups: NDArray[np.intp] | None, gain: str
) -> F64:
    """Gains in ranked order (tie-group means for ``ties="average"``); padding gains 0."""
    if groups is None:
        lab = b.labels if b.full else np.where(b.mask, b.labels, 0.0)
        return _gain(np.take_along_axis(lab, order, axis=1), gain)
    return _sorted(np.where(b.mask, _gain(b.labels, gain), 0.0), order, groups)


def _gain(labels: F64, gain: str) -> F64:
    _check_choice("gain", gain, GAINS)
    pos = np.maximum(labels, 0.0)  # negative (TREC -1) labels carry no gain
    return np.exp2(pos) - 1.0 if gain == "exp" else pos


def _rowdot(x: F64, w: F64) -> F64:
    """Row-wise Σ_j x[q, j] w[j]. Not ``x @ w``: BLAS may sum in a blocking-dependent order,
    and a query's value must not depend on which other queries share its batch."""
    dot: F64 = (x * w).sum(axis=1)  # numpy's stubs type an axis reduction as Any
    return dot


def _discounts(n: int, discount: str) -> F64:
    _check_choice("discount", discount, DISCOUNTS)
    j = np.arange(1, n + 1, dtype=np.float64)
    if discount == "log2":
        return 1.0 / np.log2(1.0 + j)
    return 1.0 / np.maximum(1.0, np.log2(j))


def _ideal_dcg(labels: F64, mask: NDArray[np.bool_], m: int, gain: str, discount: str) -> F64:
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
    return _rowdot(np.where(np.isneginf(top), 0.0, _gain(top, gain)), _discounts(m, discount))


def _apply_empty(values: F64, empty_rows: NDArray[np.bool_], empty: Any) -> F64:
    _check_choice("empty", empty, EMPTIES)
    if empty_rows.any():
        values = values.copy()
        values[empty_rows] = np.nan if empty == "skip" else float(empty)
    return values


def _apply_k_beyond(values: F64, batch: _Batch, at: int | None, k_beyond: str) -> F64:
    _check_choice("k_beyond", k_beyond, K_BEYONDS)
    if k_beyond == "zero" and at is not None:
        short = batch.mask.sum(axis=1) < at
        if short.any():
            values = values.copy()
            values[short & ~np.isnan(values)] = 0.0
    return values


# --------------------------------------------------------------------------------------------
# chunking over queries
# --------------------------------------------------------------------------------------------

#: Cells (queries x documents) per work unit: small enough to stay in cache and to bound the
#: temporaries (about 2 MB per float64 array), large enough to amortise numpy's call overhead.
CHUNK_CELLS = 1 << 18
_ROW_ARGS = ("mask", "ideal_labels", "ideal_mask", "docids")
_ROW_VECTOR_ARGS = ("r_max",)


def _threads() -> int:
    env = os.environ.get("HEAPJUDGE_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, min(4, os.cpu_count() or 1))


def _row_chunked(fn: Callable[..., F64]) -> Callable[..., F64]:
    """Run a metric on blocks of queries (threads when there are several blocks).

    Every metric is independent per query, so splitting the rows changes no value. numpy
    releases the GIL inside sorts, partitions and ufuncs, so threads run blocks in parallel.
    """

    @functools.wraps(fn)
    def wrapper(labels: ArrayLike, scores: ArrayLike, *args: Any, **kwargs: Any) -> F64:
        lab = np.asarray(labels)
        if lab.ndim != 2 or lab.size <= CHUNK_CELLS or len(args) > 1 or ("mask" in kwargs and args):
            return fn(labels, scores, *args, **kwargs)
        if args:  # the mask, passed positionally as in the C2 contract
            kwargs = {**kwargs, "mask": args[0]}
        sco = np.asarray(scores)
        if sco.shape != lab.shape:
            return fn(labels, scores, *args, **kwargs)  # let the metric raise its message
        n_q = lab.shape[0]
        step = max(1, CHUNK_CELLS // max(lab.shape[1], 1))
        row_kw = {}
        for name in _ROW_ARGS:
            value = kwargs.get(name)
            if value is not None:
                arr = np.asarray(value)
                if arr.ndim == 2 and arr.shape[0] == n_q:
                    row_kw[name] = arr
        for name in _ROW_VECTOR_ARGS:
            value = kwargs.get(name)
            if value is not None and not isinstance(value, str) and np.ndim(value) == 1:
                arr = np.asarray(value)
                if arr.shape == (n_q,):
                    row_kw[name] = arr

        def block(start: int) -> F64:
            sl = slice(start, start + step)
            kw = dict(kwargs)
            kw.update({name: arr[sl] for name, arr in row_kw.items()})
            return fn(lab[sl], sco[sl], **kw)

        starts = range(0, n_q, step)
        workers = min(_threads(), len(starts))
        if workers <= 1:
            return np.concatenate([block(i) for i in starts])
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return np.concatenate(list(pool.map(block, starts)))

    return wrapper


# --------------------------------------------------------------------------------------------
# shared kernels
# --------------------------------------------------------------------------------------------


def _prepare(
    labels: ArrayLike,
    scores: ArrayLike,
    mask: ArrayLike | None,
    at: int | None,
    ties: str,
    docids: ArrayLike | None,
    *,
    nonlinear: str | None = None,
) -> tuple[_Batch, NDArray[np.intp], NDArray[np.intp] | None, int]:
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
    b = _Batch(labels, scores, mask)
    order, groups = _rank(b, ties, docids, at)
    m = order.shape[1] if at is None else min(int(at), order.shape[1])
    return b, order, groups, m


def _dcg_at(
    b: _Batch,
    order: NDArray[np.intp],
    groups: NDArray[np.intp] | None,
    m: int,
    gain: str,
    discount: str,
) -> F64:
    """Σ_{j ≤ m} G(r_{π(j)}) D(j) of each row, shape (Q,)."""
    return _rowdot(_ranked_gains(b, order, groups, gain)[:, :m], _discounts(m, discount))


def _relevant(labels: F64, mask: NDArray[np.bool_], threshold: float) -> F64:
    """1.0 where a real document has a label ≥ ``threshold``, else 0.0."""
    return (mask & (labels >= threshold)).astype(np.float64)


def _n_relevant(
    b: _Batch, ideal_labels: ArrayLike | None, ideal_mask: ArrayLike | None, threshold: float
) -> F64:
    """R per query: relevant documents in the list, or in ``ideal_labels`` (all qrels)."""
    count: F64 = _relevant(*_ideal_source(b, ideal_labels, ideal_mask), threshold).sum(axis=1)
    return count


def _ranked_relevance(
    labels: ArrayLike,
    scores: ArrayLike,
    mask: ArrayLike | None,
    at: int | None,
    ties: str,
    docids: ArrayLike | None,
    threshold: float,
    *,
    nonlinear: str | None = None,
) -> tuple[_Batch, F64]:
    """Batch and the 0/1 relevance of the first ``m`` ranked positions, shape (Q, m) (tie-group
    means for ``ties="average"``), shared by P@k, AP and RR."""
    b, order, groups, m = _prepare(labels, scores, mask, at, ties, docids, nonlinear=nonlinear)
    rel = _sorted(_relevant(b.labels, b.mask, threshold), order, groups)
    return b, rel[:, :m]


# --------------------------------------------------------------------------------------------
# graded metrics
# --------------------------------------------------------------------------------------------


@_row_chunked
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
    b, order, groups, m = _prepare(labels, scores, mask, at, ties, docids)
    return _dcg_at(b, order, groups, m, gain, discount)


@_row_chunked
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
    b, order, groups, m = _prepare(labels, scores, mask, at, ties, docids)
    actual = _dcg_at(b, order, groups, m, gain, discount)
    il, im = _ideal_source(b, ideal_labels, ideal_mask)
    ideal = _ideal_dcg(il, im, il.shape[1] if at is None else int(at), gain, discount)
    empty_rows = ideal <= 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.where(empty_rows, 0.0, actual / np.where(empty_rows, 1.0, ideal))
    values = _apply_empty(values, empty_rows, empty)
    return _apply_k_beyond(values, b, at, k_beyond)


def _err_r_max(r_max: Any, top: F64, b: _Batch) -> F64:
    """r_max per query (Q,): the query's highest label ``top`` for "query", else the given
    number(s), which no label of the list may exceed."""
    if isinstance(r_max, str):
        if r_max != "query":
            raise ValueError(f"r_max must be 'query', a number or a (Q,) array, got {r_max!r}")
        return np.maximum(top, 0.0)
    if isinstance(r_max, bool):
        raise ValueError(f"r_max must be 'query', a number or a (Q,) array, got {r_max!r}")
    rmax = np.broadcast_to(np.asarray(r_max, dtype=np.float64), top.shape).copy()
    if not np.isfinite(rmax).all():
        raise ValueError("r_max must be finite")
    over = np.where(b.mask, b.labels, -np.inf).max(axis=1, initial=-np.inf) > rmax
    if over.any():
        q = int(np.flatnonzero(over)[0])
        raise ValueError(f"query row {q} has a label above r_max={rmax[q]:g}")
    return rmax


@_row_chunked
def err(
    labels: ArrayLike,
    scores: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    at: int | None = None,
    r_max: Literal["query"] | float | ArrayLike = "query",
    ties: Ties = "stable",
    empty: Empty = 0,
    k_beyond: KBeyond = "clip",
    ideal_labels: ArrayLike | None = None,
    ideal_mask: ArrayLike | None = None,
    docids: ArrayLike | None = None,
) -> F64:
    """Expected Reciprocal Rank (Chapelle et al. 2009, CIKM), per query, shape (Q,).

    ERR@l = Σ_{j=1}^{min(l,n)} (1/j) · R_{π(j)} · Π_{i<j} (1 − R_{π(i)}),
    R_d = (2^{r_d} − 1) / 2^{r_max}.

    ``labels``/``scores``/``mask``: (Q, L) or (L,). ``r_max="query"``: the highest label of
    the query, as in Niu et al. 2012 §3.3 (docs/metrics.md#err): of ``ideal_labels`` ``(Q, M)``
    (all judged documents) when given, else of the list; a number or a (Q,) array: the scale
    maximum (4 in Chapelle's paper, gdeval and RankLib; labels above it are an error). Not
    normalised. A query with no positive label (in ``ideal_labels`` when given) gets
    ``empty`` (default 0).
    """
    b, order, _, m = _prepare(labels, scores, mask, at, ties, docids, nonlinear="ERR")
    il, im = _ideal_source(b, ideal_labels, ideal_mask)
    top = np.where(im, il, -np.inf).max(axis=1, initial=-np.inf)
    top = np.where(np.isfinite(top), top, 0.0)
    rmax = _err_r_max(r_max, top, b)
    lab = b.labels if b.full else np.where(b.mask, b.labels, 0.0)
    r = np.maximum(np.take_along_axis(lab, order[:, :m], axis=1), 0.0)
    prob = (np.exp2(r) - 1.0) / np.exp2(rmax)[:, None]
    stop_before = np.ones_like(prob)
    if m > 1:
        stop_before[:, 1:] = np.cumprod(1.0 - prob[:, :-1], axis=1)
    values = _rowdot(prob * stop_before, 1.0 / np.arange(1, m + 1, dtype=np.float64))
    values = _apply_empty(values, top <= 0.0, empty)
    return _apply_k_beyond(values, b, at, k_beyond)


# --------------------------------------------------------------------------------------------
# κ-measures (Niu et al. 2012 §3.3)
# --------------------------------------------------------------------------------------------


def kappa_labels_from_topk(top: Sequence[str], rest: Sequence[str], k: int) -> dict[str, int]:
    """κ-labels of a top-k ground truth: y_d = k + 1 − pos(d) for d in ``top`` (pos 1-based,
    best first), 0 for d in ``rest`` (Niu et al. 2012 §3.2.1; docs/metrics.md#kappa).

    ``top`` may be shorter than k (fewer than k documents, or items judged not relevant).
    """
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if len(top) > k:
        raise ValueError(f"top has {len(top)} documents, more than k={k}")
    labels: dict[str, int] = {}
    for pos, d in enumerate(top, start=1):
        if d in labels:
            raise ValueError(f"document {d!r} appears twice in top")
        labels[d] = k + 1 - pos
    for d in rest:
        if d in labels:
            where = "in both top and rest" if labels[d] > 0 else "twice in rest"
            raise ValueError(f"document {d!r} appears {where}")
        labels[d] = 0
    return labels


def kappa_ndcg(
    kappa_labels: ArrayLike, scores: ArrayLike, mask: ArrayLike | None = None, **options: Any
) -> F64:
    """κ-NDCG@l (Niu et al. 2012 §3.3; docs/metrics.md#kappa), per query, shape (Q,).

    κ-NDCG@l = (1/N^κ_l) Σ_{j=1}^{min(l,n)} G(y_{π(j)}) D(j), with κ-labels y (see
    :func:`kappa_labels_from_topk`) in ``kappa_labels`` (Q, L) and N^κ_l =
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


# --------------------------------------------------------------------------------------------
# binary metrics
# --------------------------------------------------------------------------------------------


@_row_chunked
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
    b, rel = _ranked_relevance(labels, scores, mask, at, ties, docids, rel_threshold)
    hits: F64 = rel.sum(axis=1)
    if denominator == "k":
        return hits / float(at)
    listed: NDArray[np.intp] = b.mask.sum(axis=1)
    return hits / np.maximum(np.minimum(listed, at), 1)


@_row_chunked
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
    b, rel = _ranked_relevance(
        labels, scores, mask, at, ties, docids, rel_threshold, nonlinear="average precision"
    )
    prec = np.cumsum(rel, axis=1) / np.arange(1, rel.shape[1] + 1, dtype=np.float64)
    n_rel = _n_relevant(b, ideal_labels, ideal_mask, rel_threshold)
    empty_rows = n_rel <= 0
    values = (prec * rel).sum(axis=1) / np.where(empty_rows, 1.0, n_rel)
    return _apply_empty(values, empty_rows, empty)


@_row_chunked
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
    b, rel = _ranked_relevance(
        labels, scores, mask, at, ties, docids, rel_threshold, nonlinear="reciprocal rank"
    )
    hit = rel > 0
    found = hit.any(axis=1)
    first = np.argmax(hit, axis=1) if hit.shape[1] > 0 else np.zeros(hit.shape[0], np.intp)
    values = np.where(found, 1.0 / (first + 1.0), 0.0)
    empty_rows = _n_relevant(b, ideal_labels, ideal_mask, rel_threshold) <= 0
    return _apply_empty(values, empty_rows, empty)


def mean(values: ArrayLike) -> float:
    """Mean over queries, ignoring NaN (queries skipped by ``empty="skip"``); NaN if none."""
    v = np.asarray(values, dtype=np.float64)
    keep = ~np.isnan(v)
    return float(v[keep].mean()) if keep.any() else float("nan")


# --------------------------------------------------------------------------------------------
# conventions, presets and metric names
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Conventions:
    """Every convention that changes a metric value (docs/metrics.md).

    Defaults are the paper's choices (Niu et al. 2012).
    ``ideal="qrels"`` asks callers (:mod:`ranking.evaluate`) to pass all judged labels as
    ``ideal_labels``; the array functions themselves take the ideal from ``ideal_labels`` when
    given. ``kappa_gain`` is the gain of κ-NDCG, kept separate from graded NDCG's because the
    paper does not state it.
    """

    gain: str = "exp"
    kappa_gain: str = "exp"
    discount: str = "log2"
    ideal: str = "list"
    empty: Any = 0
    ties: str = "stable"
    k_beyond: str = "clip"
    r_max: Any = "query"
    rel_threshold: float = 1.0
    precision_denominator: str = "k"
    score_precision: str = "double"

    def __post_init__(self) -> None:
        _check_choice("gain", self.gain, GAINS)
        _check_choice("kappa_gain", self.kappa_gain, GAINS)
        _check_choice("discount", self.discount, DISCOUNTS)
        _check_choice("ideal", self.ideal, IDEALS)
        _check_choice("empty", self.empty, EMPTIES)
        _check_choice("ties", self.ties, TIES)
        _check_choice("k_beyond", self.k_beyond, K_BEYONDS)
        if self.r_max != "query" and (
            isinstance(self.r_max, str | bool) or not math.isfinite(float(self.r_max))
        ):
            raise ValueError(f"r_max must be 'query' or a number, got {self.r_max!r}")
        if self.precision_denominator not in ("k", "list"):
            raise ValueError("precision_denominator must be 'k' or 'list'")
        _check_choice("score_precision", self.score_precision, SCORE_PRECISIONS)

    def replace(self, **changes: Any) -> Conventions:
        """A copy with some conventions changed (validated)."""
        unknown = set(changes) - set(asdict(self))
        if unknown:
            raise ValueError(f"unknown convention(s): {sorted(unknown)}")
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


#: Presets reproducing other tools (docs/metrics.md#presets; each checked in tests where an
#: oracle or golden vector exists). ``paper`` is the default.
PRESETS: Mapping[str, Conventions] = {
    # Niu et al. 2012: 2^r−1, ideal from the list, empty -> 0, input-order ties,
    # ERR with the query's own r_max.
    "paper": Conventions(),
    # trec_eval (and pytrec_eval): ndcg / ndcg_cut use the rel value itself as gain, the ideal
    # from all judged documents, ties by docno descending (comp_sim_docno), queries with no
    # relevant judgment score 0; P@k divides by k; map divides by all relevant qrels; scores
    # are held as C floats (DOCNO_INFO.sim), so scores equal in single precision tie. trec_eval
    # has no ERR; r_max is left at the scale maximum used by gdeval for --metrics err.
    "trec_eval": Conventions(
        gain="linear",
        kappa_gain="linear",
        ideal="qrels",
        empty=0,
        ties="docid",
        r_max=4,
        score_precision="single",
    ),
    # gdeval.pl (TREC Web track): 2^r−1 gain, ideal from the positive qrels, topics without a
    # positive judgment are skipped, ties by docno descending, ERR with R = (2^g−1)/16.
    "gdeval": Conventions(
        gain="exp", kappa_gain="exp", ideal="qrels", empty="skip", ties="docid", r_max=4
    ),
    # LightGBM ndcg@k: label_gain 2^r−1, ideal from the list, queries with no relevant item
    # score 1, k clipped to the list, std::stable_sort (input order).
    "lightgbm": Conventions(gain="exp", ideal="list", empty=1, ties="stable", k_beyond="clip"),
    # LETOR 4.0 Eval-Score-4.0.pl: gain {0:0, 1:1, 2:3} = 2^r−1, discount 1 at positions 1-2
    # then 1/log2(j), ideal from the list, empty -> 0, NDCG@k = 0 when the list has fewer than
    # k documents, P@k divides by k, relevant = label >= 1, ties in file order.
    "letor4": Conventions(
        gain="exp", discount="letor", ideal="list", empty=0, ties="stable", k_beyond="zero"
    ),
    # ranx "ndcg" (Järvelin, linear gain; "ndcg_burges" would be exp), ideal from the qrels with
    # rel >= 1, empty -> 0, map/mrr from the qrels. ranx's own tie order is a numba argsort on
    # the scores, so tied scores have no documented order; input order is used here.
    "ranx": Conventions(gain="linear", kappa_gain="linear", ideal="qrels", empty=0, ties="stable"),
}


def preset(name: str) -> Conventions:
    """The :class:`Conventions` of a named preset (``paper``, ``trec_eval``, ``gdeval``,
    ``lightgbm``, ``letor4``, ``ranx``)."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose from {sorted(PRESETS)}") from None


#: Metric families accepted by :func:`parse_metric` / :func:`compute`.
METRIC_NAMES: tuple[str, ...] = (
    "ndcg",
    "dcg",
    "err",
    "kappa-ndcg",
    "kappa-err",
    "p",
    "map",
    "mrr",
)

_ALIASES = {
    "ndcg": "ndcg",
    "ndcg_cut": "ndcg",
    "dcg": "dcg",
    "err": "err",
    "kappa-ndcg": "kappa-ndcg",
    "kappa_ndcg": "kappa-ndcg",
    "κ-ndcg": "kappa-ndcg",
    "kappa-err": "kappa-err",
    "kappa_err": "kappa-err",
    "κ-err": "kappa-err",
    "p": "p",
    "precision": "p",
    "map": "map",
    "ap": "map",
    "mrr": "mrr",
    "rr": "mrr",
    "recip_rank": "mrr",
}


def parse_metric(name: str) -> tuple[str, int | None]:
    """``"ndcg@10"`` -> ``("ndcg", 10)``; ``"kappa-err"`` -> ``("kappa-err", None)``.

    Accepts ``@k`` and trec_eval's ``_k`` / ``.k`` spellings (``P_10``, ``ndcg_cut.10``).
    """
    raw = name.strip()
    low = raw.lower()
    at: int | None = None
    base = low
    if "@" in low:
        base, _, cut = low.partition("@")
    elif low.startswith("ndcg_cut") and low[len("ndcg_cut") :][:1] in ("_", "."):
        base, cut = "ndcg", low[len("ndcg_cut") + 1 :]
    elif low[:2] in ("p_", "p.") and low[2:].isdigit():
        base, cut = "p", low[2:]
    else:
        cut = ""
    if cut:
        if not cut.isdigit() or int(cut) < 1:
            raise ValueError(f"bad cutoff in metric {name!r}: expected a positive integer")
        at = int(cut)
    if base not in _ALIASES:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(METRIC_NAMES)} (with @k)")
    family = _ALIASES[base]
    if family == "p" and at is None:
        raise ValueError(f"metric {name!r} needs a cutoff, e.g. p@10")
    return family, at


#: Conventions each metric family reads, beyond ``at`` (``gain`` is ``kappa_gain`` for
#: κ-NDCG). ``ideal`` stands for ``ideal_labels``/``ideal_mask``. ERR and κ-ERR always receive
#: the ideal labels when given: their r_max and "no relevant document" are properties of the
#: query's judgments, not of what a run retrieved (docs/metrics.md#err).
_NDCG_OPTIONS = ("gain", "discount", "ties", "empty", "k_beyond", "ideal", "docids")
_FAMILIES: dict[str, tuple[Callable[..., F64], tuple[str, ...]]] = {
    "ndcg": (ndcg, _NDCG_OPTIONS),
    "kappa-ndcg": (kappa_ndcg, _NDCG_OPTIONS),
    "dcg": (dcg, ("gain", "discount", "ties", "docids")),
    "err": (err, ("r_max", "ties", "empty", "ideal", "docids")),
    "kappa-err": (kappa_err, ("k", "ties", "empty", "ideal", "docids")),
    "p": (precision, ("rel_threshold", "ties", "denominator", "docids")),
    "map": (average_precision, ("rel_threshold", "ties", "empty", "ideal", "docids")),
    "mrr": (reciprocal_rank, ("rel_threshold", "ties", "empty", "ideal", "docids")),
}


def compute(
    name: str,
    labels: ArrayLike,
    scores: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    conventions: Conventions | str | None = None,
    ideal_labels: ArrayLike | None = None,
    ideal_mask: ArrayLike | None = None,
    docids: ArrayLike | None = None,
    kappa_k: int | ArrayLike | None = None,
) -> F64:
    """Per-query values (Q,) of the metric ``name`` (``"ndcg@10"``, ``"kappa-err"``, ...)
    under ``conventions`` (a :class:`Conventions`, a preset name, or None for the paper's).

    ``labels``/``scores``/``mask``: (Q, L) or (L,); ``ideal_labels``/``ideal_mask``: (Q, M),
    all judged labels of each query, used as the ideal of NDCG and R of AP/RR only when
    ``conventions.ideal == "qrels"``; always for the κ-measures (their ideal is the truth
    itself) and for ERR's r_max and empty test (properties of the query). ``docids`` (Q, L)
    for ``ties="docid"``; ``kappa_k`` the k of each query's top-k truth (κ-ERR's r_max).
    """
    c = preset(conventions) if isinstance(conventions, str) else (conventions or Conventions())
    family, at = parse_metric(name)
    fn, wanted = _FAMILIES[family]
    use_ideal = c.ideal == "qrels" or family in ("kappa-ndcg", "err", "kappa-err")
    available: dict[str, Any] = {
        "gain": c.kappa_gain if family == "kappa-ndcg" else c.gain,
        "discount": c.discount,
        "ties": c.ties,
        "empty": c.empty,
        "k_beyond": c.k_beyond,
        "r_max": c.r_max,
        "k": kappa_k,
        "rel_threshold": c.rel_threshold,
        "denominator": c.precision_denominator,
        "docids": docids,
    }
    options = {key: available[key] for key in wanted if key != "ideal"}
    if "ideal" in wanted and use_ideal:
        options.update(ideal_labels=ideal_labels, ideal_mask=ideal_mask)
    if c.score_precision == "single":
        # trec_eval stores each score in a C float: scores equal in single precision tie.
        scores = np.asarray(scores, dtype=np.float32)
    # ties="average" reaches ERR/AP/RR unchanged so that they raise rather than silently
    # switch to another tie rule.
    return fn(labels, scores, mask, at=at, **options)
