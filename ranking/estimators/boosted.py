"""The boosting rankers (RankBoost, AdaRank, FocusedBoost) over the algorithms of
:mod:`ranking.learners.boosting`; the number of rounds is chosen on validation."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

from ranking.data.dataset import QueryDataset
from ranking.estimators.base import FittedModel, Ranker, TopKTraining
from ranking.learners.boosting import (
    BoostModel,
    BoostResult,
    WeakRankers,
    adarank,
    focusedboost,
    rankboost,
)


class BoostRanker(Ranker):
    """Base of the boosting estimators; the number of rounds is chosen on validation."""

    abstract = True

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


class FocusedBoost(TopKTraining, BoostRanker):
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
