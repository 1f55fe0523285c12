"""Aggregating several assessors' labels of one query into one ranking.

When a query was labeled more than once (the study assigns two assessors per query and tool),
an export can either pick one labeling or aggregate them:

* :func:`borda` — Borda count over top-k lists: in a list of a query with cut-off k the item
  at position p (1-based) gets ``k + 1 - p`` points (the κ-label, docs/metrics.md#kappa), items not
  in the list get 0; points are summed over lists.
* :func:`bradley_terry` — a Bradley–Terry model fitted to the pooled pairwise preferences of
  all assessors with Hunter's (2004) MM algorithm: P(i ≻ j) = π_i / (π_i + π_j).

Both return an :class:`Aggregate` (order best first plus the score per item); ``top(k)`` turns
it into a top-k list for κ-labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from labeling.errors import ConfigError

PrefOutcome = Literal["a", "b", "tie"]

#: MM iterations before switching to Newton steps (see :func:`bradley_terry`).
MM_WARMUP = 50


@dataclass(frozen=True, slots=True)
class Aggregate:
    """An aggregated ranking: ``order`` best first, ``scores[item]`` (higher is better)."""

    order: tuple[str, ...]
    scores: dict[str, float]

    def top(self, k: int) -> tuple[list[str], list[str]]:
        """``(top, rest)``: the first ``k`` items and the others (order kept)."""
        if k < 1:
            raise ConfigError("k must be at least 1")
        return list(self.order[:k]), list(self.order[k:])


def borda(
    rankings: Iterable[Sequence[str]],
    *,
    k: int | None = None,
    universe: Iterable[str] = (),
) -> Aggregate:
    """Borda count over top-k lists (best first).

    Points: position p (1-based) in a list gets ``k + 1 - p`` where ``k`` defaults to the
    longest list, so lists of one study score on one scale; items beyond position k get 0.
    Ties in points are broken by how many lists rank the item (more first), then by the best
    position it reached, then by item id, so the result is deterministic. ``universe`` adds
    items that no list contains (the rest of the pool) with 0 points, in the given order after
    the id tie-break.
    """
    lists = [list(r) for r in rankings]
    for r in lists:
        if len(set(r)) != len(r):
            raise ConfigError("a ranking lists the same item twice")
    if k is None:
        k = max((len(r) for r in lists), default=0)
    if k < 0:
        raise ConfigError("k must be >= 0")
    points: dict[str, float] = {}
    votes: dict[str, int] = {}
    best: dict[str, int] = {}
    for r in lists:
        for pos, item in enumerate(r, start=1):
            points[item] = points.get(item, 0.0) + max(k + 1 - pos, 0)
            votes[item] = votes.get(item, 0) + 1
            best[item] = min(best.get(item, pos), pos)
    for item in universe:
        points.setdefault(item, 0.0)
    order = sorted(
        points,
        key=lambda i: (-points[i], -votes.get(i, 0), best.get(i, 1 << 30), i),
    )
    return Aggregate(tuple(order), {i: points[i] for i in order})


@dataclass(frozen=True, slots=True)
class Preference:
    """One pairwise judgment between items ``a`` and ``b``: ``winner`` is "a", "b" or "tie"."""

    a: str
    b: str
    winner: PrefOutcome


def bradley_terry(
    preferences: Iterable[Preference],
    *,
    universe: Iterable[str] = (),
    prior: float = 0.1,
    tol: float = 1e-10,
    max_iter: int = 10_000,
) -> Aggregate:
    """Fit Bradley–Terry strengths to pooled preferences with the MM algorithm.

    Model: P(i ≻ j) = π_i / (π_i + π_j). A tie counts as half a win for each side (the usual
    convention; it keeps the likelihood of a tie symmetric). Hunter's (2004, Ann. Statist. 32)
    minorise-maximise update for item i is

        π_i ← W_i / Σ_j n_ij / (π_i + π_j)

    with W_i the (half-)wins of i and n_ij the comparisons of i and j. The MLE does not exist
    when the comparison graph is not strongly connected (an item that never loses runs off to
    infinity), which is common for top-k logs. So every item also plays ``prior`` virtual wins
    and ``prior`` virtual losses against a fixed reference item of strength 1, a shrinkage that
    makes the problem well posed; it is the same MM update on the augmented data and so still
    increases the (augmented) likelihood every step. ``prior=0`` gives the plain MLE (then the
    graph must be strongly connected).

    Scores are log π_i; the reference fixes their location (an item with no comparisons scores
    0). Ties in score are broken by item id. MM runs until the largest change of log π is below
    ``tol``; if that takes more than :data:`MM_WARMUP` iterations (MM is only linearly
    convergent, slow when strengths are far apart, as in a consistent top-k log), Newton steps
    on θ = log π with a backtracking line search finish the job on the same (convex) objective
    until the gradient is below ``tol``.
    """
    prefs = list(preferences)
    items = list(dict.fromkeys([*(x for p in prefs for x in (p.a, p.b)), *universe]))
    index = {item: i for i, item in enumerate(items)}
    m = len(items)
    if m == 0:
        return Aggregate((), {})
    if prior < 0:
        raise ConfigError("prior must be >= 0")
    wins = np.zeros(m)
    games = np.zeros((m, m))
    for p in prefs:
        if p.a == p.b:
            raise ConfigError(f"an item cannot be compared with itself ({p.a})")
        i, j = index[p.a], index[p.b]
        games[i, j] += 1.0
        games[j, i] += 1.0
        if p.winner == "a":
            wins[i] += 1.0
        elif p.winner == "b":
            wins[j] += 1.0
        elif p.winner == "tie":
            wins[i] += 0.5
            wins[j] += 0.5
        else:
            raise ConfigError(f"unknown preference outcome {p.winner!r}")
    if prior == 0 and (np.any(wins == 0) or np.any(wins == games.sum(axis=1))):
        raise ConfigError(
            "Bradley–Terry MLE does not exist: some item never wins or never loses (use prior > 0)"
        )
    strength = np.ones(m)
    # Phase 1: Hunter's MM iterations (monotone, robust from any start) ...
    for _ in range(min(max_iter, MM_WARMUP)):
        denom = (games / (strength[:, None] + strength[None, :])).sum(axis=1)
        denom += 2.0 * prior / (strength + 1.0)
        new = (wins + prior) / denom
        if prior == 0:
            # Without a reference the scale is free: fix the geometric mean at 1.
            new = new / np.exp(np.mean(np.log(new)))
        change = float(np.max(np.abs(np.log(new) - np.log(strength))))
        strength = new
        if change < tol:
            break
    else:
        # ... Phase 2: MM converges only linearly when strengths are far apart (a consistent
        # top-k log), so finish with Newton steps on θ = log π for the same objective.
        strength = np.exp(_newton(np.log(strength), wins, games, prior, tol, max_iter))
    scores = np.log(strength)
    order = sorted(range(m), key=lambda i: (-scores[i], items[i]))
    return Aggregate(tuple(items[i] for i in order), {items[i]: float(scores[i]) for i in order})


def _objective(theta: np.ndarray, wins: np.ndarray, games: np.ndarray, prior: float) -> float:
    """Negative augmented log-likelihood in θ = log π (convex; strictly so when prior > 0).

    With a_ij the (half-)wins of i over j: −Σ a_ij log σ(θ_i − θ_j) − prior Σ_i [log σ(θ_i) +
    log σ(−θ_i)]. We only need a_ij through W_i and n_ij: Σ_ij a_ij log σ(θ_i − θ_j) equals
    Σ_i W_i θ_i − ½ Σ_ij n_ij log(e^{θ_i} + e^{θ_j}).
    """
    pair = np.logaddexp(theta[:, None], theta[None, :])
    value = -float(wins @ theta) + 0.5 * float((games * pair).sum())
    value += prior * float(np.sum(np.logaddexp(0.0, -theta) + np.logaddexp(0.0, theta)))
    return value


def _newton(
    theta: np.ndarray,
    wins: np.ndarray,
    games: np.ndarray,
    prior: float,
    tol: float,
    max_iter: int,
) -> np.ndarray:
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # p_ij = σ(θ_i − θ_j)
        s = 1.0 / (1.0 + np.exp(-theta))
        grad = -(wins - (games * p).sum(axis=1)) - prior * (1.0 - 2.0 * s)
        if float(np.max(np.abs(grad))) < tol:
            break
        w = games * p * (1.0 - p)
        hess = -w
        np.fill_diagonal(hess, w.sum(axis=1) + 2.0 * prior * s * (1.0 - s))
        if prior == 0:
            # The Hessian is singular along (1, ..., 1) (the scale is free) and the gradient
            # sums to 0; adding 11ᵀ makes it invertible without changing the step's direction.
            hess = hess + 1.0
        step = -np.linalg.solve(hess, grad)
        f0 = _objective(theta, wins, games, prior)
        t = 1.0
        while t > 1e-12 and _objective(
            theta + t * step, wins, games, prior
        ) > f0 + 1e-4 * t * float(grad @ step):
            t *= 0.5
        move = t * step
        theta = theta + move
        if prior == 0:
            theta = theta - theta.mean()
        # Rounding keeps the gradient from reaching tiny tolerances: also stop when θ stalls.
        if float(np.max(np.abs(move))) < tol:
            break
    return theta
