"""Replacement-selection tournament for top-k labeling (strategy ``"tournament"``).

A knockout tree over all n documents finds the best with n − 1 comparisons; each next-best is
found by replaying only the matches on the path of the document just taken out (Knuth, *The
Art of Computer Programming* vol. 3, §5.3.3 and §5.4.1, "replacement selection"). Written as
a generator that asks for comparisons, like :mod:`labeling.strategies.heap`:

* **Tree.** The complete binary tree of ``2n − 1`` nodes in an array: node ``i`` has children
  ``2i + 1`` and ``2i + 2``; the leaves ``n − 1 … 2n − 2`` hold the documents in the given
  order (the first ``2^⌈log2 n⌉ − n`` documents sit one level higher, so with a prior the
  prior's best are the cheapest to replay). Every internal node holds the winner of its
  subtree, ``None`` once the subtree is empty.
* **Build.** Nodes ``n − 2`` down to ``0``: one comparison ``prefer(left winner, right winner)``
  each, n − 1 in all (the last leaves of the order are shown first).
* **Select.** The root is the best document. To find the next one, its leaf is emptied and every
  node on its path to the root is replayed bottom-up: a node with one empty child takes the
  other child's winner without a question, a node with two asks ``prefer(left, right)``.
  After ``m = min(k, n)`` documents are taken out, the rest is every other document in input
  order.
* **Ties.** ``prefer(a, b)`` answered "tie" lets ``b`` (the right child's winner) advance: a tie
  is "not preferred", as in Algorithm 1.
* **Not relevant** is never offered: losing a match does not take a document out of the top
  (an early loser to the best document can be second), so there is no challenger whose
  dismissal would mean "goes to the rest".
* **Pair cache.** No pair is ever asked twice: the two children of a node only change when the
  node's winner is taken out, and two documents can only meet at their lowest common ancestor.
  The cache never answers a tournament question, so counts are the same with it on or off.

Judgment counts: exactly ``n − 1`` to build, then ``m − 1`` replays; a replay costs at most
``⌈log2 n⌉ − 1`` (the winner's leaf depth minus one), so the worst case is
``n − 1 + (m − 1)(⌈log2 n⌉ − 1)``, which equals ``n − k + Σ_{j=n−k+2}^{n} ⌈log2 j⌉`` at
(50, 10), (100, 10) and (200, 20): 94, 153, 332 (:func:`labeling.strategies.registry.lower_bound`).
Mean on random orders: about 91 at (50, 10) (``benchmarks/labeling_counts.py``).
See ``docs/protocols.md#tournament``.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from functools import lru_cache
from typing import ClassVar

from labeling.strategies.base import Compare, ComparisonGenerator, Winner, check_strategy_args


@lru_cache(maxsize=4096)
def mean_replay_cost(leaves: int) -> float:
    """Mean questions of one replay when the tree has ``leaves`` non-empty leaves, for a
    uniformly chosen winner, modelled on a complete tree of that many leaves: a leaf at depth
    d costs d − 1, and with ``D = ⌈log2 j⌉`` the complete tree has ``2j − 2^D`` leaves at depth
    D and the others at D − 1, so the mean is ``D − 1 − (2^D − j) / j``. (After removals the
    real tree has holes, which only lower its costs; the progress bound does not rely on this.)
    """
    if leaves <= 1:
        return 0.0
    depth = (leaves - 1).bit_length()  # ⌈log2 leaves⌉
    return depth - 1 - ((1 << depth) - leaves) / leaves


class TournamentTopK:
    """The state of a replacement-selection tournament on one ordered list, plus :meth:`run`.

    Readable while the generator is paused: ``tree`` (winner per node, ``None`` when empty),
    ``top`` (documents taken out so far, best first), ``phase`` (``build`` / ``select`` /
    ``done``) and ``cursor`` (the node whose match is pending).
    """

    #: Confirmations per question the robust modifier gives a consistent assessor on a random
    #: order (its progress model, :class:`labeling.strategies.base.PairStrategy`).
    confirmation_share: ClassVar[float] = 0.71

    def __init__(self, order: Sequence[str], k: int) -> None:
        check_strategy_args(order, k)
        self.k = k
        self.n = n = len(order)
        self.m = min(k, n)
        self.order = list(order)
        self.tree: list[str | None] = [None] * (n - 1) + self.order
        self.leaf = {doc: n - 1 + j for j, doc in enumerate(self.order)}
        self.top: list[str] = []
        self.phase = "build"
        self.cursor = n - 2  # the build's first node (-1 when n = 1: nothing to ask)

    def run(self) -> ComparisonGenerator:
        """The tournament as a generator: yields :class:`Compare`, returns ``(top, rest)``."""
        tree, top = self.tree, self.top
        # Build: every internal node, deepest first, plays its two children's winners.
        for i in range(self.n - 2, -1, -1):
            self.cursor = i
            tree[i] = yield from self._match(i)
        # Select: take the root out and replay its path, until m documents are out.
        self.phase = "select"
        while True:
            best = tree[0]
            assert best is not None  # m <= n documents, so the tree is not empty yet
            top.append(best)
            if len(top) == self.m:
                break
            i = self.leaf[best]
            tree[i] = None
            while i > 0:
                i = (i - 1) // 2
                left, right = tree[2 * i + 1], tree[2 * i + 2]
                if left is None or right is None:  # a walkover: no question
                    tree[i] = right if left is None else left
                else:
                    self.cursor = i
                    tree[i] = yield from self._match(i)
        self.phase = "done"
        self.cursor = -1
        taken = set(top)
        return list(top), [doc for doc in self.order if doc not in taken]

    def _match(self, i: int) -> Generator[Compare, Winner, str]:
        """``prefer(left, right)`` at node ``i``; the left winner advances only if preferred."""
        left, right = self.tree[2 * i + 1], self.tree[2 * i + 2]
        assert left is not None and right is not None
        return left if (yield Compare(left, right)) == left else right

    def _path_questions(self, i: int) -> int:
        """Questions left in the pending replay at node ``i`` (the pending one included): one
        per ancestor whose other child is non-empty, since the winner at ``i`` is not None."""
        tree, total = self.tree, 1
        while i > 0:
            sibling = i + 1 if i % 2 else i - 1
            i = (i - 1) // 2
            if tree[sibling] is not None:
                total += 1
        return total

    def _replays_left(self) -> int:
        """Replays still to start after the pending question's own (build or replay)."""
        if self.phase == "build":
            return self.m - 1
        return self.m - 1 - len(self.top)

    def fixed_positions(self) -> int:
        """Top positions fixed for good while paused: the documents taken out so far, which a
        replay never changes."""
        return len(self.top) if self.phase == "select" else 0

    def max_remaining(self) -> int:
        """Upper bound on the questions still to come, counting the pending one.

        Build: the ``cursor + 1`` matches left, then ``m − 1`` replays. Select: the pending
        replay's exact remainder, then the replays left. A replay costs at most
        ``⌈log2 n⌉ − 1`` (leaf depth minus one; emptied subtrees only make it cheaper).
        """
        if self.phase == "done":
            return 0
        per_replay = max(0, (self.n - 1).bit_length() - 1)
        now = self.cursor + 1 if self.phase == "build" else self._path_questions(self.cursor)
        return now + self._replays_left() * per_replay

    def expected_remaining(self, *, cache: bool) -> float:
        """Expected questions still to come on a random order (the pending one included): the
        certain part exactly (build matches, the pending replay's remainder), then
        :func:`mean_replay_cost` for each replay still to start. ``cache`` changes nothing:
        the tournament never repeats a pair."""
        del cache  # no pair is asked twice
        if self.phase == "done":
            return 0.0
        if self.phase == "build":
            total = float(self.cursor + 1)
            first = 1  # replay s removes the s-th document taken out
        else:
            total = float(self._path_questions(self.cursor))
            first = len(self.top) + 1
        for s in range(first, self.m):
            total += mean_replay_cost(self.n - s + 1)  # leaves before the s-th removal
        return total
