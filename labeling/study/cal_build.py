"""One build of continuous active learning with one budget over the campaign: what the service
pools when a ``cal`` pool's allocation is ``campaign`` (docs/campaigns.md#pools-in-the-service).

:func:`labeling.study.cal_pool.cal_campaign_order` simulates campaign-wide CAL with the qrels as
the assessor; the service has no assessor at hand, only the labels the finished tasks gave so
far. A **build** is one batch of CAL (Cormack, Grossman, "Evaluation of machine-learning
protocols for technology-assisted review in electronic discovery", SIGIR 2014): one logistic
regression (:func:`labeling.study.cal_pool.fit_logistic`) over every query's pooled documents —
the rows of :func:`labeling.study.cal_pool.pool_matrix` and the query's state as in
``cal_campaign_order``: its rate of relevant documents ``r = (1 + rel)/(2 + judged)``, the
rate's log-odds ``ln(r/(1 − r))`` and the share of its pool judged — is fitted on the labels
known, then the build keeps every judged pooled document and adds the unjudged documents of
highest predicted probability **over all queries** until the pool holds ``budget`` documents in
total (ties: the earlier query, then the fused order). The next build, after those picks are
judged, re-fits the model and tops the pool up: CAL's next batch.

The query's state:

* **for training** — the state when a judged document was picked is unknown to the service (the
  order in which tasks judged them is not CAL's), so a judged document's row carries its query's
  *leave-one-out* state, its own label removed: rate ``(1 + rel − y)/(2 + judged − 1)`` and share
  ``(judged − 1)/size``, with ``y`` its label and ``size`` the query's pool;
* **for prediction** — the query's current state, from all its labels.

Within a build the state stays fixed: the build does not guess the labels of its own picks, so
it cannot update a query's state as it picks (a build is one batch; the next one sees the
judgments). Without a model (the labels lack a relevant or a non-relevant document) the build
follows the seed: every query's first fused document, then the queries in turn in fused order
(the second document of every query, then the third, ...).

Only the labels of judged documents are read: ``judged`` maps a query's judged documents to
their relevance, and a document it lacks is unjudged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from labeling.errors import ConfigError
from labeling.study.cal_pool import CAL_L2, DocumentFeatures, fit_logistic, pool_matrix
from labeling.study.campaign_pools import AdaptivePooler, PooledDocument, Rankings

__all__ = ["CampaignBuild", "cal_campaign_build", "query_state"]


@dataclass(frozen=True, slots=True)
class CampaignBuild:
    """What one build pools. ``picks``: per query (every query with a pooled document), its
    judged pooled documents (in fused order), then its new picks in pick order; ``order``: the
    new picks over the campaign, (query, document) in pick order; ``judged``: the judged pooled
    documents kept (they count toward the budget); ``fitted``: whether a model chose (else the
    seed order)."""

    picks: dict[str, tuple[str, ...]]
    order: tuple[tuple[str, str], ...]
    judged: int
    fitted: bool

    @property
    def total(self) -> int:
        """Documents in the pool: the judged ones and the new picks."""
        return self.judged + len(self.order)


def query_state(relevant: np.ndarray, judged: np.ndarray, size: np.ndarray) -> np.ndarray:
    """The state columns (module docstring) of queries with ``relevant`` of ``judged`` judged
    documents relevant and ``size`` pooled documents: rate, its log-odds, share judged."""
    rate = (1.0 + relevant) / (2.0 + judged)
    return np.column_stack([rate, np.log(rate / (1.0 - rate)), judged / size])


def _fused(rankings: Rankings, depth: int | None) -> list[PooledDocument]:
    pool = AdaptivePooler(rankings, depth).pool()
    return sorted(pool.values(), key=lambda d: (-d.fused, d.best_rank, d.doc_id))


def cal_campaign_build(
    rankings: Mapping[str, Rankings],
    features: Mapping[str, DocumentFeatures],
    judged: Mapping[str, Mapping[str, bool]],
    budget: int,
    *,
    depth: int | None = None,
    l2: float = CAL_L2,
) -> CampaignBuild:
    """One build of campaign-wide CAL (module docstring). ``rankings``: query → its runs (the
    query order breaks ties), each run cut to ``depth`` (None: whole); ``features``: query →
    document → vector, for every pooled document; ``judged``: query → document → relevant,
    the labels known (only pooled documents count); ``budget``: documents in the pool in total,
    judged ones included (fewer than the judged: they are kept and nothing is picked).
    ConfigError for a negative budget, a missing vector or vectors of different lengths."""
    if budget < 0:
        raise ConfigError(f"budget must be ≥ 0, got {budget}")
    queries = list(rankings)
    blocks: list[np.ndarray] = []
    docs: list[str] = []
    owner: list[int] = []
    place: list[int] = []
    known: list[bool] = []
    labels: list[float] = []
    for i, q in enumerate(queries):
        pool = _fused(rankings[q], depth)
        if not pool:
            continue
        cut = max((len(r) for r in rankings[q].values()), default=1)
        blocks.append(pool_matrix(pool, features.get(q, {}), len(rankings[q]), depth or cut))
        labelled = judged.get(q, {})
        for j, d in enumerate(pool):
            seen = d.doc_id in labelled  # an unjudged document's label is never read
            docs.append(d.doc_id)
            owner.append(i)
            place.append(j)
            known.append(seen)
            labels.append(float(bool(labelled[d.doc_id])) if seen else 0.0)
    if len({b.shape[1] for b in blocks}) > 1:
        raise ConfigError("the feature vectors of the queries differ in length")
    who = np.array(owner, dtype=np.intp)
    seen_rows = np.array(known, dtype=bool)
    y_all = np.array(labels)
    scores, fitted = -np.array(place, dtype=np.float64), False  # the seed: queries in turn
    y = y_all[seen_rows]
    if 0.0 < y.sum() < y.size:
        matrix = np.vstack(blocks)
        nq = len(queries)
        size = np.bincount(who, minlength=nq).astype(np.float64)[who]
        count = np.bincount(who, weights=seen_rows.astype(np.float64), minlength=nq)[who]
        rel = np.bincount(who, weights=y_all, minlength=nq)[who]
        # training rows: the query's state with the row's own label left out
        at = seen_rows
        left_out = query_state(rel[at] - y, count[at] - 1.0, size[at])
        w = fit_logistic(np.hstack([matrix[at], left_out]), y, l2)
        scores = np.hstack([matrix, query_state(rel, count, size)]) @ w[:-1] + w[-1]
        fitted = True
    open_rows = np.flatnonzero(~seen_rows)
    # a stable sort over rows in query order, then fused order: ties go to the earlier query
    ranked = open_rows[np.argsort(-scores[open_rows], kind="stable")]
    taken = ranked[: max(budget - int(seen_rows.sum()), 0)]
    order = tuple((queries[who[r]], docs[r]) for r in taken)
    picks: dict[str, list[str]] = {}
    for r in np.flatnonzero(seen_rows):
        picks.setdefault(queries[who[r]], []).append(docs[r])
    for q, d in order:
        picks.setdefault(q, []).append(d)
    by_query = {q: tuple(picks.get(q, ())) for q in dict.fromkeys(queries[i] for i in owner)}
    return CampaignBuild(by_query, order, int(seen_rows.sum()), fitted)
