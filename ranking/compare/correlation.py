"""Agreement between two orderings of the same systems: Kendall's τ-b, τ_AP, significant swaps.

Systems are ordered by a score (e.g. their mean NDCG@10), larger first. Two label sets of one
collection give two score vectors over the same systems; docs/campaigns.md explains how to read
the coefficients.

* Kendall's τ-b (Kendall, "The treatment of ties in ranking problems", Biometrika 1945)::

      τ_b = Σ_{i<j} sgn(x_i − x_j)·sgn(y_i − y_j) / √((n0 − n1)(n0 − n2))

  with ``n0 = n(n − 1)/2`` and ``n1``, ``n2`` the pairs tied in x, in y (as
  ``scipy.stats.kendalltau``'s default). O(n²) pairs: meant for system orderings
  (tens to a few thousand systems).
* τ_AP (Yilmaz, Aslam, Robertson, "A new rank correlation coefficient for information
  retrieval", SIGIR 2008): with the items in the *estimated* order and ``C(i)`` the number of
  the ``i − 1`` items above position ``i`` that the *true* order also puts above item ``i``::

      τ_AP = 2/(n − 1) · Σ_{i=2}^{n} C(i)/(i − 1) − 1

  It is asymmetric and top-heavy: a swap at the top costs more than one at the bottom.
  Ties (Urbano & Marrero, "The treatment of ties in AP correlation", ICTIR 2017):
  :func:`tau_ap` allows ties in the estimate only (their τ_AP,a: the expectation over the
  orders of each tied group; equal to Yilmaz et al.'s τ_AP without ties) and refuses ties in
  the truth; :func:`tau_ap_b` allows ties in both (their τ_AP,b, the symmetric "agreement"
  version: the mean of the two directions, each with the items of the estimate's top tie
  group left out and ``i − 1`` replaced by the number of items in strictly higher groups).
* significant swaps (after Voorhees & Buckley, "The effect of topic set size on retrieval
  experiment error", SIGIR 2002): pairs of systems that label set A orders one way with a
  significant difference and label set B orders the other way (strictly).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ranking.compare.significance import (
    EXACT_MAX_N,
    Checkpoint,
    Correction,
    Test,
    compare_systems,
    values_matrix,
)

__all__ = [
    "OrderingAgreement",
    "SwapCount",
    "kendall_tau_b",
    "ordering_agreement",
    "significant_swaps",
    "system_ordering",
    "tau_ap",
    "tau_ap_b",
]

F64 = NDArray[np.float64]


def _scores(x: ArrayLike, y: ArrayLike) -> tuple[F64, F64]:
    a = np.asarray(x, dtype=np.float64).ravel()
    b = np.asarray(y, dtype=np.float64).ravel()
    if a.size != b.size:
        raise ValueError(f"the two score vectors differ in length ({a.size} vs {b.size})")
    if a.size < 2:
        raise ValueError("a rank correlation needs at least 2 items")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("scores must be finite")
    return a, b


def _signs(x: F64) -> NDArray[np.int8]:
    """(n, n) matrix sgn(x_i − x_j)."""
    return np.sign(x[:, None] - x[None, :]).astype(np.int8)


def kendall_tau_b(x: ArrayLike, y: ArrayLike) -> float:
    """Kendall's τ-b of two score vectors over the same items (NaN if either is constant)."""
    a, b = _scores(x, y)
    sa, sb = _signs(a), _signs(b)
    upper = np.triu(np.ones((a.size, a.size), dtype=bool), 1)
    num = float((sa.astype(np.int64) * sb)[upper].sum())
    untied_a = float(np.count_nonzero(sa[upper]))
    untied_b = float(np.count_nonzero(sb[upper]))
    if untied_a == 0 or untied_b == 0:
        return float("nan")
    return num / float(np.sqrt(untied_a * untied_b))


def _min_rank(x: F64) -> NDArray[np.int64]:
    """1-based position of the first item of each item's tie group, larger scores first."""
    start: NDArray[np.int64] = 1 + (x[None, :] > x[:, None]).sum(axis=1).astype(np.int64)
    return start


