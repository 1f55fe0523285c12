"""Boosting rankers: RankBoost, AdaRank and FocusedBoost (docs/ranking.md#boosting).

All three build ``f = Σ_t α_t h_t`` from a finite family of weak rankers
(:class:`WeakRankers`): single features min-max scaled to [0, 1] (AdaRank's choice) or binary
thresholds ``[x_f > θ]`` (RankBoost's). Each returns a :class:`BoostModel` plus a per-round
history ``(weak ranker index, α_t, training objective)`` so that the tests can compare the
algorithms round by round:

- **RankBoost** (Freund et al. 2003): distribution D over crucial pairs; ``r(h) = Σ D(u,v)
  (h(x_u) − h(x_v))``; pick ``argmax |r|``; ``α = ½ ln((1 + r)/(1 − r))``;
  ``D ← D·exp(−α(h(x_u) − h(x_v)))/Z``.
- **AdaRank** (Xu & Li 2007): distribution P over queries; ``a(h) = Σ_i P(i) E(h; q_i)`` with
  E = NDCG@k (κ-NDCG@k on κ-labels); pick ``argmax a``; ``α = ½ ln(ΣP(1+E)/ΣP(1−E))``;
  ``P(i) ∝ exp(−E(f_t; q_i))``.
- **FocusedBoost** (Niu et al. 2012 Algorithm 2, reconstructed in docs/ranking.md#focusedrank): both
  distributions, E = κ-NDCG@k restricted to T_i, pairs P_i = T_i × F_i,
  ``c(h) = β·a(h) + (1 − β)·b(h)``, ``α = ½ ln((1 + c)/(1 − c))``, ``P ∝ exp(−E(f_t))``,
  ``D ∝ exp(−(f_t(x_u) − f_t(x_v)))``. At β = 1 this is AdaRank on T, at β = 0 RankBoost on
  T × F (the tests check both round by round).

Selection uses ``argmax |c|`` throughout (for a ∈ [0, 1] that is argmax a); a negative c gives a
negative α, i.e. the reversed weak ranker. ``forbid_repeat`` skips the weak ranker chosen in the
previous round (AdaRank's common practice). The step α = ½ ln((1 + c)/(1 − c)) minimises the
convexity bound; it is not RankBoost's exact line search ½ ln(W₊/W₋), so r(h_t) after the update
is 0 only when no pair ties under h_t. c is clipped into (−1 + ε, 1 − ε). Deterministic: ties
go to the lowest weak-ranker index.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ranking import metrics
from ranking.data.dataset import QueryDataset

__all__ = [
    "BoostModel",
    "BoostResult",
    "Progress",
    "WeakRankers",
    "adarank",
    "focusedboost",
    "rankboost",
    "step_size",
]

EPS = 1e-10


def step_size(c: float) -> float:
    """``α = ½ ln((1 + c)/(1 − c))`` with c clipped into (−1 + ε, 1 − ε)."""
    c = min(max(c, -1.0 + EPS), 1.0 - EPS)
    return 0.5 * math.log((1.0 + c) / (1.0 - c))


@dataclass
class WeakRankers:
    """A finite family of weak rankers over the features.

    ``kind="feature"``: ``h_m(x) = clip((x_f − lo_f)/(hi_f − lo_f), 0, 1)`` with lo/hi learned
    on the training data (``scale=False`` uses the raw feature). ``kind="threshold"``:
    ``h_m(x) = [x_f > θ_m]`` with θ from the training quantiles of each feature.
    """

    kind: str
    features: np.ndarray
    thresholds: np.ndarray
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None

    @classmethod
    def build(
        cls,
        X: np.ndarray,
        kind: str = "feature",
        *,
        n_thresholds: int = 16,
        scale: bool = True,
        dedupe: bool = True,
    ) -> WeakRankers:
        """The weak rankers of ``kind`` for training features ``X``.

        ``dedupe`` drops weak rankers whose outputs on ``X`` are constant or equal to an
        earlier one's (LETOR has duplicated features; twins would let a booster alternate
        between copies of the same ranker).
        """
        weak = cls._build(X, kind, n_thresholds, scale)
        if not dedupe:
            return weak
        H = weak.values(X)
        varying = np.flatnonzero(H.max(axis=0) > H.min(axis=0))
        if varying.size == 0:
            raise ValueError("every weak ranker is constant on the training data")
        _, first = np.unique(H[:, varying], axis=1, return_index=True)
        keep = varying[np.sort(first)]
        return cls(weak.kind, weak.features[keep], weak.thresholds[keep], weak.lo, weak.hi)

    @classmethod
    def _build(cls, X: np.ndarray, kind: str, n_thresholds: int, scale: bool) -> WeakRankers:
        d = X.shape[1]
        if kind == "feature":
            lo = X.min(axis=0) if scale else None
            hi = X.max(axis=0) if scale else None
            return cls("feature", np.arange(d), np.full(d, np.nan), lo, hi)
        if kind == "threshold":
            if n_thresholds < 1:
                raise ValueError(f"n_thresholds must be >= 1, got {n_thresholds}")
            qs = np.linspace(0.0, 1.0, n_thresholds + 2)[1:-1]
            feats, ths = [], []
            for f in range(d):
                col = X[:, f]
                cand = np.unique(np.quantile(col, qs))
                cand = cand[cand < col.max()]  # a threshold at the max is constant 0
                feats.extend([f] * cand.size)
                ths.extend(cand.tolist())
            if not feats:
                raise ValueError("no usable threshold: every feature is constant")
            return cls("threshold", np.array(feats, dtype=np.int64), np.array(ths))
        raise ValueError(f"weak ranker kind must be 'feature' or 'threshold', got {kind!r}")

    @property
    def size(self) -> int:
        return int(self.features.size)

    def values(self, X: np.ndarray, columns: np.ndarray | None = None) -> np.ndarray:
        """``(N, M)`` weak-ranker outputs (or only the given columns)."""
        cols = np.arange(self.size) if columns is None else np.asarray(columns)
        f = self.features[cols]
        x = X[:, f]
        if self.kind == "threshold":
            return (x > self.thresholds[cols][None, :]).astype(np.float64)
        if self.lo is None or self.hi is None:
            return x.astype(np.float64)
        lo, span = self.lo[f], self.hi[f] - self.lo[f]
        # Typed: numpy's stubs lose the dtype through where/clip on these arrays.
        scaled: NDArray[np.float64] = np.clip(
            (x - lo) / np.where(span > 0, span, 1.0), 0.0, 1.0
        ) * (span > 0)
        return scaled

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "features": self.features.tolist(),
            "thresholds": [None if math.isnan(t) else t for t in self.thresholds.tolist()],
            "lo": None if self.lo is None else self.lo.tolist(),
            "hi": None if self.hi is None else self.hi.tolist(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WeakRankers:
        return cls(
            data["kind"],
            np.asarray(data["features"], dtype=np.int64),
            np.array([np.nan if t is None else t for t in data["thresholds"]], dtype=np.float64),
            None if data["lo"] is None else np.asarray(data["lo"], dtype=np.float64),
            None if data["hi"] is None else np.asarray(data["hi"], dtype=np.float64),
        )


@dataclass
class BoostModel:
    """``f(x) = Σ_t α_t h_{m_t}(x)``."""

    weak: WeakRankers
    chosen: np.ndarray
    alphas: np.ndarray

    def score(self, X: np.ndarray) -> np.ndarray:
        if self.chosen.size == 0:
            return np.zeros(X.shape[0])
        scores: NDArray[np.float64] = self.weak.values(X, self.chosen) @ self.alphas
        return scores

    def truncate(self, rounds: int) -> BoostModel:
        return BoostModel(self.weak, self.chosen[:rounds].copy(), self.alphas[:rounds].copy())

    def to_dict(self) -> dict[str, Any]:
        return {
            "weak": self.weak.to_dict(),
            "chosen": self.chosen.tolist(),
            "alphas": self.alphas.tolist(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BoostModel:
        return cls(
            WeakRankers.from_dict(data["weak"]),
            np.asarray(data["chosen"], dtype=np.int64),
            np.asarray(data["alphas"], dtype=np.float64),
        )


@dataclass
class BoostResult:
    """The model after all rounds plus the per-round record."""

    model: BoostModel
    history: list[tuple[int, float, float]] = field(default_factory=list)  # (m_t, α_t, c_t)
    valid: list[float] = field(default_factory=list)  # validation metric after each round

    def best_rounds(self) -> int:
        """Number of rounds with the best validation metric (the first of equals)."""
        if not self.valid:
            return len(self.history)
        return int(np.argmax(self.valid)) + 1


ValidFn = Callable[[np.ndarray], float]  # flat validation scores -> metric
# Called as progress(round, rounds) after every round; it may raise to abort the fit (a
# cancelled training job does), so a caller can stop a long fit between two rounds.
Progress = Callable[[int, int], None]


def _row_pairs(ds: QueryDataset, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Pairs as flat row indices of the data set (``graded`` or ``focused``)."""
    t = ds.target()
    pairs = t.graded_pairs() if kind == "graded" else t.focused_pairs()
    rowmap = np.full(t.mask.size, -1, dtype=np.int64)
    rowmap[t.mask.ravel()] = np.arange(ds.n_docs)
    return rowmap[pairs.u], rowmap[pairs.v]


