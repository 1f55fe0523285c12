"""Binary insertion into a sorted top list for top-k labeling (strategy ``"insertion"``).

The strategy for documents that come in a good prior order (a system ranking, task option
``initial_order``): the best documents come first and fill the list, so most later documents
are dismissed with a single comparison. Written as a generator that asks for comparisons,
like :mod:`labeling.strategies.heap`:

* **Fill.** The first ``m = min(k, n)`` documents of the order are inserted one by one into a
  list kept sorted best first, each by binary search: ``prefer(x, top[mid])`` with
  ``mid = (lo + hi) // 2`` over the slots ``lo … hi`` still possible; if ``x`` is preferred
  the slots above ``mid`` remain, otherwise those below.
* **Gate.** Every later document ``x`` is compared once with the k-th, ``prefer(x, top[k−1])``
  (the *challenger* question). If ``x`` is not preferred it goes to the rest; otherwise the
  k-th goes to the rest and ``x`` is placed among the first ``k − 1`` by binary search.
* **Ties.** A tie is "not preferred", as in Algorithm 1: at the gate ``x`` goes to the rest,
  in a search ``x`` is placed below ``top[mid]``.
* **Not relevant** is offered at the gate only, and refers to ``x``: ``x`` goes to the rest,
  exactly like a lost gate. During the fill every document still enters the list, so it is
  not offered there.
* **Pair cache.** No pair is asked twice (every question involves the document being placed,
  and each search compares it with distinct list members), so counts are the same with the
  cache on or off.
* **n ≤ k.** Everything is fill: the result is a binary insertion sort of all n documents.

Judgment counts: inserting into a list of j documents costs ``⌈log2 (j + 1)⌉`` at most
(``Σ_{j<m} ⌈log2 (j + 1)⌉`` for the fill), and each later document costs 1, or
``1 + ⌈log2 k⌉`` when it passes the gate. On a random order the i-th document passes the
gate with probability ``k / i``; the mean is about 115 at (n, k) = (50, 10), and about 84 with
a prior that correlates 0.7 with the truth (``benchmarks/labeling_counts.py``).
See ``docs/protocols.md#insertion``.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from functools import lru_cache
from typing import ClassVar

from labeling.strategies.base import Compare, ComparisonGenerator, Winner, check_strategy_args


@lru_cache(maxsize=4096)
def search_depths(slots: int) -> int:
    """Total questions of the binary search over ``slots`` slots, summed over the slots (the
    final slot decides the path): ``T(1) = 0``, ``T(s) = s + T(⌊(s−1)/2⌋ + 1) + T(s − that)``,
    following the ``mid = (lo + hi) // 2`` split of :meth:`InsertionTopK._search`."""
    if slots <= 1:
        return 0
    upper = (slots - 1) // 2 + 1  # slots lo … mid: x preferred to top[mid]
    return slots + search_depths(upper) + search_depths(slots - upper)


def mean_search(slots: int) -> float:
    """Mean questions of a binary search when every one of ``slots`` slots is equally likely."""
    return search_depths(slots) / slots if slots > 1 else 0.0


def worst_search(slots: int) -> int:
    """Most questions of a binary search over ``slots`` slots: ``⌈log2 slots⌉``."""
    return (slots - 1).bit_length() if slots > 1 else 0


