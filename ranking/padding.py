"""Query-grouped flat arrays <-> padded ``(Q, L)`` arrays with a boolean mask.

A learning-to-rank data set is stored flat: ``N`` rows sorted so that each query's documents
are contiguous, plus ``offsets`` (``Q + 1`` boundaries, ``offsets[0] == 0``,
``offsets[-1] == N``). Batch work (metrics, listwise losses) wants one row per query instead:
``padded[q, j]`` is document ``j`` of query ``q`` and ``mask[q, j]`` says whether that cell is a
real document (``True``) or padding (``False``). Padding is always at the end of a row.

Everything here is vectorised (no Python loop over queries).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "offsets_from_qids",
    "offsets_from_sizes",
    "pad_groups",
    "sizes_from_offsets",
    "unpad",
]


def _check_offsets(offsets: ArrayLike, n: int | None) -> NDArray[np.int64]:
    off = np.asarray(offsets)
    if off.ndim != 1 or off.size < 1:
        raise ValueError(f"offsets must be a 1-D array of Q+1 boundaries, got shape {off.shape}")
    if not np.issubdtype(off.dtype, np.integer):
        if off.size and not np.all(np.equal(np.mod(off, 1), 0)):
            raise ValueError("offsets must be integers")
        off = off.astype(np.int64)
    off = off.astype(np.int64, copy=False)
    if off[0] != 0:
        raise ValueError(f"offsets[0] must be 0, got {off[0]}")
    if off.size > 1 and np.any(np.diff(off) < 0):
        bad = int(np.flatnonzero(np.diff(off) < 0)[0])
        raise ValueError(f"offsets must be non-decreasing (offsets[{bad + 1}] < offsets[{bad}])")
    if n is not None and off[-1] != n:
        raise ValueError(f"offsets[-1] must equal the number of rows {n}, got {off[-1]}")
    return off


def offsets_from_sizes(sizes: ArrayLike) -> NDArray[np.int64]:
    """Group sizes ``(Q,)`` (e.g. a LightGBM ``.query`` file) -> offsets ``(Q + 1,)``."""
    s = np.asarray(sizes)
    if s.ndim != 1:
        raise ValueError(f"sizes must be 1-D, got shape {s.shape}")
    if s.size and (np.any(s < 0) or not np.all(np.equal(np.mod(s, 1), 0))):
        raise ValueError("group sizes must be non-negative integers")
    out = np.zeros(s.size + 1, dtype=np.int64)
    np.cumsum(s, out=out[1:])
    return out


def sizes_from_offsets(offsets: ArrayLike) -> NDArray[np.int64]:
    """Offsets ``(Q + 1,)`` -> group sizes ``(Q,)``."""
    return np.diff(_check_offsets(offsets, None))


def offsets_from_qids(qids: ArrayLike) -> NDArray[np.int64]:
    """Offsets of the runs of equal consecutive values in ``qids`` ``(N,)``.

    Rows must already be grouped (each query contiguous), as in LETOR files. A query id that
    appears in two separate runs is an error, because silently splitting it into two queries
    would change every per-query metric.
    """
    q = np.asarray(qids)
    if q.ndim != 1:
        raise ValueError(f"qids must be 1-D, got shape {q.shape}")
    if q.size == 0:
        return np.zeros(1, dtype=np.int64)
    starts = np.flatnonzero(q[1:] != q[:-1]) + 1
    off = np.concatenate(([0], starts, [q.size])).astype(np.int64)
    firsts = q[off[:-1]]
    if np.unique(firsts).size != firsts.size:
        uniq, counts = np.unique(firsts, return_counts=True)
        dup = uniq[counts > 1][0]
        raise ValueError(
            f"query {dup!r} appears in more than one block of rows; rows must be grouped by query"
        )
    return off


def pad_groups(
    values: ArrayLike,
    offsets: ArrayLike,
    fill: Any = 0.0,
    *,
    length: int | None = None,
    dtype: Any = None,
) -> tuple[NDArray[Any], NDArray[np.bool_]]:
    """Scatter flat grouped rows into a padded array.

    Parameters
    ----------
    values : (N, *rest) array
        Rows grouped by query (query ``q`` owns ``values[offsets[q]:offsets[q+1]]``).
    offsets : (Q + 1,) int array
        Group boundaries, ``offsets[0] == 0`` and ``offsets[-1] == N``.
    fill : scalar
        Value written into padding cells.
    length : int, optional
        Row length ``L`` (default: the largest group). Must be at least the largest group.
    dtype : optional
        Result dtype (default: ``numpy.result_type(values, fill)``).

    Returns
    -------
    padded : (Q, L, *rest) array
    mask : (Q, L) bool array, True where ``padded`` holds a real row.
    """
    v = np.asarray(values)
    if v.ndim == 0:
        raise ValueError("values must be at least 1-D")
    off = _check_offsets(offsets, v.shape[0])
    sizes = np.diff(off)
    n_q = sizes.size
    longest = int(sizes.max()) if n_q else 0
    width = longest if length is None else int(length)
    if width < longest:
        raise ValueError(f"length={width} is shorter than the largest group ({longest})")
    if dtype is None:
        dtype = np.result_type(v, np.asarray(fill)) if v.dtype != object else object
    padded = np.full((n_q, width, *v.shape[1:]), fill, dtype=dtype)
    rows = np.repeat(np.arange(n_q), sizes)
    cols = np.arange(v.shape[0]) - np.repeat(off[:-1], sizes)
    padded[rows, cols] = v
    mask = np.zeros((n_q, width), dtype=bool)
    mask[rows, cols] = True
    return padded, mask


def unpad(padded: ArrayLike, mask: ArrayLike) -> tuple[NDArray[Any], NDArray[np.int64]]:
    """Inverse of :func:`pad_groups` for trailing padding: ``(values (N, *rest), offsets)``."""
    p = np.asarray(padded)
    m = np.asarray(mask, dtype=bool)
    if m.ndim != 2 or p.shape[:2] != m.shape:
        raise ValueError(f"mask shape {m.shape} does not match padded shape {p.shape}")
    return p[m], offsets_from_sizes(m.sum(axis=1))