def _potential(u: np.ndarray, v: np.ndarray, d: np.ndarray, n: int) -> np.ndarray:
    """π(x) = Σ_v D(x, v) − Σ_u D(u, x), so that Σ D(u,v)(h(u) − h(v)) = π·h."""
    return np.bincount(u, weights=d, minlength=n) - np.bincount(v, weights=d, minlength=n)


def _pick(score: np.ndarray, previous: int | None, forbid_repeat: bool) -> int:
    key = np.abs(score)
    if forbid_repeat and previous is not None and score.size > 1:
        key = key.copy()
        key[previous] = -1.0
    return int(np.argmax(key))


class _Rounds:
    """The bookkeeping every booster shares: chosen rankers, steps, history and validation."""

    def __init__(
        self,
        weak: WeakRankers,
        valid_X: np.ndarray | None,
        valid_fn: ValidFn | None,
        rounds: int = 0,
        progress: Progress | None = None,
    ) -> None:
        self.weak = weak
        self.rounds = rounds
        self.progress = progress
        self.chosen: list[int] = []
        self.alphas: list[float] = []
        self.history: list[tuple[int, float, float]] = []
        self.valid: list[float] = []
        self.previous: int | None = None
        # Validation scores are kept incrementally: one weak-ranker column per round.
        self._valid = None if valid_fn is None or valid_X is None else (valid_X, valid_fn)
        self._valid_s = np.zeros(0 if valid_X is None else valid_X.shape[0])

    def step(self, edge: np.ndarray, forbid_repeat: bool) -> tuple[int, float]:
        """Pick ``argmax |edge|`` (see :func:`_pick`), record it, return ``(m, α)``."""
        m = _pick(edge, self.previous, forbid_repeat)
        alpha = step_size(float(edge[m]))
        self.chosen.append(m)
        self.alphas.append(alpha)
        self.history.append((m, alpha, float(edge[m])))
        self.previous = m
        if self._valid is not None:
            X, fn = self._valid
            self._valid_s = self._valid_s + alpha * self.weak.values(X, np.array([m]))[:, 0]
            self.valid.append(fn(self._valid_s))
        if self.progress is not None:
            self.progress(len(self.chosen), self.rounds)
        return m, alpha

    def result(self) -> BoostResult:
        model = BoostModel(self.weak, np.array(self.chosen, dtype=np.int64), np.array(self.alphas))
        return BoostResult(model, self.history, self.valid)


