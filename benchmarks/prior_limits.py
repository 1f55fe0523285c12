"""How close the prior strategies are to what is possible with a ``prior0.7`` order.

The experiments behind docs/protocols.md#how-close-to-the-optimum: the issue's target for a
prior order is a mean of at most 80 judgments at (n, k) = (50, 10), the best strategy found
needs 81.1-81.8, and these are the measurements that bound the search. The scenario is the
one of ``heapjudge simulate --compare`` (labeling/study/simulation.py): latent ``u ~ U(0, 1)``, the
documents come in decreasing ``p = u + N(0, σ²)`` with ``σ = sd(u)·√(1/R² − 1)`` (R = 1/√2
for ``prior0.7``), and a consistent assessor answers by ``u``. Documents are named by their
position in the order (0 = the prior's best).

    python benchmarks/prior_limits.py optimum              # exact optimum, n <= 6 (seconds)
    python benchmarks/prior_limits.py optimum --sizes 7x3  # 5 minutes, about 6 GB
    python benchmarks/prior_limits.py information          # (n − k) + H(top k−1 | order)
    python benchmarks/prior_limits.py searchtrees          # insertion, optimal search trees
    python benchmarks/prior_limits.py greedy --trials 100  # posterior-greedy questions
    python benchmarks/prior_limits.py rollout --trials 60  # one-step rollout

* ``optimum``: the least expected number of questions any strategy can need, by dynamic
  programming over the sets of rankings still consistent with the answers, beside the exact
  expectation of every registered strategy under the same distribution of rankings.
* ``information``: ``(n − k) + H(ordered top k−1 | order)``, the form of Kislitsyn's bound
  (for a random order it is the information-theoretic bound ``n − k + log2(n!/(n−k+1)!)``).
  It is *not* a lower bound on a mean: ``optimum`` finds means below it at small n.
* ``searchtrees``: binary insertion with each step's binary search replaced by the optimal
  search tree for where that step's document lands (exact over the scenarios), for fills
  in the order and last-first (the optimum's pattern at small n).
* ``greedy``: every question chosen from samples of the posterior of ``u`` (given the order
  and the answers so far), by expected progress towards a proof of the top k plus a weight
  times the information the answer carries about the ordered top k.
* ``rollout``: every question chosen by one-step lookahead: the next question of each base
  strategy (``prior``, ``insertion``), each answer weighted by posterior samples, valued by
  running the cheaper base from there on every sample.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.stats import binom, norm

from labeling.strategies.insertion import InsertionTopK
from labeling.strategies.prior_tournament import PriorTournamentTopK
from labeling.strategies.registry import STRATEGIES
from labeling.study.simulation import SCENARIO_PRIOR_CORR, Assessor, prior_sigma, run_strategy

FloatArray = NDArray[np.float64]


def latent_by_position(rng: np.random.Generator, n: int, corr: float | None) -> FloatArray:
    """One scenario: the latent values listed in the order's positions (``None``: random)."""
    u = rng.random(n)
    if corr is None:
        return rng.permutation(u)
    p = u + rng.normal(0.0, prior_sigma(corr), n)
    return u[np.argsort(-p, kind="stable")]


def driven_count(strategy: type[Any], u: Sequence[float], k: int) -> int:
    """Questions ``strategy`` asks a consistent assessor (pair cache on) who answers by
    ``u`` (listed by position in the order): :func:`labeling.study.simulation.run_strategy`."""
    names = [f"{i:03d}" for i in range(len(u))]
    assessor = Assessor(dict(zip(names, u, strict=True)))
    return run_strategy(strategy, names, k, assessor)[2]


# --------------------------------------------------------------------------- exact optimum


@dataclass(frozen=True)
class Rankings:
    """Every ranking of n documents (``perms[i][r]`` = the position in the order of the
    document of true rank r) and its probability given the order."""

    n: int
    perms: list[tuple[int, ...]]
    prob: FloatArray


