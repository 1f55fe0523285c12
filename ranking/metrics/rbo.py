"""Rank-biased overlap, and compatibility: RBO with the ideal ranking implied by the labels.

Rank-biased overlap (Webber, Moffat, Zobel, "A similarity measure for indefinite rankings",
TOIS 2010). With ``X_d = |S_{:d} ∩ T_{:d}|`` the overlap of the two prefixes of depth ``d``
(each list cut at its own length) and persistence ``p``::

    RBO = (1 − p) Σ_{d≥1} p^{d−1} X_d / d

Two finite readings of the infinite sum:

* :func:`rbo_min`  no overlap beyond the lists (``X_d`` stays at ``X_D`` past the longer
  list's length ``D``): ``(1 − p)[Σ_{d≤D} p^{d−1} X_d/d + X_D·T_D]`` with the tail
  ``T_D = Σ_{d>D} p^{d−1}/d = (−ln(1 − p) − Σ_{d≤D} p^d/d)/p``; for lists of equal length
  this is the paper's lower bound RBO_min (eq. 11).
* :func:`rbo_ext`  the paper's extrapolation RBO_ext for lists of possibly different lengths
  (eq. 32; eq. 30 when they are equal): with ``s ≤ l`` the lengths of the shorter and the
  longer list::

      (1 − p)/p [Σ_{d=1}^{l} X_d p^d/d + Σ_{d=s+1}^{l} X_s (d − s) p^d/(s·d)]
          + [(X_l − X_s)/l + X_s/s] p^l

Compatibility (Clarke, Vtyurina, Smucker, "Offline evaluation by maximum similarity to an ideal
ranking", CIKM 2020; "Assessing top-k preferences", TOIS 2021): RBO between a run ``R`` and the
ideal ranking ``I`` the labels imply, normalised by the ideal's RBO with itself. The ideal
holds the documents with a grade > 0, larger grades first; **ties within a grade are broken in
the run's favour** (the tied documents the run retrieved, in the run's order, then those it did
not, in the labels' order), so among all ideal rankings consistent with the labels the run is
compared with the one most similar to it (the papers' "maximum similarity"). With
``S_D(A, B) = Σ_{d≤D} p^{d−1} X_d/d`` and ``D = max(|R|, |I|)``::

    compat = S_D(R, I) / S_D(I, I)                 (normalize=True, the default)
    compat = S_D(R, I) / Σ_{d≤D} p^{d−1}           (normalize=False)

This is ir-measures' ``Compat(p=0.95, normalize=True)`` (its ``compat`` provider sums to
``max(len(run), len(ideal))``). The authors' ``compatibility.py`` sums to a fixed depth 1000
instead, i.e. it continues the sum past ``D`` with the overlap frozen: ``extrapolate=True``
computes that infinite sum in closed form (the tail ``T_D`` above), giving their figures
(``normalize=False`` then is :func:`rbo_min` of the run and the ideal). The two readings
differ in general (a run holding 1 of 3 ideal documents: 0.1905 truncated, 0.2024 extrapolated
at p = 0.5; docs/campaigns.md#compatibility).

Default persistence p = 0.95 (the papers'; roughly the user model of NDCG@20).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "COMPAT_P",
    "compatibility",
    "compatibility_of_grades",
    "compatibility_per_query",
    "compatibility_topk",
    "ideal_ranking",
    "overlaps",
    "rbo_ext",
    "rbo_min",
]

F64 = NDArray[np.float64]
COMPAT_P = 0.95


def _check(ranking: Sequence[str], name: str) -> None:
    if len(set(ranking)) != len(ranking):
        raise ValueError(f"{name} lists a document twice")


def _check_p(p: float) -> None:
    if not 0.0 < p < 1.0:
        raise ValueError(f"persistence p must be in (0, 1), got {p}")


def overlaps(s: Sequence[str], t: Sequence[str], depth: int | None = None) -> NDArray[np.int64]:
    """``X_d`` for ``d = 1..depth`` (default: the longer length); each list cut at its length."""
    _check(s, "the first ranking")
    _check(t, "the second ranking")
    depth = max(len(s), len(t)) if depth is None else depth
    where_t = {doc: j for j, doc in enumerate(t)}
    first_common = [max(i, where_t[doc]) for i, doc in enumerate(s) if doc in where_t]
    hist = np.bincount(np.asarray(first_common, dtype=np.int64), minlength=depth)[:depth]
    counts: NDArray[np.int64] = np.cumsum(hist).astype(np.int64)
    return counts


def _weights(p: float, depth: int) -> F64:
    """``p^{d−1}`` for ``d = 1..depth``."""
    return p ** np.arange(depth, dtype=np.float64)


def _tail(p: float, depth: int) -> float:
    """``T_D = Σ_{d>D} p^{d−1}/d`` in closed form (≥ 0)."""
    d = np.arange(1, depth + 1, dtype=np.float64)
    head = float((p**d / d).sum())
    return max(0.0, (-math.log1p(-p) - head) / p)


def _weighted(x: NDArray[np.int64], p: float) -> float:
    """``S_D = Σ_{d≤D} p^{d−1} X_d / d``."""
    d = np.arange(1, x.size + 1, dtype=np.float64)
    return float((_weights(p, x.size) * x / d).sum())


def rbo_min(s: Sequence[str], t: Sequence[str], p: float = 0.9) -> float:
    """RBO with no overlap beyond the lists: ``(1 − p)[S_D + X_D·T_D]`` (module docstring)."""
    _check_p(p)
    x = overlaps(s, t)
    if x.size == 0:
        return 0.0
    return (1 - p) * (_weighted(x, p) + float(x[-1]) * _tail(p, x.size))


def rbo_ext(s: Sequence[str], t: Sequence[str], p: float = 0.9) -> float:
    """RBO_ext, Webber et al.'s extrapolation (eq. 32; 1 for equal lists, 0 for disjoint)."""
    _check_p(p)
    short, long_ = (s, t) if len(s) <= len(t) else (t, s)
    n_s, n_l = len(short), len(long_)
    if n_s == 0:
        return 0.0
    x = overlaps(short, long_).astype(np.float64)
    d = np.arange(1, n_l + 1, dtype=np.float64)
    x_s, x_l = float(x[n_s - 1]), float(x[n_l - 1])
    head = float((x * p**d / d).sum())
    beyond = d[n_s:]
    fill = float((x_s * (beyond - n_s) / (n_s * beyond) * p**beyond).sum())
    return (1 - p) / p * (head + fill) + ((x_l - x_s) / n_l + x_s / n_s) * p**n_l


