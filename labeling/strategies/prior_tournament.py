"""A tournament shaped by the prior order, for top-k labeling (strategy ``"prior"``).

Replacement selection (Knuth, *The Art of Computer Programming* vol. 3, §5.3.3 and §5.4.1, as
in :mod:`labeling.strategies.tournament`), but on a tree whose shape follows the given order:
documents early in the order, likely to be in the top k when the order is a good prior (a system
ranking, task option ``initial_order``), sit on shallow leaves, so taking each of them out costs
few replayed matches; late documents sit deep, where they lose once and are never seen again.
Written as a generator that asks for comparisons, like :mod:`labeling.strategies.heap`:

* **Shape.** A Huffman tree (Huffman 1952, "A Method for the Construction of
  Minimum-Redundancy Codes") over the positions ``i = 0 … n−1`` of the order with the integer
  weights :func:`leaf_weights`, ``w_i = ⌊2^20 k³ / (k³ + i³)⌋``: about 1 for the first k
  positions, falling off as ``(k / i)³`` after them. The two lightest subtrees are merged
  first (ties: the subtree with the later first position first), so the expected depth of a
  top document is close to the smallest possible for these weights. Internal nodes are
  numbered ``n, n+1, …`` in merge order, so every node comes after its children; in a node's
  match the subtree holding the earlier position is the left one.
* **Build.** Every internal node in number order asks ``prefer(left winner, right winner)``:
  n − 1 questions, and the root holds the best document.
* **Select.** The root's document is taken out and its leaf emptied; every node on its path to
  the root is replayed bottom-up: one empty child is a walkover (no question), two non-empty
  ones ask again. After ``m = min(k, n)`` documents are out, the rest is every other document
  in input order.
* **Ties.** A tie lets the right winner advance: "not preferred", as in Algorithm 1.
* **Not relevant** is never offered: as in the plain tournament, losing a match does not take a
  document out of the top, so no question has a loser that certainly goes to the rest.
* **Pair cache.** No pair is asked twice (two documents can only meet at their lowest common
  ancestor, whose children change only when its winner is taken out), so counts are the same
  with the cache on or off.

Judgment counts: exactly n − 1 to build, then ``m − 1`` replays, each at most the depth of the
leaf taken out. Means at (n, k) = (50, 10), pair cache on: about 82 with a prior that
correlates 0.7 with the truth and 102 on random orders (``benchmarks/labeling_counts.py``).
See ``docs/protocols.md#prior``.
"""

from __future__ import annotations

import heapq
from collections.abc import Generator, Sequence
from functools import lru_cache
from typing import ClassVar

from labeling.strategies.base import Compare, ComparisonGenerator, Winner, check_strategy_args

#: Scale of the integer leaf weights (exact integer arithmetic keeps the shape, and so every
#: stored task's questions, the same on every platform).
WEIGHT_SCALE = 1 << 20


def leaf_weights(n: int, k: int) -> list[int]:
    """Weight of each position ``i`` of the order: ``⌊2^20 k³ / (k³ + i³)⌋``.

    A smooth stand-in for "how likely is the i-th document of a prior to be in the top k":
    flat over the first k positions (within a factor 2), then ``(k / i)³``. With a random order
    every document is equally likely, so the skew costs judgments there (docs/protocols.md#prior
    gives both figures).
    """
    k3 = k**3
    return [WEIGHT_SCALE * k3 // (k3 + i**3) for i in range(n)]


@lru_cache(maxsize=64)
def huffman_shape(n: int, k: int) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]]:
    """The tree over ``n`` leaves: ``(children, parent)``.

    ``children[j]`` is the (left, right) pair of internal node ``n + j``; ``parent[v]`` is the
    parent of node ``v`` (``-1`` for the root, node ``2n − 2``, or the single leaf when n = 1).
    Cached: a session is rebuilt on every request, and the shape depends on (n, k) only.
    """
    weights = leaf_weights(n, k)
    # (weight, -first position, node): the lightest first; among equal weights the subtree
    # whose first position is later (less likely to hold a top document) goes first.
    heap = [(w, -i, i) for i, w in enumerate(weights)]
    heapq.heapify(heap)
    children: list[tuple[int, int]] = []
    parent = [-1] * (2 * n - 1)
    first: dict[int, int] = {i: i for i in range(n)}
    while len(heap) > 1:
        w1, _, a = heapq.heappop(heap)
        w2, _, b = heapq.heappop(heap)
        left, right = (a, b) if first[a] < first[b] else (b, a)
        node = n + len(children)
        children.append((left, right))
        parent[left] = parent[right] = node
        first[node] = min(first[a], first[b])
        heapq.heappush(heap, (w1 + w2, -first[node], node))
    return tuple(children), tuple(parent)


@lru_cache(maxsize=64)
def leaf_depths(n: int, k: int) -> tuple[int, ...]:
    """Depth of every leaf of :func:`huffman_shape` (the root's children are at depth 1)."""
    _, parent = huffman_shape(n, k)
    depths = []
    for leaf in range(n):
        depth, node = 0, leaf
        while parent[node] >= 0:
            node, depth = parent[node], depth + 1
        depths.append(depth)
    return tuple(depths)