class InsertionTopK:
    """The state of binary insertion on one ordered list, plus its generator :meth:`run`.

    Readable while the generator is paused: ``top`` (sorted, best first), ``rest`` (eviction
    and dismissal order), ``phase`` (``fill`` / ``stream`` / ``done``), ``pos`` (index in the
    order of the document being placed) and ``bracket`` (the slots ``(lo, hi)`` a pending
    search still allows, ``None`` at a pending gate).
    """

    #: Confirmations per question the robust modifier gives a consistent assessor on a random
    #: order (its progress model, :class:`labeling.strategies.base.PairStrategy`).
    confirmation_share: ClassVar[float] = 0.98
    #: A document beaten by the pivot of its search is placed just below it by the search's
    #: next questions (the assist rule's stake, :func:`labeling.strategies.assist.wrong_stake`).
    places_loser_below_winner: ClassVar[bool] = True

    def __init__(self, order: Sequence[str], k: int) -> None:
        check_strategy_args(order, k)
        self.k = k
        self.n = len(order)
        self.m = min(k, self.n)
        self.order = list(order)
        self.top: list[str] = []
        self.rest: list[str] = []
        self.phase = "fill"
        self.pos = 0
        self.bracket: tuple[int, int] | None = None

    def run(self) -> ComparisonGenerator:
        """Binary insertion as a generator: yields :class:`Compare`, returns ``(top, rest)``."""
        top, m = self.top, self.m
        for pos, x in enumerate(self.order):
            self.pos = pos
            if pos < m:  # fill: every document enters the list
                yield from self._search(x, len(top))
                continue
            self.phase = "stream"
            self.bracket = None
            # Gate: x must beat the k-th to enter; the k-th then leaves.
            if (yield Compare(x, top[-1], challenger=True)) != x:
                self.rest.append(x)
                continue
            self.rest.append(top.pop())
            yield from self._search(x, len(top))
        self.phase = "done"
        self.bracket = None
        return list(top), list(self.rest)

    def _search(self, x: str, hi: int) -> Generator[Compare, Winner, None]:
        """Insert ``x`` into ``top[0:hi]`` by binary search over the slots ``0 … hi``."""
        top, lo = self.top, 0
        while lo < hi:
            self.bracket = (lo, hi)
            mid = (lo + hi) // 2
            if (yield Compare(x, top[mid])) == x:
                hi = mid  # x is above top[mid]
            else:
                lo = mid + 1  # below (a tie is "not preferred")
        top.insert(lo, x)

    def _future(self, start: int) -> tuple[list[int], list[int]]:
        """The documents from ``start`` on: list sizes of the fill insertions still to come,
        and the 1-based positions of the stream documents still to come."""
        m = self.m
        fills = list(range(start, m)) if start < m else []
        streams = list(range(max(start, m) + 1, self.n + 1))
        return fills, streams

    def fixed_positions(self) -> int:
        """Top positions fixed for good while paused: 0, the sorted top list can change until
        the last document is placed."""
        return 0

    def max_remaining(self) -> int:
        """Upper bound on the questions still to come, counting the pending one: the pending
        search's ``⌈log2 slots⌉`` (or the gate and a full search), then ``⌈log2 (j + 1)⌉`` per
        fill insertion into j documents and ``1 + ⌈log2 k⌉`` per later document."""
        if self.phase == "done":
            return 0
        m, pos = self.m, self.pos
        if self.bracket is not None:
            lo, hi = self.bracket
            total = worst_search(hi - lo + 1)
        else:  # a pending gate
            total = 1 + worst_search(m)
        fills, streams = self._future(pos + 1)
        total += sum(worst_search(j + 1) for j in fills)
        return total + len(streams) * (1 + worst_search(m))

    def expected_remaining(self, *, cache: bool) -> float:
        """Expected questions still to come on a random order (the pending one included):
        a search over s slots costs :func:`mean_search` (each slot equally likely); the i-th
        document of the order (1-based, i > k) passes the gate with probability ``m / i``.
        With a good prior fewer pass, so this overestimates. ``cache`` changes nothing: no pair
        is asked twice."""
        del cache  # no pair is asked twice
        if self.phase == "done":
            return 0.0
        m, pos = self.m, self.pos
        per_win = mean_search(m)
        if self.bracket is not None:
            lo, hi = self.bracket
            total = mean_search(hi - lo + 1)
        else:
            total = 1.0 + per_win * m / (pos + 1)
        fills, streams = self._future(pos + 1)
        total += sum(mean_search(j + 1) for j in fills)
        return total + sum(1.0 + per_win * m / i for i in streams)