def rankboost(
    ds: QueryDataset,
    weak: WeakRankers,
    rounds: int = 100,
    *,
    pairs: str = "graded",
    forbid_repeat: bool = True,
    valid_X: np.ndarray | None = None,
    valid_fn: ValidFn | None = None,
    progress: Progress | None = None,
) -> BoostResult:
    """RankBoost (Freund, Iyer, Schapire & Singer 2003), see the module docstring.

    ``pairs="graded"``: all pairs with different labels; ``"focused"``: T × F of κ-labels.
    """
    u, v = _row_pairs(ds, pairs)
    if u.size == 0:
        raise ValueError("RankBoost needs at least one pair with different labels")
    H = weak.values(ds.X)
    d = np.full(u.size, 1.0 / u.size)
    rec = _Rounds(weak, valid_X, valid_fn, rounds, progress)
    for _ in range(rounds):
        m, alpha = rec.step(_potential(u, v, d, ds.n_docs) @ H, forbid_repeat)
        d = d * np.exp(-alpha * (H[u, m] - H[v, m]))
        d /= d.sum()
    return rec.result()


def _query_measure(
    labels: np.ndarray, mask: np.ndarray, at: int
) -> Callable[[np.ndarray], np.ndarray]:
    """E(scores) per query: NDCG@at with exp gain (κ-NDCG@at on κ-labels), ties stable."""

    def measure(padded_scores: np.ndarray) -> np.ndarray:
        return metrics.ndcg(labels, padded_scores, mask, at=at)

    return measure


def _weak_measures(
    H: np.ndarray, ds: QueryDataset, measure: Callable[[np.ndarray], np.ndarray], chunk: int = 32
) -> np.ndarray:
    """``E[i, m]`` = measure of weak ranker m on query i (computed once per fit)."""
    out = np.empty((ds.n_queries, H.shape[1]))
    for start in range(0, H.shape[1], chunk):
        block = H[:, start : start + chunk]
        padded, _ = ds.pad(block)  # (Q, L, c)
        for j in range(block.shape[1]):
            out[:, start + j] = measure(padded[:, :, j])
    return out


