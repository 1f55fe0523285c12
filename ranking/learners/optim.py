"""Training loops: Adam/SGD (full- or mini-batch) with early stopping, and a Pegasos solver.

Both loops work on :class:`Batch` objects: a fixed group of queries with their flat features,
padded mask and a prepared :class:`~ranking.losses.Target`, built once so that pair index
arrays and truth orders are not recomputed every epoch. The loss is any function of
:mod:`ranking.losses` (``loss(scores (Q, L), target) -> (value, ∂value/∂scores)``).

Early stopping: every ``eval_every`` epochs the validation function (higher is better, e.g.
mean NDCG@10 on the validation queries) is evaluated; the best parameters are kept and training
stops after ``patience`` evaluations without improvement. This tunes the number of iterations
on validation data as in Niu et al. 2012 §6.

``progress(i, total)`` is called after every epoch (iteration); an exception it raises aborts
the loop, so a caller can cancel a long fit between two iterations.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ranking.data.dataset import QueryDataset
from ranking.learners.models import LinearModel, Model
from ranking.losses import Target

__all__ = ["SGD", "Adam", "Batch", "TrainResult", "make_batches", "pegasos", "train_gradient"]

LossOnScores = Callable[[np.ndarray, Target], tuple[float, np.ndarray]]
ValidFn = Callable[[Model], float]
Progress = Callable[[int, int], None]


@dataclass
class Batch:
    """A fixed group of queries prepared for repeated loss evaluation."""

    X: np.ndarray
    target: Target

    @classmethod
    def from_dataset(cls, ds: QueryDataset) -> Batch:
        return cls(X=ds.X, target=ds.target())

    @property
    def n_queries(self) -> int:
        return int(self.target.shape[0])

    def pad(self, flat_scores: np.ndarray) -> np.ndarray:
        # padded[mask] is the flat row order (ranking.padding), so one assignment scatters.
        out = np.zeros(self.target.shape)
        out[self.target.mask] = flat_scores
        return out

    def loss_and_grad(self, model: Model, loss: LossOnScores) -> tuple[float, list[np.ndarray]]:
        s, cache = model.score_and_backward(self.X)
        value, g = loss(self.pad(s), self.target)
        return value, model.backward(self.X, cache, g[self.target.mask])


def make_batches(ds: QueryDataset, batch_queries: int | None, seed: int) -> list[Batch]:
    """Split the queries into fixed mini-batches (one batch when ``batch_queries`` is None)."""
    if batch_queries is None or batch_queries >= ds.n_queries:
        return [Batch.from_dataset(ds)]
    if batch_queries < 1:
        raise ValueError(f"batch_queries must be >= 1, got {batch_queries}")
    perm = np.random.default_rng(seed).permutation(ds.n_queries)
    return [
        Batch.from_dataset(ds.subset(perm[i : i + batch_queries]))
        for i in range(0, ds.n_queries, batch_queries)
    ]


class SGD:
    """Plain (momentum) gradient descent."""

    def __init__(self, lr: float = 0.1, momentum: float = 0.0) -> None:
        self.lr, self.momentum = lr, momentum
        self._v: list[np.ndarray] | None = None

    def step(self, params: list[np.ndarray], grads: list[np.ndarray]) -> None:
        if self._v is None:
            self._v = [np.zeros_like(p) for p in params]
        for p, g, v in zip(params, grads, self._v, strict=True):
            v *= self.momentum
            v += g
            p -= self.lr * v


class Adam:
    """Adam (Kingma & Ba 2015) with bias correction."""

    def __init__(
        self, lr: float = 0.01, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8
    ) -> None:
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self._m: list[np.ndarray] | None = None
        self._v: list[np.ndarray] = []
        self._t = 0

    def step(self, params: list[np.ndarray], grads: list[np.ndarray]) -> None:
        if self._m is None:
            self._m = [np.zeros_like(p) for p in params]
            self._v = [np.zeros_like(p) for p in params]
        self._t += 1
        c1 = 1.0 - self.beta1**self._t
        c2 = 1.0 - self.beta2**self._t
        for p, g, m, v in zip(params, grads, self._m, self._v, strict=True):
            m *= self.beta1
            m += (1.0 - self.beta1) * g
            v *= self.beta2
            v += (1.0 - self.beta2) * g * g
            p -= self.lr * (m / c1) / (np.sqrt(v / c2) + self.eps)


OPTIMIZERS = {"adam": Adam, "sgd": SGD}


@dataclass
class TrainResult:
    """What a training loop did: the epoch kept, its validation value, the history."""

    best_epoch: int
    best_valid: float
    epochs_run: int
    history: list[tuple[int, float, float]] = field(default_factory=list)  # (epoch, loss, valid)


class _EarlyStopping:
    def __init__(self, model: Model, patience: int) -> None:
        self.model, self.patience = model, patience
        self.best = -math.inf
        self.best_epoch = 0
        self.best_params = model.copy_params()
        self.bad = 0

    def update(self, epoch: int, value: float, params: list[np.ndarray] | None = None) -> bool:
        """Record a validation value; return True when training should stop."""
        if value > self.best + 1e-12:
            self.best, self.best_epoch, self.bad = value, epoch, 0
            self.best_params = [p.copy() for p in (params or self.model.params)]
        else:
            self.bad += 1
        return self.bad >= self.patience


def train_gradient(
    model: Model,
    loss: LossOnScores,
    batches: Sequence[Batch],
    *,
    optimizer: str = "adam",
    lr: float = 0.01,
    epochs: int = 200,
    l2: float = 0.0,
    valid_fn: ValidFn | None = None,
    eval_every: int = 5,
    patience: int = 10,
    seed: int = 0,
    progress: Progress | None = None,
) -> TrainResult:
    """Minimise ``mean_batches loss + ½·l2·‖θ‖²`` with Adam or SGD; keep the best epoch.

    Without ``valid_fn`` the last epoch is kept. Deterministic given ``seed`` (batch order).
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {sorted(OPTIMIZERS)}, got {optimizer!r}")
    if epochs < 1 or eval_every < 1 or patience < 1:
        raise ValueError("epochs, eval_every and patience must be >= 1")
    opt = OPTIMIZERS[optimizer](lr=lr)
    rng = np.random.default_rng(seed)
    stopper = _EarlyStopping(model, patience)
    history: list[tuple[int, float, float]] = []
    epoch = 0
    for epoch in range(1, epochs + 1):
        total = 0.0
        for b in rng.permutation(len(batches)) if len(batches) > 1 else [0]:
            value, grads = batches[b].loss_and_grad(model, loss)
            if l2 > 0:
                grads = [g + l2 * p for g, p in zip(grads, model.params, strict=True)]
            opt.step(model.params, grads)
            total += value
        if progress is not None:
            progress(epoch, epochs)
        if valid_fn is not None and (epoch % eval_every == 0 or epoch == epochs):
            v = valid_fn(model)
            history.append((epoch, total / len(batches), v))
            if stopper.update(epoch, v):
                break
    if valid_fn is None:
        return TrainResult(epoch, math.nan, epoch, history)
    model.set_params(stopper.best_params)
    return TrainResult(stopper.best_epoch, stopper.best, epoch, history)


