"""LightGBM lambdarank as a baseline with the estimators' interface (the optional ``bench``
extra); not saved as JSON and not in :data:`ranking.estimators.ESTIMATORS`."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ranking.data.dataset import QueryDataset
from ranking.estimators.base import metric_values

__all__ = ["LightGBMRanker"]


class LightGBMRanker:
    """LightGBM lambdarank (Burges 2010, "From RankNet to LambdaRank to LambdaMART"; Ke et al.
    2017, "LightGBM") with the estimators' interface: ``fit(train, valid, progress)``,
    ``predict``, ``get_params``, ``best_iteration_``, ``best_valid_score_``.

    The number of trees is early-stopped on validation (LightGBM's NDCG@10, ``early_stopping``
    rounds without improvement); ``best_valid_score_`` is this project's ``metric`` on the
    validation queries at that iteration, as for every other estimator. Labels (grades or
    κ-labels) are the integer relevance levels lambdarank expects. A baseline only: it is not
    in :data:`ranking.estimators.ESTIMATORS` and does not save as JSON.
    """

    _params = (
        "n_estimators",
        "learning_rate",
        "num_leaves",
        "min_child_samples",
        "early_stopping",
        "n_jobs",
        "metric",
        "seed",
    )

    def __init__(
        self,
        *,
        n_estimators: int = 1000,
        learning_rate: float = 0.05,
        num_leaves: int = 31,
        min_child_samples: int = 20,
        early_stopping: int = 50,
        n_jobs: int = 1,
        metric: str = "ndcg@10",
        seed: int = 0,
    ) -> None:
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.early_stopping = early_stopping
        self.n_jobs = n_jobs
        self.metric = metric
        self.seed = seed

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._params}

    def fit(
        self,
        train: QueryDataset,
        valid: QueryDataset | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> LightGBMRanker:
        import lightgbm as lgb

        callbacks: list[Any] = []
        if progress is not None:
            callbacks.append(lambda env: progress(env.iteration + 1, env.end_iteration))
        kwargs: dict[str, Any] = {}
        if valid is not None:
            y_valid = valid.labels.astype(np.int64)
            # LightGBM 4.6 takes eval_X/eval_y and deprecates eval_set; older ones have only it.
            if "eval_X" in inspect.signature(lgb.LGBMRanker.fit).parameters:
                kwargs = {"eval_X": (valid.X,), "eval_y": (y_valid,)}
            else:
                kwargs = {"eval_set": [(valid.X, y_valid)]}
            kwargs |= {"eval_group": [valid.sizes], "eval_at": [10]}
            callbacks.append(lgb.early_stopping(self.early_stopping, verbose=False))
        self.model_ = lgb.LGBMRanker(
            objective="lambdarank",
            n_estimators=self.n_estimators,
            learning_rate=self.learning_rate,
            num_leaves=self.num_leaves,
            min_child_samples=self.min_child_samples,
            random_state=self.seed,
            n_jobs=self.n_jobs,
            verbose=-1,
        )
        self.model_.fit(
            train.X,
            train.labels.astype(np.int64),
            group=train.sizes,
            callbacks=callbacks,
            **kwargs,
        )
        best = int(self.model_.best_iteration_ or 0)
        self.best_iteration_ = best if best > 0 else self.n_estimators
        self.best_valid_score_ = math.nan if valid is None else self.score(valid)
        return self

    def predict(self, data: QueryDataset) -> np.ndarray:
        return np.asarray(
            self.model_.predict(data.X, num_iteration=self.best_iteration_), dtype=np.float64
        )

    def score(self, data: QueryDataset, metric: str | None = None) -> float:
        return float(np.mean(metric_values(metric or self.metric, data, self.predict(data))))
