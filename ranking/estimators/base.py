"""The estimator base: hyperparameters, ``predict``/``score``, JSON persistence
(:class:`Ranker`), the truth each family trains on, and the shared fit of the loss-minimising
rankers (:class:`LossRanker`). The conventions of every estimator: :mod:`ranking.estimators`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from ranking import metrics
from ranking.data.dataset import QueryDataset
from ranking.learners.models import Model, model_from_dict
from ranking.learners.optim import TrainResult, make_batches
from ranking.losses import get_loss

FORMAT = "heapjudge-ranker"
FORMAT_VERSION = 1


def metric_values(name: str, data: QueryDataset, scores: np.ndarray) -> np.ndarray:
    """Per-query values of a metric named ``ndcg@K``, ``err[@K]``, ``kappa_ndcg@K`` or
    ``kappa_err`` (metrics of :mod:`ranking.metrics` with their default conventions: exp gain,
    log2 discount, stable ties, queries without a relevant document score 0).

    On κ-labelled data ``ndcg@K`` is κ-NDCG@K, and ``err`` uses ``r_max = k`` (κ-ERR). Names
    are read by :func:`ranking.metrics.parse_metric`, the evaluator's own parser.
    """
    try:
        base, at = metrics.parse_metric(name)
    except ValueError:
        base, at = "", None
    target = data.target()  # cached padded labels and mask (validation runs call this often)
    labels, mask = target.labels, target.mask
    s = np.zeros(labels.shape)
    s[mask] = scores
    if base in ("ndcg", "kappa-ndcg"):
        return metrics.ndcg(labels, s, mask, at=at)
    if base in ("err", "kappa-err"):
        if data.topk is not None:
            return metrics.kappa_err(labels, s, mask, k=data.topk, at=at)
        return metrics.err(labels, s, mask, at=at)
    raise ValueError(f"unknown metric {name!r}; use ndcg@K, err, kappa_ndcg@K or kappa_err")


class FittedModel(Protocol):
    """What a fitted estimator keeps in ``model_``: a :class:`~ranking.learners.models.Model`
    (gradient and SVM rankers) or a :class:`~ranking.learners.boosting.BoostModel`."""

    def score(self, X: np.ndarray) -> np.ndarray: ...

    def to_dict(self) -> dict[str, Any]: ...


class Ranker:
    """Base class: hyperparameter handling, predict/score and JSON persistence.

    A saved model names its class; :meth:`from_dict` finds it among the subclasses of
    :class:`Ranker` (see :func:`saved_classes`), which ``import ranking.estimators`` loads.
    """

    _params: ClassVar[tuple[str, ...]] = ("metric", "seed")
    #: True on the shared bases (set in the class body, not inherited): never saved or loaded.
    abstract: ClassVar[bool] = True
    metric: str
    seed: int

    # Learned by fit() or from_dict(). Declared, not assigned: an unfitted estimator has none
    # of them, which is how _check_fitted tells (the scikit-learn convention).
    model_: FittedModel
    n_features_in_: int
    best_iteration_: int
    best_valid_score_: float  # NaN when fitted without validation data
    history_: list[tuple[int, float, float]]  # per epoch/round; empty after loading

    # ---------------------------------------------------------------- sklearn conventions
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._params}

    def set_params(self, **params: Any) -> Ranker:
        for name, value in params.items():
            if name not in self._params:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def fit(
        self,
        train: QueryDataset,
        valid: QueryDataset | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Ranker:
        """Learn from ``train`` (early-stopped on ``valid``); ``progress(i, total)`` is called
        after every epoch, iteration or boosting round and may raise to abort the fit."""
        raise NotImplementedError

    def _check_fitted(self) -> None:
        if not hasattr(self, "model_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit() first")

    def predict(self, X: QueryDataset | np.ndarray) -> np.ndarray:
        """One score per row (higher = better)."""
        self._check_fitted()
        x = X.X if isinstance(X, QueryDataset) else np.asarray(X, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.n_features_in_:
            raise ValueError(
                f"expected features of shape (N, {self.n_features_in_}), got {x.shape}"
            )
        return self.model_.score(x)

    def score(self, data: QueryDataset, metric: str | None = None) -> float:
        """Mean of ``metric`` (default: the estimator's) over the queries of ``data``."""
        return float(np.mean(metric_values(metric or self.metric, data, self.predict(data))))

    def _valid_fn(self, valid: QueryDataset | None) -> Callable[[np.ndarray], float] | None:
        if valid is None:
            return None
        return lambda flat: float(np.mean(metric_values(self.metric, valid, flat)))

    # ---------------------------------------------------------------- persistence
    def to_dict(self) -> dict[str, Any]:
        self._check_fitted()
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "estimator": type(self).__name__,
            "params": self.get_params(),
            "n_features_in_": self.n_features_in_,
            "best_iteration_": self.best_iteration_,
            "best_valid_score_": None
            if math.isnan(self.best_valid_score_)
            else self.best_valid_score_,
            "model": self.model_.to_dict(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Ranker:
        if data.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} model (format={data.get('format')!r})")
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"unsupported model version {data.get('version')!r}")
        name = data.get("estimator")
        cls = saved_classes().get(str(name))
        if cls is None:
            raise ValueError(f"unknown estimator {name!r}")
        est = cls(**data["params"])
        est.n_features_in_ = int(data["n_features_in_"])
        est.best_iteration_ = int(data["best_iteration_"])
        v = data["best_valid_score_"]
        est.best_valid_score_ = math.nan if v is None else float(v)
        est.history_ = []
        est.model_ = est._model_from_dict(data["model"])
        return est

    @classmethod
    def from_json(cls, text: str) -> Ranker:
        return Ranker.from_dict(json.loads(text))

    @classmethod
    def load(cls, path: str | Path) -> Ranker:
        return cls.from_json(Path(path).read_text(encoding="utf-8"))

    def _model_from_dict(self, data: dict[str, Any]) -> FittedModel:
        return model_from_dict(data)

    # ---------------------------------------------------------------- truth preparation
    def _prepare(self, train: QueryDataset) -> QueryDataset:
        return train