def pegasos(
    model: LinearModel,
    loss: LossOnScores,
    batches: Sequence[Batch],
    *,
    C: float = 1.0,
    iterations: int = 300,
    valid_fn: ValidFn | None = None,
    eval_every: int = 10,
    patience: int = 10,
    seed: int = 0,
    progress: Progress | None = None,
) -> TrainResult:
    """Pegasos-style stochastic subgradient solver (Shalev-Shwartz et al. 2007) for SVM losses.

    Primal ``½‖w‖² + C·Σ_q L_q(w)``, i.e. ``(λ/2)‖w‖² + mean_q L_q(w)`` with ``λ = 1/(C·Q)``.
    Step t on a batch B: ``w ← (1 − 1/t)·w − (1/(λt))·∂mean_{q∈B} L_q``, then projection onto
    the ball ``‖w‖ ≤ sqrt(2·mean L(0)/λ)`` that contains the optimum. The returned weights are
    the tail average of the iterates (the average restarts at every power of two), the form
    whose convergence Pegasos proves; the number of iterations is early-stopped on validation.
    """
    if C <= 0:
        raise ValueError(f"C must be positive, got {C}")
    if iterations < 1:
        raise ValueError("iterations must be >= 1")
    n_q = sum(b.n_queries for b in batches)
    lam = 1.0 / (C * n_q)
    model.params[0][...] = 0.0
    f0 = sum(b.loss_and_grad(model, loss)[0] * b.n_queries for b in batches) / n_q
    radius = math.sqrt(2.0 * max(f0, 1e-12) / lam)
    rng = np.random.default_rng(seed)
    w = model.params[0]
    avg = w.copy()
    avg_count = 0
    stopper = _EarlyStopping(model, patience)
    history: list[tuple[int, float, float]] = []
    t = 0
    for t in range(1, iterations + 1):
        b = batches[int(rng.integers(len(batches)))] if len(batches) > 1 else batches[0]
        value, (g,) = b.loss_and_grad(model, loss)
        eta = 1.0 / (lam * t)
        w *= 1.0 - 1.0 / t
        w -= eta * g
        norm = float(np.linalg.norm(w))
        if norm > radius:
            w *= radius / norm
        if t & (t - 1) == 0:  # power of two: restart the tail average
            avg[...] = w
            avg_count = 1
        else:
            avg_count += 1
            avg += (w - avg) / avg_count
        if progress is not None:
            progress(t, iterations)
        if valid_fn is not None and (t % eval_every == 0 or t == iterations):
            current = w.copy()
            w[...] = avg
            v = valid_fn(model)
            w[...] = current
            history.append((t, value, v))
            if stopper.update(t, v, [avg]):
                break
    if valid_fn is None:
        w[...] = avg
        return TrainResult(t, math.nan, t, history)
    model.set_params(stopper.best_params)
    return TrainResult(stopper.best_epoch, stopper.best, t, history)
