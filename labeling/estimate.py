"""Expected number of remaining questions of Algorithm 1, for "about N left" in the UI.

Model (uniformly random order, consistent assessor):

* a stream item at 1-based position ``i > m`` of the order evicts the root with probability
  ``m / i`` (it must be among the best ``m`` of the first ``i`` items), so the expected number
  of replacements still to come is ``Σ_i m/i`` (``k(H_n - H_k)`` = 15.7 for
  n = 50, k = 10);
* every remaining sift-down costs a phase-dependent fraction of its structural worst case
  (:func:`labeling.heap.worst_sift`). The fractions were measured by simulation (3,000 random
  orders for (n, k) in {(50,10), (100,10), (20,10), (50,5), (30,3), (200,20)}); with them the
  expected total matches the simulated means within about 1% (``benchmarks/labeling_counts.py``
  prints the check).

The hard guarantee lives in :meth:`HeapTopK.max_remaining`; this is only the expectation.
"""

from __future__ import annotations

from labeling.heap import HeapTopK, worst_sift

#: Mean cost of a sift-down as a fraction of its worst case, per phase: (no cache, cache).
#: The pair cache saves most in Step 3, which re-asks pairs first compared in Steps 1-2.
BUILD_FRACTION = (0.87, 0.84)
STREAM_FRACTION = (0.78, 0.71)
SORT_FRACTION = (0.90, 0.62)


def expected_remaining(state: HeapTopK, *, cache: bool) -> float:
    """Expected oracle questions still to come (including the pending one)."""
    phase = state.phase
    if phase == "done":
        return 0.0
    c = 1 if cache else 0
    m = state.m
    total = 0.0
    fraction = {"build": BUILD_FRACTION, "stream": STREAM_FRACTION, "sort": SORT_FRACTION}[phase]
    if state.cursor is not None:
        i, size, child = state.cursor
        rest = worst_sift(i, size) if child is None else 1 + worst_sift(child, size)
        total += max(1.0, fraction[c] * rest)
    w0 = worst_sift(0, m)
    if phase == "build":
        total += BUILD_FRACTION[c] * sum(worst_sift(j, m) for j in range(state.build_i))
        first = m + 1  # 1-based position of the first stream item
    elif phase == "stream":
        if state.cursor is None:  # pending root comparison: 1 plus a possible sift
            total += 1.0 + STREAM_FRACTION[c] * w0 * m / (m + state.pos + 1)
        first = m + state.pos + 2
    if phase != "sort":
        # Remaining stream items: one root comparison each, plus a sift when they evict it.
        n = state.n
        total += n - first + 1
        total += STREAM_FRACTION[c] * w0 * sum(m / i for i in range(first, n + 1))
        total += SORT_FRACTION[c] * sum(worst_sift(0, e) for e in range(1, m))
    else:
        total += SORT_FRACTION[c] * sum(worst_sift(0, e) for e in range(1, state.sort_end))
    return total