def saved_classes() -> dict[str, type[Ranker]]:
    """The concrete estimator classes by class name: every subclass of :class:`Ranker` whose
    body does not set ``abstract = True`` (the registry :data:`ranking.estimators.ESTIMATORS`
    lists the same classes by their CLI names)."""
    out: dict[str, type[Ranker]] = {}
    todo = list(Ranker.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if not cls.__dict__.get("abstract", False):
            out[cls.__name__] = cls
    return out


class TopKTraining:
    """Mixin: train on top-k truth (κ-labels), converting graded data per paper §6.3."""

    k: int
    seed: int

    def _prepare(self, train: QueryDataset) -> QueryDataset:
        return train.to_topk(self.k, seed=self.seed)


class TotalOrderTraining:
    """Mixin: train on a total order (seeded random tie-break of the labels)."""

    seed: int

    def _prepare(self, train: QueryDataset) -> QueryDataset:
        return train if train.rank is not None else train.with_total_order(self.seed)


class LossRanker(Ranker):
    """Shared fit of the loss-minimising rankers: prepare truth, build the loss, run a solver.

    Subclasses provide ``_new_model``, ``_loss_params`` and ``_solve`` (the training loop of
    :mod:`ranking.learners.optim` with their own hyperparameters).
    """

    abstract = True

    _loss: ClassVar[str] = ""
    batch_queries: int | None

    def _loss_params(self) -> dict[str, Any]:
        return {}

    def _extra_loss_params(self, data: QueryDataset, model: Model) -> dict[str, Any]:
        return {}

    def _new_model(self, d: int) -> Model:
        raise NotImplementedError

    def _solve(
        self,
        model: Model,
        loss: Callable[..., Any],
        batches: Any,
        valid_fn: Callable[[Model], float] | None,
        progress: Callable[[int, int], None] | None,
    ) -> TrainResult:
        raise NotImplementedError

    def fit(
        self,
        train: QueryDataset,
        valid: QueryDataset | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> LossRanker:
        data = self._prepare(train)
        model = self._new_model(data.n_features)
        params = {**self._loss_params(), **self._extra_loss_params(data, model)}
        loss = partial(get_loss(self._loss), **params)
        batches = make_batches(data, self.batch_queries, self.seed)
        vfn = self._valid_fn(valid)
        valid_model_fn = None if vfn is None or valid is None else (lambda m: vfn(m.score(valid.X)))
        result = self._solve(model, loss, batches, valid_model_fn, progress)
        self.model_ = model
        self.n_features_in_ = data.n_features
        self.best_iteration_ = result.best_epoch
        self.best_valid_score_ = result.best_valid
        self.history_ = result.history
        return self
