"""Algorithm 1 of Niu et al. (SIGIR 2012): top-k labeling with a size-k min-heap (tool T1).

The protocol is written as a generator that *asks* for comparisons, so it reads like the
paper (docs/protocols.md#heap has the conventions and a worked trace):

* Step 1: Floyd bottom-up heapify of the first ``m = min(k, n)`` items of the order;
* Step 2: one comparison of every remaining item ``r`` with the root (the least relevant of
  the current top k): if ``r`` is strictly preferred it replaces the root (the old root goes
  to the rest) and the root is sifted down; otherwise ``r`` goes to the rest;
* Step 3: in-place heapsort of the final min-heap, which leaves it in descending order.

``sift_down`` uses the two-judgment convention: compare the two children
(``less(right, left) := prefer(left, right)``), then the smaller child with the parent
(``less(child, parent) := prefer(parent, child)``). A tie is "not preferred", so it causes no
replacement and no swap. Every ``yield`` is one oracle call ``prefer(a, b)``; the value sent
back is the preferred document id, or ``None`` for a tie.

Judgment counts: worst case ``2k + (n-k)(1 + 2⌊log2 k⌋) + Σ_{e<k} 2⌊log2 e⌋``;
:func:`worst_sift` gives the exact structural bound (:meth:`HeapTopK.max_remaining`).

Expected remaining questions, for "about N left" in the UI (:func:`expected_remaining`;
model: uniformly random order, consistent assessor):

* a stream item at 1-based position ``i > m`` of the order evicts the root with probability
  ``m / i`` (it must be among the best ``m`` of the first ``i`` items), so the expected number
  of replacements still to come is ``Σ_i m/i`` (``k(H_n - H_k)`` = 15.7 for n = 50, k = 10);
* every remaining sift-down costs a phase-dependent fraction of its structural worst case
  (:func:`worst_sift`). The fractions were measured by simulation (3,000 random orders for
  (n, k) in {(50,10), (100,10), (20,10), (50,5), (30,3), (200,20)}); with them the expected
  total matches the simulated means within about 1% (``benchmarks/labeling_counts.py`` prints
  the check).

The hard guarantee lives in :meth:`HeapTopK.max_remaining`; the model is only the expectation.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from functools import lru_cache
from typing import ClassVar

from labeling.strategies.base import Compare, ComparisonGenerator, Winner, check_strategy_args


@lru_cache(maxsize=8192)  # progress estimates sum it over every heap size up to k
def worst_sift(i: int, size: int) -> int:
    """Most judgments ``sift_down(i, size)`` can take: 2 per step down from a node with two
    children, 1 from a node with one child, i.e. the recursion

        w(i) = 0 for a leaf, 1 + w(2i+1) with one child, 2 + max(w(2i+1), w(2i+2)) with two.

    Closed form, O(log size): the subtree of ``i`` is itself a complete binary tree (a heap of
    ``e`` nodes), and for a heap of ``e`` nodes with depth ``d = ⌊log2 e⌋`` the deepest level
    is reached through two-children nodes only, cost ``2d``, unless that level holds a single
    node (``e = 2^d``), whose parent has one child: then ``2d - 1``. (The recursion, memoised,
    visited O(e) nodes per call; summed over the sort phase it was O(k^2) per progress
    estimate. ``tests/labeling/strategies/test_heap_properties.py`` checks the two agree.)"""
    e = _subtree_size(i, size)
    if e <= 1:
        return 0
    d = e.bit_length() - 1
    return 2 * d - 1 if e == 1 << d else 2 * d


def _subtree_size(i: int, size: int) -> int:
    """Nodes of the subtree rooted at ``i`` in a heap of ``size`` nodes (0-based array)."""
    total = 0
    first, width = i, 1  # the subtree's nodes t levels down: first .. first + width - 1
    while first < size:
        total += min(width, size - first)
        first, width = 2 * first + 1, 2 * width
    return total


def worst_case_total(n: int, k: int) -> int:
    """The worst-case count ``2k + (n-k)(1 + 2⌊log2 k⌋) + Σ_{e=1}^{k-1} 2⌊log2 e⌋``.

    For ``n < k`` the heap holds ``m = n`` items and Step 2 is empty, so ``m`` replaces ``k``.
    """
    m = min(n, k)
    return (
        2 * m
        + (n - m) * (1 + 2 * (m.bit_length() - 1))
        + sum(2 * (e.bit_length() - 1) for e in range(1, m))
    )


class HeapTopK:
    """The state of Algorithm 1 on one ordered list of items, plus its generator :meth:`run`.

    The attributes are readable while the generator is paused (for progress estimates and
    audits): ``heap``, ``rest`` (eviction/discard order), ``phase`` (``build`` / ``stream`` /
    ``sort`` / ``done``), ``pos`` (index of the stream item being placed), ``build_i`` and
    ``sort_end`` (the loop variables of Steps 1 and 3) and ``cursor`` (where a sift-down is
    paused: ``(i, size, None)`` before the children comparison, ``(i, size, c)`` before the
    comparison of child ``c`` with its parent; ``None`` at a root comparison).
    """

    #: Confirmations per question the robust modifier gives a consistent assessor on a random
    #: order (its progress model, :class:`labeling.strategies.base.PairStrategy`).
    confirmation_share: ClassVar[float] = 0.99

    def __init__(self, order: Sequence[str], k: int) -> None:
        check_strategy_args(order, k)
        self.k = k
        self.n = len(order)
        self.m = min(k, self.n)
        self.heap: list[str] = list(order[: self.m])
        self.stream: list[str] = list(order[self.m :])
        self.rest: list[str] = []
        self.phase = "build"
        self.pos = 0
        # Before the first question no sift has started: every build sift is still to come.
        self.build_i = self.m // 2
        self.sort_end = self.m
        self.cursor: tuple[int, int, int | None] | None = None

    def run(self) -> ComparisonGenerator:
        """Algorithm 1 as a generator: yields :class:`Compare`, returns ``(top, rest)``."""
        heap, m = self.heap, self.m
        # Step 1: bottom-up heapify (Floyd), O(k) judgments.
        for i in range(m // 2 - 1, -1, -1):
            self.build_i = i
            yield from self._sift_down(i, m)
        # Step 2: one root comparison per remaining item.
        self.phase = "stream"
        for pos, r in enumerate(self.stream):
            self.pos = pos
            self.cursor = None
            if (yield Compare(r, heap[0], challenger=True)) == r:
                # r is strictly better than the current minimum: it evicts the root.
                self.rest.append(heap[0])
                heap[0] = r
                yield from self._sift_down(0, m)
            else:
                self.rest.append(r)  # discarded, never seen again
        self.pos = len(self.stream)
        # Step 3: in-place heapsort of a min-heap leaves it in descending order.
        self.phase = "sort"
        for end in range(m - 1, 0, -1):
            self.sort_end = end
            heap[0], heap[end] = heap[end], heap[0]
            yield from self._sift_down(0, end)
        self.phase = "done"
        self.cursor = None
        return list(heap), list(self.rest)

    def _sift_down(self, i: int, size: int) -> Generator[Compare, Winner, None]:
        """Restore the min-heap below ``i`` (two-judgment convention, docs/protocols.md#heap)."""
        heap = self.heap
        while True:
            left = 2 * i + 1
            if left >= size:
                return
            c = left
            if left + 1 < size:
                self.cursor = (i, size, None)
                a, b = heap[left], heap[left + 1]
                # less(right, left) := prefer(left, right): the right child is smaller.
                if (yield Compare(a, b)) == a:
                    c = left + 1
            self.cursor = (i, size, c)
            parent, child = heap[i], heap[c]
            # less(child, parent) := prefer(parent, child): the child moves up.
            if (yield Compare(parent, child)) == parent:
                heap[i], heap[c] = child, parent
                i = c
            else:
                return

    def fixed_positions(self) -> int:
        """Top positions fixed for good while paused: 0, the heap's top list can change until
        Step 3 has finished."""
        return 0

    def max_remaining(self) -> int:
        """Upper bound on the oracle calls still to come, counting the pending one.

        Structural (it depends only on heap positions, never on answers), so it holds for any
        assessor; a pair cache can only lower the true count.
        """
        m = self.m
        phase = self.phase
        if phase == "done":
            return 0
        total = 0
        if self.cursor is not None:
            i, size, c = self.cursor
            total += worst_sift(i, size) if c is None else 1 + worst_sift(c, size)
        w0 = worst_sift(0, m)
        if phase == "build":
            total += sum(worst_sift(j, m) for j in range(self.build_i))
            total += len(self.stream) * (1 + w0)
        elif phase == "stream":
            if self.cursor is None:  # the pending question is the root comparison
                total += 1 + w0
            total += (len(self.stream) - self.pos - 1) * (1 + w0)
        if phase != "sort":
            total += sum(worst_sift(0, e) for e in range(1, m))
        else:
            total += sum(worst_sift(0, e) for e in range(1, self.sort_end))
        return total

    def expected_remaining(self, *, cache: bool) -> float:
        """Expected oracle calls still to come (the pending one included) on a random order:
        the model of :func:`expected_remaining`."""
        return expected_remaining(self, cache=cache)


def heap_topk(order: Sequence[str], k: int) -> ComparisonGenerator:
    """Algorithm 1 on ``order`` (Steps 1 and 2 take items in this order) with heap size ``k``."""
    return HeapTopK(order, k).run()


#: Mean cost of a sift-down as a fraction of its worst case, per phase: (no cache, cache).
#: The pair cache saves most in Step 3, which re-asks pairs first compared in Steps 1-2.
BUILD_FRACTION = (0.87, 0.84)
STREAM_FRACTION = (0.78, 0.71)
SORT_FRACTION = (0.90, 0.62)


def expected_remaining(state: HeapTopK, *, cache: bool) -> float:
    """Expected oracle questions still to come (including the pending one): the model of the
    module docstring."""
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