def rankings(n: int, corr: float | None, samples: int, seed: int = 7) -> Rankings:
    """The distribution of the true ranking given the order: exactly uniform for a random
    order (``corr=None``), else estimated from ``samples`` scenarios (the same for every
    order, so one table serves all)."""
    perms = list(itertools.permutations(range(n)))
    if corr is None:
        return Rankings(n, perms, np.full(len(perms), 1.0 / len(perms)))
    index = {perm: i for i, perm in enumerate(perms)}
    counts = np.zeros(len(perms))
    rng = np.random.default_rng(seed)
    batch = 500_000
    weights = n ** np.arange(n - 1, -1, -1)
    for start in range(0, samples, batch):
        size = min(batch, samples - start)
        u = rng.random((size, n))
        p = u + rng.normal(0.0, prior_sigma(corr), (size, n))
        by_position = np.take_along_axis(u, np.argsort(-p, axis=1), axis=1)
        ranking = np.argsort(-by_position, axis=1)  # true rank -> position in the order
        codes, hits = np.unique(ranking @ weights, return_counts=True)
        for code, hit in zip(codes.tolist(), hits.tolist(), strict=True):
            digits = tuple(code // n ** (n - 1 - j) % n for j in range(n))
            counts[index[digits]] += hit
    return Rankings(n, perms, counts / counts.sum())


def optimum(table: Rankings, k: int, show: int = 0) -> tuple[float, int, list[str]]:
    """Least expected questions to know the ordered top ``min(k, n)`` for sure, the number
    of states visited, and the optimal policy's first ``show`` levels as indented lines
    (``a>b`` is an answer, positions in the order).

    A state is the set S of rankings consistent with the answers so far (a bit mask); it is
    final when every ranking in S has the same top k. ``V(S) = min over pairs (a, b) split by
    S of 1 + P(a above b | S)·V(S_ab) + P(b above a | S)·V(S_ba)`` (Bellman's equation of the
    search; the pairs a strategy may ask are exactly those whose answer is not yet implied).
    """
    n, perms, prob = table.n, table.perms, table.prob
    m = min(k, n)
    size = len(perms)
    nbytes = (size + 7) // 8
    above: list[int] = []
    pairs = list(itertools.combinations(range(n), 2))
    for a, b in pairs:
        mask = 0
        for i, perm in enumerate(perms):
            if perm.index(a) < perm.index(b):
                mask |= 1 << i
        above.append(mask)
    same_top: dict[tuple[int, ...], int] = {}
    for i, perm in enumerate(perms):
        same_top[perm[:m]] = same_top.get(perm[:m], 0) | (1 << i)
    top_of = [same_top[perm[:m]] for perm in perms]

    @cache
    def mass(mask: int) -> float:
        bits = np.unpackbits(
            np.frombuffer(mask.to_bytes(nbytes, "little"), dtype=np.uint8), bitorder="little"
        )[:size]
        return float(bits @ prob)

    values: dict[int, float] = {}

    def questions(mask: int) -> Iterator[tuple[float, int, int]]:
        """``(expected cost, pair index, rankings where a is above b)`` of every pair that
        splits ``mask``, in pair order."""
        total = mass(mask)
        for index, split in enumerate(above):
            yes = mask & split
            if yes == 0 or yes == mask:
                continue
            p_yes = mass(yes)
            cost = 1.0 + (p_yes * value(yes) + (total - p_yes) * value(mask ^ yes)) / total
            yield cost, index, yes

    def value(mask: int) -> float:
        found = values.get(mask)
        if found is None:
            first = (mask & -mask).bit_length() - 1
            final = mask & ~top_of[first] == 0
            found = values[mask] = 0.0 if final else min(c for c, _, _ in questions(mask))
        return found

    def policy(mask: int, depth: int, path: str, lines: list[str]) -> None:
        if depth == 0 or values[mask] == 0.0:
            return
        cost, index, yes = min(questions(mask), key=lambda q: q[0])  # the first best pair
        total = mass(mask)
        a, b = pairs[index]
        indent = "  " * (len(path.split()) + 1)
        lines.append(
            f"{indent}{path or 'start'}: ask ({a}, {b}), P({a}>{b}) = "
            f"{mass(yes) / total:.2f}, {cost:.3f} expected"
        )
        policy(yes, depth - 1, f"{path} {a}>{b}".strip(), lines)
        policy(mask ^ yes, depth - 1, f"{path} {b}>{a}".strip(), lines)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * n * n + 100))
    try:
        full = (1 << size) - 1
        result = value(full)
        lines: list[str] = []
        policy(full, show, "", lines)
    finally:
        sys.setrecursionlimit(limit)
    return result, len(values), lines


