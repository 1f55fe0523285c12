"""Ranking estimators with scikit-learn conventions.

``__init__`` only stores hyperparameters; ``fit(train, valid=None) -> self`` learns attributes
whose names end in ``_`` (``model_``, ``n_features_in_``, ``best_iteration_``,
``best_valid_score_``, ``history_``); ``predict(X)`` returns one score per row;
``score(data)`` is the mean of the estimator's ``metric`` over the queries of ``data``.
Fitted models save to and load from JSON (weights plus hyperparameters, never pickle)::

    from ranking.estimators import FocusedNet, Ranker
    model = FocusedNet(beta=0.5, k=10).fit(train, valid=valid)
    scores = model.predict(test)               # (N,)
    model.score(test)                          # mean κ-NDCG@10 on κ-labelled data
    Ranker.from_json(model.to_json())          # same predictions

Which truth each estimator trains on (Niu et al. 2012 §6.3):

- top-k models (FocusedNet, FocusedSVM, FocusedBoost, TopKListMLE) need top-k truth; given
  graded data they sample a seeded random total order consistent with the grades and keep its
  top k (``QueryDataset.to_topk``);
- ListMLE-style models need a total order; on graded data a seeded random one is sampled;
- traditional models (RankNet, ListNet, RankSVM, SVM-MAP, RankBoost, AdaRank) use the labels
  as they are: grades, or κ-labels for top-k truth.

Every estimator is deterministic given ``seed``. ``fit(train, valid, progress)`` calls
``progress(i, total)`` after every epoch, solver iteration or boosting round; an exception
raised there aborts the fit, which is how a training job is cancelled or stopped at its time
limit between two iterations.
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
from ranking.boosting import (
    BoostModel,
    BoostResult,
    WeakRankers,
    adarank,
    focusedboost,
    rankboost,
)
from ranking.dataset import QueryDataset
from ranking.losses import focused_parts, get_loss
from ranking.models import LinearModel, MLPModel, Model, model_from_dict
from ranking.optim import TrainResult, make_batches, pegasos, train_gradient

__all__ = [
    "ESTIMATORS",
    "SVMMAP",
    "AdaRank",
    "FocusedBoost",
    "FocusedNet",
    "FocusedSVM",
    "ListMLE",
    "ListNet",
    "PListMLE",
    "RankBoost",
    "RankNet",
    "RankSVM",
    "Ranker",
    "TopKListMLE",
    "WListMLE",
    "metric_values",
]

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
    """What a fitted estimator keeps in ``model_``: a :class:`~ranking.models.Model` (gradient
    and SVM rankers) or a :class:`~ranking.boosting.BoostModel`."""

    def score(self, X: np.ndarray) -> np.ndarray: ...

    def to_dict(self) -> dict[str, Any]: ...


class Ranker:
    """Base class: hyperparameter handling, predict/score and JSON persistence."""

    _params: ClassVar[tuple[str, ...]] = ("metric", "seed")
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
        cls = next((c for c in ESTIMATORS.values() if c.__name__ == name), None)
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


class _TopKTruth:
    """Mixin: train on top-k truth (κ-labels), converting graded data per paper §6.3."""

    k: int
    seed: int

    def _prepare(self, train: QueryDataset) -> QueryDataset:
        return train.to_topk(self.k, seed=self.seed)


class _TotalOrder:
    """Mixin: train on a total order (seeded random tie-break of the labels)."""

    seed: int

    def _prepare(self, train: QueryDataset) -> QueryDataset:
        return train if train.rank is not None else train.with_total_order(self.seed)


# =============================================================================== iterative
class _LossRanker(Ranker):
    """Shared fit of the loss-minimising rankers: prepare truth, build the loss, run a solver.

    Subclasses provide ``_new_model``, ``_loss_params`` and ``_solve`` (the training loop of
    :mod:`ranking.optim` with their own hyperparameters).
    """

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
    ) -> _LossRanker:
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


# =============================================================================== gradient
class GradientRanker(_LossRanker):
    """A loss of :mod:`ranking.losses` minimised by Adam/SGD with early stopping."""

    _params: ClassVar[tuple[str, ...]] = (
        "model",
        "hidden",
        "optimizer",
        "lr",
        "epochs",
        "batch_queries",
        "l2",
        "eval_every",
        "patience",
        "metric",
        "seed",
    )

    def __init__(
        self,
        *,
        model: str = "linear",
        hidden: int = 16,
        optimizer: str = "adam",
        lr: float = 0.05,
        epochs: int = 300,
        batch_queries: int | None = None,
        l2: float = 0.0,
        eval_every: int = 5,
        patience: int = 4,
        metric: str = "ndcg@10",
        seed: int = 0,
    ) -> None:
        self.model = model
        self.hidden = hidden
        self.optimizer = optimizer
        self.lr = lr
        self.epochs = epochs
        self.batch_queries = batch_queries
        self.l2 = l2
        self.eval_every = eval_every
        self.patience = patience
        self.metric = metric
        self.seed = seed

    def _new_model(self, d: int) -> Model:
        if self.model == "linear":
            return LinearModel(d)
        if self.model == "mlp":
            return MLPModel(d, self.hidden, seed=self.seed)
        raise ValueError(f"model must be 'linear' or 'mlp', got {self.model!r}")

    def _solve(
        self,
        model: Model,
        loss: Callable[..., Any],
        batches: Any,
        valid_fn: Callable[[Model], float] | None,
        progress: Callable[[int, int], None] | None,
    ) -> TrainResult:
        return train_gradient(
            model,
            loss,
            batches,
            optimizer=self.optimizer,
            lr=self.lr,
            epochs=self.epochs,
            l2=self.l2,
            valid_fn=valid_fn,
            eval_every=self.eval_every,
            patience=self.patience,
            seed=self.seed,
            progress=progress,
        )


class ListMLE(_TotalOrder, GradientRanker):
    """ListMLE (Xia et al. 2008)."""

    _loss = "listmle"


class TopKListMLE(_TopKTruth, GradientRanker):
    """Top-k ListMLE (Xia et al. 2009), the paper's state-of-the-art top-k baseline."""

    _loss = "topk_listmle"
    _params = ("k", *GradientRanker._params)

    def __init__(self, k: int = 10, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.k = k

    def _loss_params(self) -> dict[str, Any]:
        return {"k": self.k}


class PListMLE(_TotalOrder, GradientRanker):
    """Position-aware p-ListMLE (Lan et al. 2014) with the normalised α by default."""

    _loss = "p_listmle"
    _params = ("alpha", "k", *GradientRanker._params)

    def __init__(self, alpha: str = "normalized", k: int = 10, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alpha = alpha
        self.k = k

    def _loss_params(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "k": self.k}


class WListMLE(_TotalOrder, GradientRanker):
    """W-ListMLE (Chen et al. 2009): ListMLE weighted by gain × discount."""

    _loss = "w_listmle"
    _params = ("cutoff", *GradientRanker._params)

    def __init__(self, cutoff: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cutoff = cutoff

    def _loss_params(self) -> dict[str, Any]:
        return {"cutoff": self.cutoff}


class RankNet(GradientRanker):
    """RankNet (Burges et al. 2005) over all pairs with different labels (mean per query)."""

    _loss = "ranknet"


class ListNet(GradientRanker):
    """Top-one ListNet (Cao et al. 2007)."""

    _loss = "listnet"


class FocusedNet(_TopKTruth, GradientRanker):
    """FocusedNet = β·ListNet(T) + (1 − β)·RankNet(T × F) (Niu et al. 2012 §3.2.2)."""

    _loss = "focused_net"
    _params = ("beta", "k", "normalization", "list_form", *GradientRanker._params)

    def __init__(
        self,
        beta: float = 0.5,
        k: int = 10,
        normalization: str = "mean",
        list_form: str = "top_one",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.beta = beta
        self.k = k
        self.normalization = normalization
        self.list_form = list_form

    def _loss_params(self) -> dict[str, Any]:
        return {"beta": self.beta, "normalization": self.normalization, "list_form": self.list_form}

    def _extra_loss_params(self, data: QueryDataset, model: Model) -> dict[str, Any]:
        if self.normalization != "init":
            return {}
        # Scale each part by its mean value at the initial model (docs/ranking.md#normalisation).
        t = data.target()
        s = np.zeros(t.shape)
        s[t.mask] = model.score(data.X)
        lst, _, pair, _ = focused_parts(s, t, family="net", list_form=self.list_form)
        return {
            "list_scale": max(float(lst.mean()), 1e-12),
            "pair_scale": max(float(pair.mean()), 1e-12),
        }


# =============================================================================== SVM
class SVMRanker(_LossRanker):
    """A hinge loss minimised by the Pegasos solver; linear scorer."""

    _params: ClassVar[tuple[str, ...]] = (
        "C",
        "iterations",
        "batch_queries",
        "eval_every",
        "patience",
        "metric",
        "seed",
    )

    def __init__(
        self,
        *,
        C: float = 1.0,
        iterations: int = 300,
        batch_queries: int | None = None,
        eval_every: int = 10,
        patience: int = 5,
        metric: str = "ndcg@10",
        seed: int = 0,
    ) -> None:
        self.C = C
        self.iterations = iterations
        self.batch_queries = batch_queries
        self.eval_every = eval_every
        self.patience = patience
        self.metric = metric
        self.seed = seed

    def _new_model(self, d: int) -> Model:
        return LinearModel(d)

    def _solve(
        self,
        model: Model,
        loss: Callable[..., Any],
        batches: Any,
        valid_fn: Callable[[Model], float] | None,
        progress: Callable[[int, int], None] | None,
    ) -> TrainResult:
        assert isinstance(model, LinearModel)  # Pegasos is a linear SVM solver
        return pegasos(
            model,
            loss,
            batches,
            C=self.C,
            iterations=self.iterations,
            valid_fn=valid_fn,
            eval_every=self.eval_every,
            patience=self.patience,
            seed=self.seed,
            progress=progress,
        )


class RankSVM(SVMRanker):
    """RankSVM (Herbrich 2000; Joachims 2002): pair hinge over pairs with different labels."""

    _loss = "ranksvm"


class SVMMAP(SVMRanker):
    """SVM-MAP (Yue et al. 2007): structural hinge on 1 − AP, relevance = label > 0."""

    _loss = "svm_map"


class FocusedSVM(_TopKTruth, SVMRanker):
    """FocusedSVM option A: β·NDCG structural hinge on T + (1 − β)·RankSVM on T × F."""

    _loss = "focused_svm"
    _params = ("beta", "k", "normalization", *SVMRanker._params)

    def __init__(
        self, beta: float = 0.5, k: int = 10, normalization: str = "mean", **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.beta = beta
        self.k = k
        self.normalization = normalization

    def _loss_params(self) -> dict[str, Any]:
        return {"beta": self.beta, "normalization": self.normalization}


# =============================================================================== boosting
class BoostRanker(Ranker):
    """Base of the boosting estimators; the number of rounds is chosen on validation."""

    _params: ClassVar[tuple[str, ...]] = (
        "n_rounds",
        "weak",
        "n_thresholds",
        "scale",
        "forbid_repeat",
        "metric",
        "seed",
    )
    _default_weak: ClassVar[str] = "feature"

    def __init__(
        self,
        *,
        n_rounds: int = 100,
        weak: str | None = None,
        n_thresholds: int = 16,
        scale: bool = True,
        forbid_repeat: bool = True,
        metric: str = "ndcg@10",
        seed: int = 0,
    ) -> None:
        self.n_rounds = n_rounds
        self.weak = weak or self._default_weak
        self.n_thresholds = n_thresholds
        self.scale = scale
        self.forbid_repeat = forbid_repeat
        self.metric = metric
        self.seed = seed

    def _run(self, data: QueryDataset, weak: WeakRankers, **kw: Any) -> BoostResult:
        raise NotImplementedError

    def fit(
        self,
        train: QueryDataset,
        valid: QueryDataset | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> BoostRanker:
        data = self._prepare(train)
        weak = WeakRankers.build(
            data.X, self.weak, n_thresholds=self.n_thresholds, scale=self.scale
        )
        vfn = self._valid_fn(valid)
        result = self._run(
            data,
            weak,
            valid_X=None if valid is None else valid.X,
            valid_fn=vfn,
            progress=progress,
        )
        best = result.best_rounds()
        self.model_ = result.model.truncate(best)
        self.n_features_in_ = data.n_features
        self.best_iteration_ = best
        self.best_valid_score_ = float(result.valid[best - 1]) if result.valid else math.nan
        self.history_ = result.history
        return self

    def _model_from_dict(self, data: dict[str, Any]) -> FittedModel:
        return BoostModel.from_dict(data)


class RankBoost(BoostRanker):
    """RankBoost (Freund et al. 2003) with threshold weak rankers."""

    _default_weak = "threshold"

    def _run(self, data: QueryDataset, weak: WeakRankers, **kw: Any) -> BoostResult:
        return rankboost(data, weak, self.n_rounds, forbid_repeat=self.forbid_repeat, **kw)


class AdaRank(BoostRanker):
    """AdaRank (Xu & Li 2007) with feature weak rankers and E = NDCG@at (κ-NDCG on κ-labels)."""

    _params = ("at", *BoostRanker._params)

    def __init__(self, at: int = 10, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.at = at

    def _run(self, data: QueryDataset, weak: WeakRankers, **kw: Any) -> BoostResult:
        return adarank(
            data, weak, self.n_rounds, at=self.at, forbid_repeat=self.forbid_repeat, **kw
        )


class FocusedBoost(_TopKTruth, BoostRanker):
    """FocusedBoost (docs/ranking.md#focusedrank): AdaRank on T mixed with RankBoost on T × F."""

    _params = ("beta", "k", *BoostRanker._params)

    def __init__(self, beta: float = 0.5, k: int = 10, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.beta = beta
        self.k = k

    def _run(self, data: QueryDataset, weak: WeakRankers, **kw: Any) -> BoostResult:
        return focusedboost(
            data,
            weak,
            self.n_rounds,
            beta=self.beta,
            k=self.k,
            forbid_repeat=self.forbid_repeat,
            **kw,
        )


ESTIMATORS: dict[str, type[Ranker]] = {
    "focusednet": FocusedNet,
    "focusedsvm": FocusedSVM,
    "focusedboost": FocusedBoost,
    "topk-listmle": TopKListMLE,
    "listmle": ListMLE,
    "plistmle": PListMLE,
    "wlistmle": WListMLE,
    "ranknet": RankNet,
    "listnet": ListNet,
    "ranksvm": RankSVM,
    "svmmap": SVMMAP,
    "rankboost": RankBoost,
    "adarank": AdaRank,
}