def adarank(
    ds: QueryDataset,
    weak: WeakRankers,
    rounds: int = 100,
    *,
    at: int = 10,
    forbid_repeat: bool = True,
    valid_X: np.ndarray | None = None,
    valid_fn: ValidFn | None = None,
    progress: Progress | None = None,
) -> BoostResult:
    """AdaRank (Xu & Li, SIGIR 2007) with E = NDCG@``at`` (κ-NDCG@``at`` on κ-labels).

    Queries without a positive label have no defined E and are left out of training.
    """
    keep = (
        np.flatnonzero(np.add.reduceat(ds.labels > 0, ds.offsets[:-1]) > 0)
        if ds.n_docs
        else np.zeros(0, dtype=np.int64)
    )
    if keep.size == 0:
        raise ValueError("AdaRank needs at least one query with a positive label")
    data = ds if keep.size == ds.n_queries else ds.subset(keep)
    labels, mask = data.pad(data.labels)
    measure = _query_measure(labels, mask, at)
    H = weak.values(data.X)
    E = _weak_measures(H, data, measure)
    p = np.full(data.n_queries, 1.0 / data.n_queries)
    f = np.zeros(data.n_docs)
    rec = _Rounds(weak, valid_X, valid_fn, rounds, progress)
    for _ in range(rounds):
        # ½ ln(ΣP(1+E)/ΣP(1−E)) = ½ ln((1+a)/(1−a)) because ΣP = 1.
        m, alpha = rec.step(p @ E, forbid_repeat)
        f = f + alpha * H[:, m]
        w = np.exp(-measure(data.pad(f)[0]))
        p = w / w.sum()
    return rec.result()


def focusedboost(
    ds: QueryDataset,
    weak: WeakRankers,
    rounds: int = 100,
    *,
    beta: float = 0.5,
    k: int = 10,
    forbid_repeat: bool = True,
    valid_X: np.ndarray | None = None,
    valid_fn: ValidFn | None = None,
    progress: Progress | None = None,
) -> BoostResult:
    """FocusedBoost (the reconstruction of docs/ranking.md#focusedrank) on κ-labelled top-k truth.

    List part: AdaRank's query distribution with E = κ-NDCG@k of the ranking of T_i's items;
    pair part: RankBoost's distribution over P_i = T_i × F_i. Mixed edge
    ``c = β·Σ_i P(i)E_i(h) + (1 − β)·Σ D(u,v)(h(x_u) − h(x_v))``. Queries with |T_i| < 2 have
    no list part (docs/ranking.md#focusedrank) and stay out of P; queries with empty F have no
    pairs.
    """
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta must be in [0, 1], got {beta}")
    t = ds.target()
    top = t.top
    H = weak.values(ds.X)
    if beta > 0:
        # |T_i| < 2 means L_list = 0 (docs/ranking.md#focusedrank): E of a one-item T is 1 for
        # every weak ranker, so such a query would only inflate c and α, never inform the choice.
        list_q = np.flatnonzero(top.sum(axis=1) >= 2)
        if list_q.size == 0 and beta == 1.0:
            raise ValueError(
                "FocusedBoost with beta = 1 needs a query whose top set has >= 2 items"
            )
        labels_t = np.where(top, t.labels, 0.0)[list_q]
        measure = _query_measure(labels_t, top[list_q], k)

        def e_of(flat: np.ndarray) -> np.ndarray:
            return measure(ds.pad(flat)[0][list_q])

        E = np.empty((list_q.size, weak.size))
        for m in range(weak.size):
            E[:, m] = e_of(H[:, m])
        p = np.full(list_q.size, 1.0 / max(list_q.size, 1))
    if beta < 1:
        u, v = _row_pairs(ds, "focused")
        if u.size == 0:
            raise ValueError("FocusedBoost with beta < 1 needs at least one pair T x F")
        d = np.full(u.size, 1.0 / u.size)
    f = np.zeros(ds.n_docs)
    rec = _Rounds(weak, valid_X, valid_fn, rounds, progress)
    for _ in range(rounds):
        c = np.zeros(weak.size)
        if beta > 0:
            c += beta * (p @ E)
        if beta < 1:
            c += (1.0 - beta) * (_potential(u, v, d, ds.n_docs) @ H)
        m, alpha = rec.step(c, forbid_repeat)
        f = f + alpha * H[:, m]
        if beta > 0:
            w = np.exp(-e_of(f))
            p = w / w.sum()
        if beta < 1:
            z = -(f[u] - f[v])
            w = np.exp(z - z.max())  # D ∝ exp(−(f(x_u) − f(x_v))), shifted for stability
            d = w / w.sum()
    return rec.result()