def strategy_expectation(strategy: type[Any], table: Rankings, k: int) -> float:
    """Exact expected questions of ``strategy`` under ``table`` (pair cache on)."""
    total = 0.0
    for perm, p in zip(table.perms, table.prob, strict=True):
        if p > 0:
            u = [0.0] * table.n
            for rank, position in enumerate(perm):
                u[position] = float(table.n - rank)
            total += p * driven_count(strategy, u, k)
    return total


# --------------------------------------------------------------------------- marginals


@dataclass(frozen=True)
class Marginals:
    """The density of ``u`` for the document at each position of an order, on a grid of
    midpoints of [0, 1]: ``P(position = i | u) ∝ Binom(i; n − 1, s(u + e))`` averaged over
    the document's own noise e, where ``s(t) = P(u' + e' > t)`` for another document, and
    u is uniform a priori. Treating the documents as independent given their positions is
    the approximation (exact for the marginals, not for the joint)."""

    grid: FloatArray
    density: FloatArray  # n x grid
    cdf: FloatArray  # n x grid


@lru_cache(maxsize=8)
def marginals(n: int, corr: float | None, points: int = 2001) -> Marginals:
    grid = (np.arange(points) + 0.5) / points
    if corr is None:
        density = np.ones((n, points))
    else:
        sigma = prior_sigma(corr)
        noise = np.linspace(-6 * sigma, 6 * sigma, 401)
        weight = norm.pdf(noise, 0.0, sigma)
        weight /= weight.sum()
        ts = np.linspace(-7 * sigma, 1 + 7 * sigma, 4001)
        others = np.array([norm.sf((t - grid) / sigma).mean() for t in ts])
        s = np.interp(grid[:, None] + noise[None, :], ts, others)  # grid x noise
        density = np.stack([(binom.pmf(i, n - 1, s) * weight).sum(axis=1) for i in range(n)])
    density = density / (density.sum(axis=1, keepdims=True) / points)
    # F at each midpoint: the cells below it and half its own.
    cdf = (np.cumsum(density, axis=1) - density / 2) / points
    return Marginals(grid, density, cdf)


def information(n: int, k: int, corr: float | None, samples: int, seed: int = 3) -> float:
    """``H(ordered top k−1 | order)`` in bits under :func:`marginals`, by Monte Carlo over
    rankings drawn from that model, each one's probability integrated exactly on the grid:
    ``P(t_1 > … > t_m > the rest) = ∫ f_{t_1}(x_1) … ∫_{x_m < x_{m−1}} f_{t_m}(x_m)
    Π_{i ∉ t} F_i(x_m)``."""
    mod = marginals(n, corr)
    points = len(mod.grid)
    rng = np.random.default_rng(seed)
    m = min(k, n) - 1
    log_cdf = np.log(np.clip(mod.cdf, 1e-300, None))
    bits = []
    for _ in range(samples):
        uniform = rng.random(n)
        draws = np.array([np.interp(uniform[i], mod.cdf[i], mod.grid) for i in range(n)])
        top = np.argsort(-draws)[:m]
        rest = np.setdiff1d(np.arange(n), top)
        inner = mod.density[top[-1]] * np.exp(log_cdf[rest].sum(axis=0))
        for j in range(m - 2, -1, -1):
            below = (np.cumsum(inner) - inner / 2) / points
            inner = mod.density[top[j]] * below
        bits.append(-math.log2(inner.sum() / points))
    return float(np.mean(bits))


