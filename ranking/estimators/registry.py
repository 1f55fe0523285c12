"""The estimators by name (the names of the CLI and the training API)."""

from __future__ import annotations

from ranking.estimators.base import Ranker
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
from ranking.estimators.svm import SVMMAP, FocusedSVM, RankSVM

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
