"""Scoring functions f(x): a linear scorer and a small one-hidden-layer MLP.

Both map flat features ``X (N, d)`` to scores ``(N,)`` and back-propagate ∂L/∂scores to their
parameters (for a linear model ``∂L/∂w = Xᵀ ∂L/∂s``, docs/ranking.md#notation). Parameters are
a list of float64 arrays updated in place by :mod:`ranking.learners.optim`;
``to_dict``/``from_dict`` give a JSON-safe form (no pickle).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["MODELS", "LinearModel", "MLPModel", "Model", "model_from_dict"]


class Model:
    """Interface of a differentiable scorer."""

    kind = "base"
    params: list[np.ndarray]

    def score(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def score_and_backward(self, X: np.ndarray) -> tuple[np.ndarray, Any]:
        """Scores plus whatever :meth:`backward` needs."""
        raise NotImplementedError

    def backward(self, X: np.ndarray, cache: Any, grad_scores: np.ndarray) -> list[np.ndarray]:
        raise NotImplementedError

    def copy_params(self) -> list[np.ndarray]:
        return [p.copy() for p in self.params]

    def set_params(self, params: list[np.ndarray]) -> None:
        for dst, src in zip(self.params, params, strict=True):
            dst[...] = src

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError


class LinearModel(Model):
    """``f(x) = wᵀx`` (no bias: a per-query constant never changes a ranking)."""

    kind = "linear"

    def __init__(self, n_features: int, weights: np.ndarray | None = None) -> None:
        w = np.zeros(n_features) if weights is None else np.asarray(weights, dtype=np.float64)
        if w.shape != (n_features,):
            raise ValueError(f"weights must have shape ({n_features},), got {w.shape}")
        self.params = [w.copy()]

    @property
    def weights(self) -> np.ndarray:
        return self.params[0]

    def score(self, X: np.ndarray) -> np.ndarray:
        _check_x(X, self.params[0].shape[0])
        scores: NDArray[np.float64] = X @ self.params[0]  # numpy's stubs type `@` as Any here
        return scores

    def score_and_backward(self, X: np.ndarray) -> tuple[np.ndarray, Any]:
        return self.score(X), None

    def backward(self, X: np.ndarray, cache: Any, grad_scores: np.ndarray) -> list[np.ndarray]:
        return [X.T @ grad_scores]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "weights": self.params[0].tolist()}


class MLPModel(Model):
    """``f(x) = vᵀ tanh(W x + b)``: one hidden layer, Glorot-uniform initialisation."""

    kind = "mlp"

    def __init__(
        self,
        n_features: int,
        hidden: int = 16,
        seed: int = 0,
        params: list[np.ndarray] | None = None,
    ) -> None:
        if hidden < 1:
            raise ValueError(f"hidden must be >= 1, got {hidden}")
        if params is None:
            rng = np.random.default_rng(seed)
            lim1 = np.sqrt(6.0 / (n_features + hidden))
            lim2 = np.sqrt(6.0 / (hidden + 1))
            params = [
                rng.uniform(-lim1, lim1, (n_features, hidden)),
                np.zeros(hidden),
                rng.uniform(-lim2, lim2, hidden),
            ]
        shapes = [(n_features, hidden), (hidden,), (hidden,)]
        if [tuple(np.shape(p)) for p in params] != shapes:
            raise ValueError(f"MLP parameters must have shapes {shapes}")
        self.params = [np.asarray(p, dtype=np.float64).copy() for p in params]

    def score(self, X: np.ndarray) -> np.ndarray:
        return self.score_and_backward(X)[0]

    def score_and_backward(self, X: np.ndarray) -> tuple[np.ndarray, Any]:
        _check_x(X, self.params[0].shape[0])
        h = np.tanh(X @ self.params[0] + self.params[1])
        return h @ self.params[2], h

    def backward(self, X: np.ndarray, cache: Any, grad_scores: np.ndarray) -> list[np.ndarray]:
        h = cache
        g_v = h.T @ grad_scores
        g_pre = np.outer(grad_scores, self.params[2]) * (1.0 - h * h)
        return [X.T @ g_pre, g_pre.sum(axis=0), g_v]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "params": [p.tolist() for p in self.params]}


def _check_x(X: np.ndarray, d: int) -> None:
    if X.ndim != 2 or X.shape[1] != d:
        raise ValueError(f"X must have shape (N, {d}), got {X.shape}")


MODELS = {"linear": LinearModel, "mlp": MLPModel}


def model_from_dict(data: dict[str, Any]) -> Model:
    """Inverse of ``to_dict``."""
    kind = data.get("kind")
    if kind == "linear":
        w = np.asarray(data["weights"], dtype=np.float64)
        return LinearModel(w.shape[0], w)
    if kind == "mlp":
        params = [np.asarray(p, dtype=np.float64) for p in data["params"]]
        return MLPModel(params[0].shape[0], params[0].shape[1], params=params)
    raise ValueError(f"unknown model kind {kind!r}; expected one of {sorted(MODELS)}")