# --------------------------------------------------------------------------- posets


class Poset:
    """What the answers prove: ``below[i]`` is the bit set of documents known below ``i``
    (transitively closed), ``above[i]`` those known above."""

    def __init__(self, n: int, source: Poset | None = None) -> None:
        self.n = n
        self.above = source.above[:] if source else [0] * n
        self.below = source.below[:] if source else [0] * n

    def add(self, winner: int, loser: int) -> None:
        up = self.above[winner] | (1 << winner)
        down = self.below[loser] | (1 << loser)
        for i in _members(up):
            self.below[i] |= down
        for j in _members(down):
            self.above[j] |= up

    def known(self, a: int, b: int) -> int | None:
        """The one of ``a``, ``b`` known to be above the other, if the answers prove it."""
        if self.below[a] >> b & 1:
            return a
        if self.below[b] >> a & 1:
            return b
        return None

    def top(self, k: int) -> list[int] | None:
        """The ordered top k if the answers prove it: k documents with 0 … k−1 known above
        them and every other document with at least k."""
        m = min(k, self.n)
        ups = [self.above[i].bit_count() for i in range(self.n)]
        candidates = sorted((c, i) for i, c in enumerate(ups) if c < m)
        if [c for c, _ in candidates] != list(range(m)):
            return None
        return [i for _, i in candidates]

    def matrix(self) -> NDArray[np.bool_]:
        """``G[i, j]``: i is known above j."""
        g = np.zeros((self.n, self.n), dtype=bool)
        for i in range(self.n):
            g[i, _members(self.below[i])] = True
        return g


def _members(bits: int) -> list[int]:
    out = []
    while bits:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return out


# --------------------------------------------------------------------------- posterior


class Particles:
    """Samples of ``u`` given the order (:func:`marginals`) and the answers: a particle
    filter that keeps the samples agreeing with each answer (or, when too few agree, moves
    the others to the nearest ranking that does) and then runs Gibbs sweeps, each ``u_i``
    redrawn from its marginal truncated to what the answers allow."""

    def __init__(self, n: int, corr: float | None, size: int, seed: int, sweeps: int = 2):
        self.mod = marginals(n, corr)
        self.n, self.size, self.sweeps = n, size, sweeps
        self.rng = np.random.default_rng(seed)
        draws = self.rng.random((size, n))
        self.u = np.stack(
            [np.interp(draws[:, i], self.mod.cdf[i], self.mod.grid) for i in range(n)], axis=1
        )

    def observe(self, winner: int, loser: int, known: NDArray[np.bool_]) -> None:
        agree = self.u[:, winner] > self.u[:, loser]
        if agree.sum() >= self.size // 4:
            keep = np.flatnonzero(agree)
            self.u = self.u[keep[self.rng.integers(0, len(keep), self.size)]]
        else:
            for s in np.flatnonzero(~agree):
                self.u[s] = _nearest_extension(self.u[s], known)
        for _ in range(self.sweeps):
            self._sweep(known)

    def _sweep(self, known: NDArray[np.bool_]) -> None:
        u, mod = self.u, self.mod
        for i in self.rng.permutation(self.n):
            lo = u[:, known[i]].max(axis=1) if known[i].any() else np.zeros(self.size)
            hi = u[:, known[:, i]].min(axis=1) if known[:, i].any() else np.ones(self.size)
            f_lo = np.interp(lo, mod.grid, mod.cdf[i], left=0.0, right=1.0)
            f_hi = np.interp(hi, mod.grid, mod.cdf[i], left=0.0, right=1.0)
            draw = f_lo + (f_hi - f_lo) * self.rng.random(self.size)
            u[:, i] = np.clip(np.interp(draw, mod.cdf[i], mod.grid), lo, hi)