def tau_ap(truth: ArrayLike, estimate: ArrayLike) -> float:
    """τ_AP of the ``estimate`` ordering against the ``truth`` (larger scores first).

    Ties in ``estimate`` are averaged over the orders of each tied group (Urbano & Marrero's
    τ_AP,a); with a group starting at position ``p`` of size ``t``, a member is at ``p + k − 1``
    (k = 1..t) with equal chance, so it contributes ``c_above/t · Σ_k 1/(p + k − 2)`` for the
    items of higher groups, and the group's inner pairs (each concordant with chance ½)
    ``½ Σ_{k=1}^{t−1} k/(p + k − 1)``. Ties in ``truth`` are refused (use :func:`tau_ap_b`).
    """
    t, e = _scores(truth, estimate)
    if np.unique(t).size != t.size:
        raise ValueError("tau_ap needs a truth without ties; use tau_ap_b for ties in both")
    n = t.size
    start = _min_rank(e)
    size = np.bincount(start, minlength=n + 1)[start]
    # c_above[i]: items of strictly higher estimate groups that the truth also puts above i
    above = (e[None, :] > e[:, None]) & (t[None, :] > t[:, None])
    c_above = above.sum(axis=1).astype(np.float64)
    total = 0.0
    for i in range(n):
        p, g = int(start[i]), int(size[i])
        if p > 1:
            total += c_above[i] / g * sum(1.0 / (p + k - 2) for k in range(1, g + 1))
        total += sum(k / (p + k - 1) for k in range(1, g)) / (2.0 * g)
    return 2.0 * total / (n - 1) - 1.0


def _tau_ap_b_one_way(x: F64, y: F64) -> float:
    start = _min_rank(y)
    not_top = start > 1
    if not not_top.any():
        return float("nan")
    above = (y[None, :] > y[:, None]) & (x[None, :] > x[:, None])
    c = above.sum(axis=1).astype(np.float64)
    contrib = c[not_top] / (start[not_top] - 1)
    return float(2.0 * contrib.sum() / not_top.sum() - 1.0)


def tau_ap_b(x: ArrayLike, y: ArrayLike) -> float:
    """Symmetric τ_AP,b with ties in either vector: mean of the two one-way coefficients.

    One way (``y`` the listed order): items in ``y``'s top tie group are left out; item ``i``
    at group start ``p_i`` counts the items of strictly higher ``y`` groups that ``x`` puts
    strictly above it, divided by ``p_i − 1``; the coefficient is ``2/m · Σ − 1`` over the
    ``m`` items left. Equal to ``(τ_AP(x, y) + τ_AP(y, x))/2`` without ties.
    """
    a, b = _scores(x, y)
    return (_tau_ap_b_one_way(a, b) + _tau_ap_b_one_way(b, a)) / 2.0


def system_ordering(scores: Mapping[str, float]) -> list[str]:
    """Systems best first (larger score first; ties in the mapping's order)."""
    names = list(scores)
    order = sorted(range(len(names)), key=lambda i: -float(scores[names[i]]))
    return [names[i] for i in order]


@dataclass(frozen=True)
class SwapCount:
    """Pairs that label set A separates significantly and B orders the other way."""

    n_pairs: int
    significant_in_a: int
    swaps: int
    swaps_significant_in_b: int
    swapped_pairs: tuple[tuple[str, str], ...]
    significant_in_b: int = 0
    """Pairs B's test finds significant."""
    significant_in_one_only: int = 0
    """Pairs exactly one of the two label sets finds significant (whatever the directions)."""


