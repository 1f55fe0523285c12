"""One judging budget for a whole campaign: the adaptive methods choose the query as well as
the run (docs/campaigns.md#allocation).

With a budget per query (:func:`labeling.study.campaign_pools.simulate_pooling`) every query gets
the same share of its pool, whether its runs find relevant documents or not. Over a campaign
the arms are the (query, run) pairs, so judging moves to the queries whose runs keep giving
relevant documents — the setting of the bandit papers' cumulative-relevance curves
(Losada, Parapar, Barreiro, IP&M 2017) and of Move-to-Front's global variant (Cormack,
Palmer, Clarke, SIGIR 1998):

* ``maxmean``: the next document comes from the (query, run) with the highest posterior mean
  ``(1 + rel)/(2 + rel + nonrel)`` over all queries; ties go to the earlier query (in the runs'
  query order), then to the earlier run;
* ``mtf``: after a relevant document the same (query, run) goes on; otherwise the (query, run)
  of highest priority over all queries (ties: earlier query, then earlier run); each query
  keeps its own priorities, so a run's failures on one query do not count on another;
* ``hedge``: the queries are the arms: the next document comes from the query whose
  discounted rate of relevant documents (:meth:`labeling.study.campaign_pools.Hedge.best_value`,
  the non-stationary MaxMean of the bandit paper with queries as arms) is highest (ties: the
  earlier query), and within it from Hedge's weighted runs; a query that gives nothing
  relevant soon yields to the others, one that keeps giving is judged deeper;
* ``cal`` (continuous active learning) needs the documents' feature vectors: its campaign
  order, one model for all queries, is :func:`labeling.study.cal_pool.cal_campaign_order`;
* ``depth`` (not adaptive): the queries take turns in the order of their fused pools, each query's
  next document when its share of judged documents is the lowest — the same judgments as a
  budget per query.

:func:`campaign_order` gives the whole sequence (until every pool is judged); a budget of b
judgments is its first b. The qrels play the assessor as in :func:`simulate_pooling`.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass

from labeling.study.campaign_pools import (
    AdaptivePooler,
    Method,
    MoveToFront,
    Runs,
    make_pooler,
)

__all__ = ["CampaignOrder", "campaign_order"]


@dataclass(frozen=True)
class CampaignOrder:
    """The judging sequence of a campaign: ``order`` holds (query, document, relevant);
    ``pool_size`` and ``relevant_in_pool`` the depth-k pool of each query."""

    method: Method
    order: tuple[tuple[str, str, bool], ...]
    pool_size: Mapping[str, int]
    relevant_in_pool: Mapping[str, int]

    def prefix(self, budget: int) -> dict[str, list[tuple[str, bool]]]:
        """The first ``budget`` judgments, per query (every query present)."""
        out: dict[str, list[tuple[str, bool]]] = {q: [] for q in self.pool_size}
        for q, doc, relevant in self.order[:budget]:
            out[q].append((doc, relevant))
        return out


def _value(pooler: AdaptivePooler, method: Method, judged: int, size: int) -> float | None:
    if method == "depth":
        return None if judged >= size else -judged / size
    return pooler.best_value()


def campaign_order(
    runs: Runs,
    qrels: Mapping[str, Mapping[str, float]],
    method: Method,
    *,
    depth: int = 100,
    relevant_from: float = 1.0,
) -> CampaignOrder:
    """The campaign's judging sequence (module docstring) over the queries the runs and the
    qrels share; a document absent from the qrels is not relevant."""
    queries = list(dict.fromkeys(q for per_query in runs.values() for q in per_query))
    queries = [q for q in queries if q in qrels]
    poolers = [
        make_pooler(method, {r: per_query.get(q, ()) for r, per_query in runs.items()}, depth)
        for q in queries
    ]
    sizes = [len(p.pool()) for p in poolers]
    judged = [0] * len(queries)
    heap: list[tuple[float, int]] = []
    for i, pooler in enumerate(poolers):
        value = _value(pooler, method, 0, sizes[i])
        if value is not None:
            heap.append((-value, i))
    heapq.heapify(heap)
    order: list[tuple[str, str, bool]] = []
    current: int | None = None
    while current is not None or heap:
        if current is None:
            _, current = heapq.heappop(heap)
        i, pooler = current, poolers[current]
        doc = pooler.next_document()
        assert doc is not None  # only queries with a document left are queued
        relevant = float(qrels[queries[i]].get(doc, 0.0)) >= relevant_from
        pooler.record(doc, relevant)
        judged[i] += 1
        order.append((queries[i], doc, relevant))
        if isinstance(pooler, MoveToFront) and relevant and pooler.staying():
            continue  # Move-to-Front stays on a run while it gives relevant documents
        current = None
        value = _value(pooler, method, judged[i], sizes[i])
        if value is not None:
            heapq.heappush(heap, (-value, i))
    grades = [qrels[q] for q in queries]
    return CampaignOrder(
        method,
        tuple(order),
        dict(zip(queries, sizes, strict=True)),
        {
            q: sum(1 for d in p.pool() if float(g.get(d, 0.0)) >= relevant_from)
            for q, p, g in zip(queries, poolers, grades, strict=True)
        },
    )