def _nearest_extension(u: FloatArray, known: NDArray[np.bool_]) -> FloatArray:
    """The same values reassigned along a linear extension of ``known`` that follows ``u``
    (repeatedly the highest-valued document with nothing unplaced known above it)."""
    n = len(u)
    values = np.sort(u)[::-1]
    waiting = known.sum(axis=0).astype(int)
    placed = np.zeros(n, dtype=bool)
    out = np.empty(n)
    for rank in range(n):
        free = np.flatnonzero((waiting == 0) & ~placed)
        i = free[np.argmax(u[free])]
        placed[i] = True
        out[i] = values[rank]
        waiting[known[i]] -= 1
    return out


def _entropy(p: FloatArray) -> FloatArray:
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return np.asarray(-(p * np.log2(p) + (1 - p) * np.log2(1 - p)))


def greedy_question(
    u: FloatArray, known: NDArray[np.bool_], k: int, weight: float, progress_weight: float = 1.0
) -> tuple[int, int]:
    """The unproven pair with the largest ``progress_weight · progress + weight ·
    information`` over samples ``u`` (samples x documents).

    Progress: the expected drop in the questions a proof would still need if the sample were
    the truth: one per adjacent pair of its top k not yet compared, one per document outside
    its top k not yet proven below its k-th (nor below k documents). Information: the mutual
    information of the answer with the ordered top k, ``h(P(a > b)) − P(both outside)·h(P(a >
    b | both outside))`` (the answer is implied by the top k unless both are outside it).
    """
    size, n = u.shape
    m = min(k, n)
    order = np.argsort(-u, axis=1)
    outside = np.argsort(order, axis=1) >= m
    out_f = outside.astype(np.float64)
    greater = u[:, :, None] > u[:, None, :]
    p = greater.sum(axis=0) / size
    both_out = out_f.T @ out_f / size
    greater_out = (greater & outside[:, :, None] & outside[:, None, :]).sum(axis=0) / size
    p_out = np.where(both_out > 0, greater_out / np.maximum(both_out, 1e-12), 0.5)
    info = _entropy(p) - both_out * _entropy(p_out)
    kth = order[:, m - 1]
    reflexive = known | np.eye(n, dtype=bool)
    unproven = outside & ~known[kth] & (known.sum(axis=0) < m)[None, :]
    reaches_kth = reflexive[kth]  # the sample's k-th is (known) at or above the document
    cleared = unproven.astype(np.float64) @ reflexive.T.astype(np.float64)
    gain = ((greater & reaches_kth[:, :, None]).astype(np.float64) * cleared[:, None, :]).sum(
        axis=0
    ) / size
    progress = gain + gain.T
    adjacent = np.zeros((n, n))
    for r in range(m - 1):
        np.add.at(adjacent, (order[:, r], order[:, r + 1]), 1.0)
    progress += (adjacent + adjacent.T) / size
    score = progress_weight * progress + weight * info
    score[reflexive | known.T] = -np.inf
    score[np.tril_indices(n)] = -np.inf
    a, b = np.unravel_index(int(np.argmax(score)), score.shape)
    return int(a), int(b)


def greedy_run(
    u_true: FloatArray,
    k: int,
    corr: float | None,
    weight: float,
    size: int,
    seed: int,
    progress_weight: float = 1.0,
) -> tuple[list[int], int]:
    """The posterior-greedy strategy against a consistent assessor: ``(top, questions)``."""
    n = len(u_true)
    poset = Poset(n)
    particles = Particles(n, corr, size, seed)
    known = poset.matrix()
    questions = 0
    while (top := poset.top(k)) is None:
        a, b = greedy_question(particles.u, known, k, weight, progress_weight)
        winner, loser = (a, b) if u_true[a] > u_true[b] else (b, a)
        poset.add(winner, loser)
        known = poset.matrix()
        particles.observe(winner, loser, known)
        questions += 1
    return top, questions


# --------------------------------------------------------------------------- rollout