def ideal_ranking(grades: Mapping[str, float], run: Sequence[str] = ()) -> list[str]:
    """The documents with grade > 0, larger grades first, ties broken in ``run``'s favour.

    Within a grade: the documents ``run`` retrieved in the run's order, then the others in
    the order of ``grades``.
    """
    rank = {doc: i for i, doc in enumerate(run)}
    positive = [(doc, float(g)) for doc, g in grades.items() if float(g) > 0]
    order = sorted(
        range(len(positive)),
        key=lambda i: (-positive[i][1], rank.get(positive[i][0], len(run)), i),
    )
    return [positive[i][0] for i in order]


def compatibility(
    run: Sequence[str],
    grades: Mapping[str, float],
    p: float = COMPAT_P,
    *,
    normalize: bool = True,
    extrapolate: bool = False,
) -> float:
    """Compatibility of one query's ``run`` (best first) with the ideal implied by ``grades``.

    ``grades``: document → grade (or preference level; larger is better; ≤ 0 not relevant).
    0 when no document has a positive grade or the run is empty. See the module docstring
    for ``normalize`` and ``extrapolate``.
    """
    _check_p(p)
    _check(run, "the run")
    ideal = ideal_ranking(grades, run)
    depth = max(len(run), len(ideal))
    if not ideal or not run:
        return 0.0
    x = overlaps(run, ideal, depth)
    score = _weighted(x, p)
    tail = _tail(p, depth) if extrapolate else 0.0
    score += float(x[-1]) * tail
    if normalize:
        best = _weighted(np.minimum(np.arange(1, depth + 1), len(ideal)), p)
        return score / (best + len(ideal) * tail)
    if extrapolate:
        return (1 - p) * score
    return score / float(_weights(p, depth).sum())


