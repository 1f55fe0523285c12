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

from ranking.estimators.base import Ranker, metric_values
from ranking.estimators.boosted import AdaRank, FocusedBoost, RankBoost
from ranking.estimators.gradient import (
    FocusedNet,
    ListMLE,
    ListNet,
    PListMLE,
    RankNet,
    TopKListMLE,
    WListMLE,
)
from ranking.estimators.registry import ESTIMATORS
from ranking.estimators.svm import SVMMAP, FocusedSVM, RankSVM

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