NAMES = [f"{i:03d}" for i in range(1000)]

#: Base strategies of the rollout (restarted from scratch, implied answers free).
BASES: tuple[type[Any], ...] = (PriorTournamentTopK, InsertionTopK)


def _restarted(
    strategy: type[Any], poset: Poset, k: int, answer: Callable[[int, int], int] | None
) -> tuple[int, tuple[int, int] | None]:
    """Run ``strategy`` from the start, answering what ``poset`` proves for free. Without
    ``answer``: stop at the first unproven question and return it. With it: ask it every
    unproven question (adding the answers) and return how many were asked."""
    names = NAMES[: poset.n]
    gen = strategy(names, k).run()
    asked = 0
    try:
        question = next(gen)
        while True:
            a, b = int(question.a), int(question.b)
            winner = poset.known(a, b)
            if winner is None:
                if answer is None:
                    return 0, (a, b)
                winner = answer(a, b)
                poset.add(winner, b if winner == a else a)
                asked += 1
            question = gen.send(names[winner])
    except StopIteration:
        return asked, None


def rollout_run(
    u_true: FloatArray, k: int, corr: float | None, samples: int, size: int, seed: int
) -> tuple[list[int], int]:
    """One-step rollout over :data:`BASES`: ``(top, questions)``."""
    n = len(u_true)
    poset = Poset(n)
    particles = Particles(n, corr, size, seed)
    rng = np.random.default_rng(seed + 1)
    questions = 0
    while (top := poset.top(k)) is None:
        candidates: list[tuple[int, int]] = []
        for base in BASES:
            _, pair = _restarted(base, Poset(n, poset), k, None)
            if pair is not None and pair not in candidates and pair[::-1] not in candidates:
                candidates.append(pair)
        sample = particles.u[rng.choice(particles.size, samples, replace=False)]
        best: tuple[float, int, int] | None = None
        for a, b in candidates:
            wins = sample[:, a] > sample[:, b]
            value = 1.0
            for agree, (winner, loser) in ((wins, (a, b)), (~wins, (b, a))):
                if not agree.any():
                    continue
                after = Poset(n, poset)
                after.add(winner, loser)
                costs = []
                for base in BASES:
                    runs = []
                    for u in sample[agree]:
                        runs.append(
                            _restarted(
                                base, Poset(n, after), k, lambda x, y, u=u: x if u[x] > u[y] else y
                            )[0]
                        )
                    costs.append(float(np.mean(runs)))
                value += float(agree.mean()) * min(costs)
            if best is None or value < best[0]:
                best = (value, a, b)
        assert best is not None
        _, a, b = best
        winner, loser = (a, b) if u_true[a] > u_true[b] else (b, a)
        poset.add(winner, loser)
        particles.observe(winner, loser, poset.matrix())
        questions += 1
    return top, questions


# --------------------------------------------------------------------------- search trees


def optimal_search_cost(weights: FloatArray) -> float:
    """Least expected questions of a search over ``len(weights)`` slots of a sorted list
    with landing probabilities ``weights`` (an optimal alphabetic tree, by the textbook
    O(s³) recursion ``C(i, j) = W(i, j) + min_m C(i, m) + C(m, j)``)."""
    s = len(weights)
    total = np.concatenate([[0.0], np.cumsum(weights)])
    cost = np.zeros((s + 1, s + 1))
    for length in range(2, s + 1):
        for i in range(s - length + 1):
            j = i + length
            cost[i, j] = total[j] - total[i] + min(cost[i, m] + cost[m, j] for m in range(i + 1, j))
    return float(cost[0, s])


def binary_search_cost(weights: FloatArray) -> float:
    """Expected questions of :class:`labeling.strategies.insertion.InsertionTopK`'s binary search
    (``mid = (lo + hi) // 2``) with landing probabilities ``weights``."""

    def cost(lo: int, hi: int) -> float:  # slots lo … hi−1
        if hi - lo <= 1:
            return 0.0
        upper = (hi - lo - 1) // 2 + 1
        return float(weights[lo:hi].sum()) + cost(lo, lo + upper) + cost(lo + upper, hi)

    return cost(0, len(weights))