def compatibility_of_grades(
    ranked: ArrayLike,
    ideal: ArrayLike,
    p: float = COMPAT_P,
    *,
    normalize: bool = True,
) -> float:
    """:func:`compatibility` from grades alone: ``ranked`` the grades of the run's documents,
    best first; ``ideal`` every judged grade of the query (any order; those > 0 form the ideal).

    Ties within a grade broken in the run's favour make the overlap a function of the grades
    (docs/campaigns.md#compatibility): at depth ``d ≤ |I|`` with ``g`` the ideal's ``d``-th
    grade and ``c`` the number of ideal grades above ``g``, the run's first ``d`` documents
    share ``#{grade > g} + min(#{grade = g}, d − c)`` with the ideal's first ``d``; deeper,
    ``#{grade > 0}``. Truncated at ``D = max(|run|, |I|)`` as :func:`compatibility`.
    """
    _check_p(p)
    run = np.asarray(ranked, dtype=np.float64).ravel()
    grades = np.sort(np.asarray(ideal, dtype=np.float64).ravel())
    positive = grades[grades > 0][::-1]  # the ideal's grades, best first
    n_ideal, n_run = positive.size, run.size
    if n_ideal == 0 or n_run == 0:
        return 0.0
    depth = max(n_run, n_ideal)
    prefix = np.zeros(depth)
    prefix[:n_run] = run
    levels, level_of = np.unique(positive, return_inverse=True)  # ascending levels
    above = np.cumsum((prefix[None, :] > levels[:, None]), axis=1)  # (levels, depth)
    equal = np.cumsum((prefix[None, :] == levels[:, None]), axis=1)
    d = np.arange(1, depth + 1)
    x = np.cumsum(prefix > 0).astype(np.float64)  # beyond the ideal: every relevant one
    inside = d[:n_ideal] - 1
    better = n_ideal - np.searchsorted(positive[::-1], positive, side="right")  # c per depth
    x[:n_ideal] = above[level_of, inside] + np.minimum(
        equal[level_of, inside], d[:n_ideal] - better
    )
    score = _weighted(x.astype(np.int64), p)
    if normalize:
        return score / _weighted(np.minimum(d, n_ideal), p)
    return score / float(_weights(p, depth).sum())


def compatibility_topk(
    run: Sequence[str],
    top: Sequence[str],
    rest: Sequence[str] = (),
    p: float = COMPAT_P,
    *,
    include_rest: bool = False,
    normalize: bool = True,
    extrapolate: bool = False,
) -> float:
    """Compatibility with a top-k truth: ``top`` best first is the ideal.

    ``rest`` (the pool's unordered remainder) is not relevant by default, as its κ-label 0
    says; ``include_rest=True`` appends it to the ideal as one tied group below the top (ties
    broken in the run's favour, as for equal grades).
    """
    grades: dict[str, float] = {doc: float(len(top) - i) for i, doc in enumerate(top)}
    if len(grades) != len(top):
        raise ValueError("the top lists a document twice")
    if include_rest:
        for doc in rest:
            if doc in grades:
                raise ValueError(f"document {doc!r} is both in the top and in the rest")
            grades[doc] = 0.5
    return compatibility(run, grades, p, normalize=normalize, extrapolate=extrapolate)


def compatibility_per_query(
    runs: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, float]],
    p: float = COMPAT_P,
    *,
    normalize: bool = True,
    extrapolate: bool = False,
    missing_run_zero: bool = False,
) -> dict[str, float]:
    """Compatibility per query id, for the queries with at least one positive grade.

    ``runs``: query → documents best first; ``qrels``: query → document → grade. A query the
    run lacks is skipped (as ir-measures and the authors' script do), or scores 0 with
    ``missing_run_zero=True``.
    """
    out: dict[str, float] = {}
    for qid, grades in qrels.items():
        if not any(float(g) > 0 for g in grades.values()):
            continue
        if qid not in runs and not missing_run_zero:
            continue
        ranking = runs.get(qid, ())
        out[qid] = compatibility(ranking, grades, p, normalize=normalize, extrapolate=extrapolate)
    return out