def significant_swaps(
    values_a: Mapping[str, ArrayLike],
    values_b: Mapping[str, ArrayLike],
    *,
    test: Test = "t",
    correction: Correction = "holm",
    alpha: float = 0.05,
    n_resamples: int | None = None,
    seed: int = 0,
    exact_max_n: int = EXACT_MAX_N,
    checkpoint: Checkpoint = None,
) -> SwapCount:
    """Count the pairs ordered one way by A with a significant difference and the other by B.

    ``values_a`` / ``values_b``: per-query values of the same systems under label sets A and
    B (the query sets may differ between A and B; within each they are aligned). A pair
    ``(i, j)`` is a swap when A's test (with its correction over all pairs) finds it
    significant and the mean differences have strictly opposite signs; a swap is also counted
    in ``swaps_significant_in_b`` when B's test finds it significant too. Each swapped pair is
    listed as (A's better system, A's worse system). ``checkpoint``: as in
    :func:`ranking.compare.significance.compare_systems`.
    """
    if list(values_a) != list(values_b):
        raise ValueError("both label sets need the same systems, in the same order")
    comp_a, comp_b = (
        compare_systems(
            values,
            test,
            correction,
            alpha,
            n_resamples=n_resamples,
            seed=seed,
            exact_max_n=exact_max_n,
            checkpoint=checkpoint,
        )
        for values in (values_a, values_b)
    )
    swapped: list[tuple[str, str]] = []
    both = 0
    for pa, pb in zip(comp_a.pairs, comp_b.pairs, strict=True):
        if pa.significant and pa.difference * pb.difference < 0:
            better, worse = (
                (pa.system_a, pa.system_b) if pa.difference > 0 else (pa.system_b, pa.system_a)
            )
            swapped.append((better, worse))
            both += int(pb.significant)
    return SwapCount(
        n_pairs=len(comp_a.pairs),
        significant_in_a=sum(p.significant for p in comp_a.pairs),
        swaps=len(swapped),
        swaps_significant_in_b=both,
        swapped_pairs=tuple(swapped),
        significant_in_b=sum(p.significant for p in comp_b.pairs),
        significant_in_one_only=sum(
            pa.significant != pb.significant
            for pa, pb in zip(comp_a.pairs, comp_b.pairs, strict=True)
        ),
    )


@dataclass(frozen=True)
class OrderingAgreement:
    """How label set B orders the systems compared with label set A (the reference)."""

    systems: tuple[str, ...]
    means_a: tuple[float, ...]
    means_b: tuple[float, ...]
    ordering_a: tuple[str, ...]
    ordering_b: tuple[str, ...]
    kendall_tau: float
    tau_ap: float
    swaps: SwapCount

    def summary(self) -> dict[str, Any]:
        """The figures as a JSON-ready dict, A the reference ("truth"), B "against": both
        orderings, B's means, τ-b, τ_AP, the significant swaps and the pairs each label set
        separates (the same keys wherever the agreement is reported)."""
        return {
            "ordering": list(self.ordering_a),
            "ordering_against": list(self.ordering_b),
            "means": dict(zip(self.systems, self.means_a, strict=True)),
            "means_against": dict(zip(self.systems, self.means_b, strict=True)),
            "kendall_tau": self.kendall_tau,
            "tau_ap": self.tau_ap,
            "significant_swaps": self.swaps.swaps,
            "significant_in_truth": self.swaps.significant_in_a,
            "significant_in_against": self.swaps.significant_in_b,
            "significant_in_one_only": self.swaps.significant_in_one_only,
            "swaps_significant_in_both": self.swaps.swaps_significant_in_b,
            "swapped_pairs": [list(p) for p in self.swaps.swapped_pairs],
            "n_pairs": self.swaps.n_pairs,
        }


def ordering_agreement(
    values_a: Mapping[str, ArrayLike],
    values_b: Mapping[str, ArrayLike],
    *,
    test: Test = "t",
    correction: Correction = "holm",
    alpha: float = 0.05,
    n_resamples: int | None = None,
    seed: int = 0,
    checkpoint: Checkpoint = None,
) -> OrderingAgreement:
    """System orderings by mean under A and B, τ-b, τ_AP and significant swaps.

    ``tau_ap`` is :func:`tau_ap` with A's means as the truth when A has no tied means, else
    the symmetric :func:`tau_ap_b`.
    """
    names, va = values_matrix(values_a)
    names_b, vb = values_matrix(values_b)
    if names != names_b:
        raise ValueError("both label sets need the same systems, in the same order")
    ma, mb = va.mean(axis=1), vb.mean(axis=1)
    ap = tau_ap(ma, mb) if np.unique(ma).size == ma.size else tau_ap_b(ma, mb)
    return OrderingAgreement(
        systems=names,
        means_a=tuple(float(m) for m in ma),
        means_b=tuple(float(m) for m in mb),
        ordering_a=tuple(system_ordering(dict(zip(names, ma.tolist(), strict=True)))),
        ordering_b=tuple(system_ordering(dict(zip(names, mb.tolist(), strict=True)))),
        kendall_tau=kendall_tau_b(ma, mb),
        tau_ap=ap,
        swaps=significant_swaps(
            values_a,
            values_b,
            test=test,
            correction=correction,
            alpha=alpha,
            n_resamples=n_resamples,
            seed=seed,
            checkpoint=checkpoint,
        ),
    )