def insertion_with_trees(u: FloatArray, k: int, fill: Sequence[int]) -> tuple[float, float]:
    """Expected questions of insertion over scenarios ``u`` (scenarios x positions) when the
    fill inserts the positions ``fill`` in that order and the rest pass the gate in order:
    ``(binary search, optimal search tree per step)``. A document's landing slot depends on
    the truth only, so each step's slot frequencies give both searches exactly."""
    count = u.shape[0]
    binary = optimal = 0.0
    for step, pos in enumerate(fill):
        if step:
            slot = (u[:, list(fill[:step])] > u[:, [pos]]).sum(axis=1)
            weights = np.bincount(slot, minlength=step + 1) / count
            binary += binary_search_cost(weights)
            optimal += optimal_search_cost(weights)
    seen = list(fill)
    for pos in (i for i in range(u.shape[1]) if i not in seen):
        ranked = np.sort(u[:, seen], axis=1)
        passes = u[:, pos] > ranked[:, -k]
        binary += 1.0
        optimal += 1.0
        if passes.any():
            slot = (ranked[:, -k + 1 :] > u[:, [pos]]).sum(axis=1)[passes]
            weights = np.bincount(slot, minlength=k) / count
            binary += binary_search_cost(weights)
            optimal += optimal_search_cost(weights)
        seen.append(pos)
    return binary, optimal


# --------------------------------------------------------------------------- commands


CORR_HELP = "prior correlation, or 'random' (default: prior0.7's 1/√2)"


def _corr(value: str) -> float | None:
    return None if value in ("random", "0") else float(value)


def cmd_optimum(args: argparse.Namespace) -> None:
    print(f"exact optimum vs strategies, order {'random' if args.corr is None else args.corr}")
    for size in args.sizes.split(","):
        n, k = (int(x) for x in size.split("x"))
        start = time.perf_counter()
        table = rankings(n, args.corr, args.samples)
        best, states, policy = optimum(table, k, args.show)
        m = min(k, n)
        h = -sum(p * math.log2(p) for p in _top_distribution(table, m - 1).values() if p > 0)
        print(
            f"({n}, {k}) optimum {best:.4f}  ({states} states, "
            f"{time.perf_counter() - start:.0f} s); (n − k) + H(top k−1) = {n - m + h:.4f}"
        )
        for name, cls in STRATEGIES.items():
            mean = strategy_expectation(cls, table, k)
            print(f"  {name:<11} {mean:.4f}  {mean / best - 1:+.2%}")
        if policy:
            print("  the optimal policy's first questions:")
            print("\n".join(policy))


def _top_distribution(table: Rankings, m: int) -> dict[tuple[int, ...], float]:
    out: dict[tuple[int, ...], float] = {}
    for perm, p in zip(table.perms, table.prob, strict=True):
        out[perm[:m]] = out.get(perm[:m], 0.0) + float(p)
    return out


def cmd_information(args: argparse.Namespace) -> None:
    n, k = args.n, args.k
    for label, corr in (("random", None), ("prior", args.corr)):
        bits = information(n, k, corr, args.samples)
        print(
            f"({n}, {k}) {label}: H(ordered top {k - 1} | order) = {bits:.2f} bits, "
            f"(n − k) + H = {n - k + bits:.2f}"
        )


