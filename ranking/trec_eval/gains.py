"""Gain values of trec_eval's graded measures (``gain_init.c``) and the ideal ranking.

A gain list is the ``level=gain`` parameters given on the command line (levels that are not
integers are ignored) followed by every judged grade ``0 .. max`` not given, with gain equal
to the grade. trec_eval sorts the list with a comparator that truncates the gains' difference
to an ``int`` (so gains closer than 1 compare equal); this sort keeps equal ones in list
order. A document's gain is that of the first entry with its grade, 0 when none.

The ideal ranking of a query repeats each entry's gain as many times as the query has judged
documents of its grade, from the last (largest) entry down, and ends at the first entry with
a gain ≤ 0 that has documents.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cmp_to_key

import numpy as np

from ranking.trec_eval.fast_merge import compiled_gain_rows, compiled_ideal_rows
from ranking.trec_eval.merge import Batch, FloatArray, IntArray

__all__ = ["Gains", "ideal_matrix", "result_gains", "setup_gains"]

_VALID_INT = re.compile(r"[+-]?\d+\Z")


@dataclass(frozen=True)
class Gains:
    """Sorted entries: grade, gain, and whether it came from a parameter."""

    levels: tuple[int, ...]
    values: tuple[float, ...]
    from_param: tuple[bool, ...]

    def lookup(self, low: int, high: int) -> FloatArray:
        """Gain of grades ``low .. high`` (index ``grade - low``)."""
        table = np.zeros(high - low + 1)
        seen: set[int] = set()
        for level, value in zip(self.levels, self.values, strict=True):
            if level not in seen and low <= level <= high:
                table[level - low] = value
            seen.add(level)
        return table


def _compare(a: tuple[int, float, bool], b: tuple[int, float, bool]) -> int:
    return int(a[1] - b[1])


def setup_gains(pairs: Sequence[tuple[str, float]], num_levels: int) -> Gains:
    """The sorted gain list for judged grades ``0 .. num_levels - 1``."""
    entries: list[tuple[int, float, bool]] = []
    for name, value in pairs:
        if _VALID_INT.match(name):
            entries.append((int(name), float(value), True))
    given = {level for level, _, _ in entries}
    for level in range(num_levels):
        if level not in given:
            entries.append((level, float(level), False))
    entries.sort(key=cmp_to_key(_compare))
    return Gains(
        tuple(e[0] for e in entries), tuple(e[1] for e in entries), tuple(e[2] for e in entries)
    )


def result_gains(batch: Batch, gains: Gains) -> FloatArray:
    """Each retrieved document's gain (0 past the ranking)."""
    low = -3
    high = max(batch.rel_levels.shape[1], max(gains.levels, default=0) + 1)
    table = gains.lookup(low, high)
    fast = compiled_gain_rows(batch.rel, batch.num_ret, table, low)  # the same look-ups in C
    if fast is not None:
        return fast
    grades = np.clip(batch.rel, low, high)
    out = table[grades - low]
    out[~batch.valid] = 0.0
    return out


def _entry_counts(batch: Batch, gains: Gains) -> IntArray:
    width = batch.rel_levels.shape[1]
    cols = []
    for level in gains.levels:
        cols.append(
            batch.rel_levels[:, level] if 0 <= level < width else np.zeros(batch.n, dtype=np.int64)
        )
    return np.stack(cols, axis=1) if cols else np.zeros((batch.n, 0), dtype=np.int64)


def ideal_matrix(batch: Batch, gains: Gains, width: int) -> tuple[FloatArray, IntArray]:
    """``(ideal gains, n_ideal)``: each query's ideal gains by position, 0 past its end,
    ``width`` columns at least (and one zero column past the longest)."""
    fast = compiled_ideal_rows(batch.rel_levels, gains.levels, gains.values, width)
    if fast is not None:  # the same rows, one query at a time in C
        return fast
    counts = _entry_counts(batch, gains)[:, ::-1]
    values = np.asarray(gains.values[::-1], dtype=np.float64)
    stop = np.cumsum((counts > 0) & (values <= 0)[None, :], axis=1) > 0
    counts = np.where(stop, 0, counts)
    n_ideal = counts.sum(axis=1, dtype=np.int64)
    size = max(width, int(n_ideal.max(initial=0)) + 1)
    ideal = np.zeros((batch.n, size))
    total = int(n_ideal.sum())
    if total:
        # each row's gains one after the other: entry e's value repeated counts[q, e] times
        flat = np.repeat(np.broadcast_to(values, counts.shape).ravel(), counts.ravel())
        rows = np.repeat(np.arange(batch.n), n_ideal)
        starts = np.cumsum(n_ideal) - n_ideal
        ideal[rows, np.arange(total) - np.repeat(starts, n_ideal)] = flat
    return ideal, n_ideal