class PriorTournamentTopK:
    """The state of the prior-shaped tournament on one ordered list, plus :meth:`run`.

    Readable while the generator is paused: ``winner`` (per node, ``None`` once its subtree is
    empty), ``top`` (documents taken out so far, best first), ``phase`` (``build`` / ``select``
    / ``done``) and ``cursor`` (the node whose match is pending).
    """

    #: Confirmations per question the robust modifier gives a consistent assessor on a random
    #: order (its progress model, :class:`labeling.strategies.base.PairStrategy`).
    confirmation_share: ClassVar[float] = 0.98

    def __init__(self, order: Sequence[str], k: int) -> None:
        check_strategy_args(order, k)
        self.k = k
        self.n = n = len(order)
        self.m = min(k, n)
        self.order = list(order)
        self.children, self.parent = huffman_shape(n, k)
        self.winner: list[str | None] = [*self.order, *([None] * (n - 1))]
        self.top: list[str] = []
        self.phase = "build"
        self.cursor = n if n > 1 else -1  # the build's first match (-1: nothing to ask)

    def run(self) -> ComparisonGenerator:
        """The tournament as a generator: yields :class:`Compare`, returns ``(top, rest)``."""
        n, winner, parent, top = self.n, self.winner, self.parent, self.top
        for node in range(n, 2 * n - 1):  # children come before their parent
            self.cursor = node
            winner[node] = yield from self._match(node)
        self.phase = "select"
        root = 2 * n - 2
        position = {doc: i for i, doc in enumerate(self.order)}
        while True:
            best = winner[root]
            assert best is not None  # m <= n documents, so the tree is not empty yet
            top.append(best)
            if len(top) == self.m:
                break
            node = position[best]
            winner[node] = None
            while parent[node] >= 0:
                node = parent[node]
                left, right = self.children[node - n]
                if winner[left] is None or winner[right] is None:  # a walkover
                    winner[node] = winner[right] if winner[left] is None else winner[left]
                else:
                    self.cursor = node
                    winner[node] = yield from self._match(node)
        self.phase = "done"
        self.cursor = -1
        taken = set(top)
        return list(top), [doc for doc in self.order if doc not in taken]

    def _match(self, node: int) -> Generator[Compare, Winner, str]:
        """``prefer(left, right)`` at ``node``; the left winner advances only if preferred."""
        left, right = self.children[node - self.n]
        a, b = self.winner[left], self.winner[right]
        assert a is not None and b is not None
        return a if (yield Compare(a, b)) == a else b

    def _replay_cost(self, node: int) -> int:
        """Most questions a replay from ``node`` upward asks: one per ancestor whose other
        child's subtree is not empty (exact for the pending replay)."""
        n, parent, winner, total = self.n, self.parent, self.winner, 0
        while parent[node] >= 0:
            up = parent[node]
            left, right = self.children[up - n]
            if winner[right if left == node else left] is not None:
                total += 1
            node = up
        return total

    def _leaf_costs(self) -> list[int]:
        """For every leaf still holding a document: the questions its replay would ask if it
        were taken out now (at most its depth; later removals only empty more siblings).
        Before the build is over every subtree is full, so it is the depth."""
        if self.phase == "build":
            return list(leaf_depths(self.n, self.k))
        return [self._replay_cost(i) for i in range(self.n) if self.winner[i] is not None]

    def _replays_left(self) -> int:
        """Replays still to start after the pending question's own (build or replay)."""
        if self.phase == "build":
            return self.m - 1
        return self.m - 1 - len(self.top)

    def _now(self) -> int:
        """Questions certain to come in the current step, the pending one included: the build
        matches left, or the pending replay's remainder."""
        if self.phase == "build":
            return 2 * self.n - 1 - self.cursor
        # The pending match at the cursor, then one per ancestor above it with a non-empty
        # other child (the cursor's own subtree is non-empty: it holds a winner).
        return 1 + self._replay_cost(self.cursor)

    def fixed_positions(self) -> int:
        """Top positions fixed for good while paused. 0: the robust modifier's provisional stakes
        treat this tournament like the strategies whose top list can change until they finish."""
        return 0

    def max_remaining(self) -> int:
        """Upper bound on the questions still to come, counting the pending one: the current
        step's certain questions, then for the replays left the largest replay costs among the
        leaves still in the tree (each replay takes out a different leaf, and a replay never
        costs more than that leaf's cost now: removals only turn matches into walkovers)."""
        if self.phase == "done":
            return 0
        replays = self._replays_left()
        costs = sorted(self._leaf_costs(), reverse=True)[:replays] if replays else []
        return self._now() + sum(costs)

    def expected_remaining(self, *, cache: bool) -> float:
        """Expected questions still to come on a random order (the pending one included): the
        current step's certain questions, then for each replay left the mean replay cost over
        the leaves still in the tree (on a random order every one is equally likely to be
        taken out). With a good prior the shallow leaves are taken out more often, so this
        overestimates there. ``cache`` changes nothing: no pair is asked twice."""
        del cache  # no pair is asked twice
        if self.phase == "done":
            return 0.0
        replays = self._replays_left()
        costs = self._leaf_costs() if replays else []
        mean = sum(costs) / len(costs) if costs else 0.0
        return self._now() + replays * mean