def _compare(
    args: argparse.Namespace, label: str, run: Callable[..., tuple[list[int], int]]
) -> None:
    rng = np.random.default_rng(args.seed)
    counts: dict[str, list[int]] = {label: [], "prior": [], "insertion": []}
    start = time.perf_counter()
    for trial in range(args.trials):
        u = latent_by_position(rng, args.n, args.corr)
        top, asked = run(u, trial)
        if top != list(np.argsort(-u)[: min(args.k, args.n)]):
            raise AssertionError(f"trial {trial}: {label} returned a wrong top k")
        counts[label].append(asked)
        counts["prior"].append(driven_count(PriorTournamentTopK, u.tolist(), args.k))
        counts["insertion"].append(driven_count(InsertionTopK, u.tolist(), args.k))
    elapsed = time.perf_counter() - start
    print(
        f"({args.n}, {args.k}), {args.trials} scenarios, the same for every row ({elapsed:.0f} s)"
    )
    for name, values in counts.items():
        print(f"  {name:<10} mean {np.mean(values):6.2f}  sd {np.std(values):5.2f}")


def cmd_greedy(args: argparse.Namespace) -> None:
    _compare(
        args,
        f"greedy {args.progress:g}/{args.weight:g}",
        lambda u, t: greedy_run(
            u, args.k, args.corr, args.weight, args.particles, t, args.progress
        ),
    )


def cmd_rollout(args: argparse.Namespace) -> None:
    _compare(
        args,
        "rollout",
        lambda u, t: rollout_run(u, args.k, args.corr, args.samples, args.particles, t),
    )


def cmd_searchtrees(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed)
    u = np.stack([latent_by_position(rng, args.n, args.corr) for _ in range(args.trials)])
    k = args.k
    fills = {
        f"first {k} in order": list(range(k)),
        f"first {k}, last first": list(range(k))[::-1],
        f"first {k + 1} in order": list(range(k + 1)),
        f"first {k + 1}, last first": list(range(k + 1))[::-1],
    }
    print(f"({args.n}, {k}) insertion, {args.trials} scenarios: binary search / optimal trees")
    for label, fill in fills.items():
        binary, optimal = insertion_with_trees(u, k, fill)
        print(f"  {label:<22} {binary:6.2f} / {optimal:6.2f}")


def _scenario_arguments(
    parser: argparse.ArgumentParser, trials: int | None = None, seed: bool = False
) -> None:
    """--n, --k and --corr (and --trials, --seed) of a subcommand that draws scenarios."""
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument(
        "--corr",
        type=_corr,
        default=SCENARIO_PRIOR_CORR,
        help=CORR_HELP,
    )
    if trials is not None:
        parser.add_argument("--trials", type=int, default=trials)
    if seed:
        parser.add_argument("--seed", type=int, default=1234)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("optimum", help="exact optimum at small sizes")
    p.add_argument("--sizes", default="5x2,5x3,6x2,6x3")
    p.add_argument("--corr", type=_corr, default=SCENARIO_PRIOR_CORR, help=CORR_HELP)
    p.add_argument("--samples", type=int, default=4_000_000, help="scenarios for the table")
    p.add_argument("--show", type=int, default=0, help="levels of the optimal policy to print")
    p.set_defaults(func=cmd_optimum)

    p = sub.add_parser("information", help="(n − k) + H(ordered top k−1 | order)")
    _scenario_arguments(p)
    p.add_argument("--samples", type=int, default=2000)
    p.set_defaults(func=cmd_information)

    p = sub.add_parser("searchtrees", help="insertion with optimal search trees per step")
    _scenario_arguments(p, trials=20000, seed=True)
    p.set_defaults(func=cmd_searchtrees)

    p = sub.add_parser("greedy", help="posterior-greedy questions")
    _scenario_arguments(p, trials=100, seed=True)
    p.add_argument("--particles", type=int, default=400)
    p.add_argument("--weight", type=float, default=0.5, help="of the information")
    p.add_argument("--progress", type=float, default=1.0, help="weight of the progress")
    p.set_defaults(func=cmd_greedy)

    p = sub.add_parser("rollout", help="one-step lookahead over prior and insertion")
    _scenario_arguments(p, trials=60, seed=True)
    p.add_argument("--particles", type=int, default=200)
    p.add_argument("--samples", type=int, default=48, help="posterior samples per value")
    p.set_defaults(func=cmd_rollout)

    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
