"""The SVM rankers: a hinge loss minimised by the Pegasos solver (RankSVM, SVM-MAP,
FocusedSVM)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from ranking.estimators.base import LossRanker, TopKTraining
from ranking.learners.models import LinearModel, Model
from ranking.learners.optim import TrainResult, pegasos


class SVMRanker(LossRanker):
    """A hinge loss minimised by the Pegasos solver; linear scorer."""

    abstract = True

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


class FocusedSVM(TopKTraining, SVMRanker):
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
