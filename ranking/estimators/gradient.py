"""The gradient rankers: a loss of :mod:`ranking.losses` minimised by Adam or SGD with early
stopping (ListMLE and its variants, RankNet, ListNet, FocusedNet)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from ranking.data.dataset import QueryDataset
from ranking.estimators.base import LossRanker, TopKTraining, TotalOrderTraining
from ranking.learners.models import LinearModel, MLPModel, Model
from ranking.learners.optim import TrainResult, train_gradient
from ranking.losses import focused_parts


class GradientRanker(LossRanker):
    """A loss of :mod:`ranking.losses` minimised by Adam/SGD with early stopping."""

    abstract = True

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


class ListMLE(TotalOrderTraining, GradientRanker):
    """ListMLE (Xia et al. 2008)."""

    _loss = "listmle"


class TopKListMLE(TopKTraining, GradientRanker):
    """Top-k ListMLE (Xia et al. 2009), the paper's state-of-the-art top-k baseline."""

    _loss = "topk_listmle"
    _params = ("k", *GradientRanker._params)

    def __init__(self, k: int = 10, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.k = k

    def _loss_params(self) -> dict[str, Any]:
        return {"k": self.k}


class PListMLE(TotalOrderTraining, GradientRanker):
    """Position-aware p-ListMLE (Lan et al. 2014) with the normalised α by default."""

    _loss = "p_listmle"
    _params = ("alpha", "k", *GradientRanker._params)

    def __init__(self, alpha: str = "normalized", k: int = 10, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alpha = alpha
        self.k = k

    def _loss_params(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "k": self.k}


class WListMLE(TotalOrderTraining, GradientRanker):
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


class FocusedNet(TopKTraining, GradientRanker):
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
