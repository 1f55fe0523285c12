"""Running a metric on blocks of queries, on threads (``HEAPJUDGE_THREADS``).

Every metric is independent per query, so blocks change no value (docs/metrics.md#arrays).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ranking.metrics.kernel import F64

#: Cells (queries x documents) per work unit: small enough to stay in cache and to bound the
#: temporaries (about 2 MB per float64 array), large enough to amortise numpy's call overhead.
CHUNK_CELLS = 1 << 18
_ROW_ARGS = ("mask", "ideal_labels", "ideal_mask", "docids")
_ROW_VECTOR_ARGS = ("r_max",)


def threads() -> int:
    """Worker threads for blocks: ``HEAPJUDGE_THREADS`` when set, else up to 4 (the cores)."""
    env = os.environ.get("HEAPJUDGE_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, min(4, os.cpu_count() or 1))


def row_chunked(fn: Callable[..., F64]) -> Callable[..., F64]:
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
        workers = min(threads(), len(starts))
        if workers <= 1:
            return np.concatenate([block(i) for i in starts])
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return np.concatenate(list(pool.map(block, starts)))

    return wrapper
