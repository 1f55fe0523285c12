"""C library arithmetic trec_eval's output depends on: ``log``/``log2``/``exp`` from libm
(Python's :mod:`math` calls the same functions) and ``printf``'s ``%6.4f``."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

__all__ = ["MIN_GEO_MEAN", "c_exp", "c_log", "fmt_double", "log2_table"]

#: trec_eval's floor for a query's value before the geometric mean (``trec_eval.h``).
MIN_GEO_MEAN = 0.00001


def c_log(x: float) -> float:
    """C ``log``: -inf at 0 and NaN below, where :func:`math.log` raises."""
    if x > 0 or math.isinf(x):
        return math.log(x)
    return -math.inf if x == 0 else math.nan


def c_exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


@lru_cache(maxsize=16)
def _table(size: int) -> NDArray[np.float64]:
    return np.array([math.log2(i) if i > 0 else -math.inf for i in range(size)], dtype=np.float64)


def log2_table(size: int) -> NDArray[np.float64]:
    """``log2(i)`` for ``i`` in ``0 .. size-1``, from libm (numpy's vector log2 may differ in
    the last bit, which could change a printed digit)."""
    bucket = 1 << max(size - 1, 1).bit_length()
    return _table(bucket)[:size]


def fmt_double(value: float) -> str:
    """C ``printf("%6.4f")`` of ``value`` (Python rounds the exact binary value the same way);
    NaN prints as glibc does, with its sign."""
    if math.isnan(value):
        return f"{'-nan' if math.copysign(1.0, value) < 0 else 'nan':>6}"
    if math.isinf(value):
        return f"{'-inf' if value < 0 else 'inf':>6}"
    return f"{value:6.4f}"
