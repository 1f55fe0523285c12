"""Pools from many runs: depth-k union, Move-to-Front, MaxMean and Hedge orders, simulation
(continuous active learning, ``cal``, is :mod:`labeling.study.cal_pool`: it needs features).

A *run* ranks documents per query, best first; ``rankings`` below are one query's runs,
``{run name: documents best first}``, in a fixed run order (the order breaks ties). Every run
is first cut to its top ``depth`` documents, a document repeated within a run keeping its first
rank. The *depth-k pool* of a query is the union of its runs' cuts (docs/campaigns.md#pools).

* :func:`depth_pool`: the union, each document with the runs that retrieved it and at which
  rank (1-based), ordered by reciprocal rank fusion (Cormack, Clarke, Büttcher, "Reciprocal
  rank fusion outperforms Condorcet and individual rank learning methods", SIGIR 2009):
  ``fused(d) = Σ_runs 1/(k + rank)``, k = 60; ties by best rank, then doc id. That order is
  the prior a judging session can start from.
* :class:`MoveToFront` (Cormack, Palmer, Clarke, "Efficient construction of large test
  collections", SIGIR 1998; the per-query variant, priorities lowered by one per non-relevant
  document): every run has a priority, initially 0. The current run's documents are judged
  top-down (skipping judged ones at no cost) while they are relevant; a non-relevant one lowers
  its priority by 1 and the open run of highest priority becomes current, ties to the earlier
  run (so the runs take turns). An exhausted run leaves without a priority change.
* :class:`MaxMean` (Losada, Parapar, Barreiro, "Multi-armed bandits for adjudicating documents
  in pooling-based evaluation of information retrieval systems", IP&M 2017): each run is an
  arm with a Beta(1, 1) prior on its relevance rate; its evidence is the *judged prefix* of
  its ranking — the documents above its first unjudged one, whoever judged them — with
  ``rel`` relevant and ``nonrel`` non-relevant. The run with the highest posterior mean
  ``(1 + rel)/(2 + rel + nonrel)`` gives its first unjudged document; ties go to the earlier
  run in run order. The run order can carry a prior (e.g. runs sorted by expected quality).
* :class:`Hedge` (Aslam, Pavlu, Savell, "A unified model for metasearch, pooling, and system
  evaluation", CIKM 2003): runs are weighted experts; the unjudged document of the largest
  weighted rank value is judged next and each judgment reweights the runs.
* :class:`FusedOrder`: the depth-k pool judged in its fused order (the non-adaptive baseline).

All share a step/observe interface (:class:`AdaptivePooler`): :meth:`next_document` proposes
a document (the same until recorded), :meth:`record` takes a judgment of any document (the
proposed one or one judged elsewhere, e.g. by a finished task), so the service can drive a
campaign from finished tasks.

:func:`simulate_pooling` runs a method against existing qrels as the oracle, with a judging
budget per query: a document is relevant when its grade is ≥ ``relevant_from`` (default 1); a
document absent from the qrels is treated as non-relevant (the TREC convention for unjudged
documents) and counted in :attr:`QuerySimulation.outside_qrels`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from labeling.errors import ConfigError, InvalidAnswer

__all__ = [
    "HEDGE_BETA",
    "HEDGE_DISCOUNT",
    "METHODS",
    "RRF_K",
    "AdaptivePooler",
    "FusedOrder",
    "Hedge",
    "MaxMean",
    "Method",
    "MoveToFront",
    "PooledDocument",
    "PoolerFactory",
    "QuerySimulation",
    "Selection",
    "Simulation",
    "cut_rankings",
    "depth_pool",
    "depth_pools",
    "free_value",
    "make_pooler",
    "rank_value",
    "select_pool",
    "simulate_pooling",
]

Rankings = Mapping[str, Sequence[str]]
"""One query's runs: run name → documents best first."""
Runs = Mapping[str, Mapping[str, Sequence[str]]]
"""Many queries' runs: run name → query id → documents best first."""
Method = Literal["depth", "mtf", "maxmean", "hedge", "cal"]
METHODS: tuple[Method, ...] = ("depth", "mtf", "maxmean", "hedge", "cal")
PoolerFactory = Callable[[str, Rankings], "AdaptivePooler"]
"""Makes the pooler of one query (query id, its runs): a method that needs more than runs."""
RRF_K = 60.0
HEDGE_BETA = 0.1
HEDGE_DISCOUNT = 0.9


def cut_rankings(rankings: Rankings, depth: int | None = None) -> dict[str, tuple[str, ...]]:
    """Each run's top ``depth`` distinct documents (a repeat keeps its first rank)."""
    if depth is not None and depth < 1:
        raise ConfigError(f"depth must be ≥ 1, got {depth}")
    out: dict[str, tuple[str, ...]] = {}
    for name, ranking in rankings.items():
        distinct = tuple(dict.fromkeys(ranking))
        out[name] = distinct if depth is None else distinct[:depth]
    return out


@dataclass(frozen=True)
class PooledDocument:
    """A pooled document, the runs that retrieved it (run, 1-based rank) and its fused score."""

    doc_id: str
    hits: tuple[tuple[str, int], ...]
    fused: float

    @property
    def best_rank(self) -> int:
        return min(rank for _, rank in self.hits)


def _pooled(cut: Mapping[str, Sequence[str]], rrf_k: float) -> dict[str, PooledDocument]:
    hits: dict[str, list[tuple[str, int]]] = {}
    for name, ranking in cut.items():
        for rank, doc in enumerate(ranking, start=1):
            hits.setdefault(doc, []).append((name, rank))
    return {
        doc: PooledDocument(doc, tuple(h), sum(1.0 / (rrf_k + rank) for _, rank in h))
        for doc, h in hits.items()
    }


def depth_pool(
    rankings: Rankings, depth: int, *, rrf_k: float = RRF_K
) -> tuple[PooledDocument, ...]:
    """One query's depth-``depth`` pool, by fused score (ties: best rank, then doc id)."""
    pooled = _pooled(cut_rankings(rankings, depth), rrf_k)
    return tuple(sorted(pooled.values(), key=lambda d: (-d.fused, d.best_rank, d.doc_id)))


def _queries(runs: Runs) -> list[str]:
    return list(dict.fromkeys(q for per_query in runs.values() for q in per_query))


def _for_query(runs: Runs, query_id: str) -> dict[str, Sequence[str]]:
    return {name: per_query.get(query_id, ()) for name, per_query in runs.items()}


def depth_pools(
    runs: Runs, depth: int, *, rrf_k: float = RRF_K
) -> dict[str, tuple[PooledDocument, ...]]:
    """:func:`depth_pool` of every query any run ranks."""
    return {q: depth_pool(_for_query(runs, q), depth, rrf_k=rrf_k) for q in _queries(runs)}


class AdaptivePooler:
    """Step/observe judging order over one query's runs (subclasses choose the run).

    ``judged`` maps every recorded document to its relevance. Recording a document twice
    with a different relevance is an error; the same relevance again is a no-op.
    """

    def __init__(self, rankings: Rankings, depth: int | None = None) -> None:
        self.rankings = cut_rankings(rankings, depth)
        self.names = tuple(self.rankings)
        self.judged: dict[str, bool] = {}
        self._pointer = dict.fromkeys(self.names, 0)
        self._pending: tuple[str, str] | None = None
        self._pool: dict[str, PooledDocument] | None = None

    def pool(self) -> dict[str, PooledDocument]:
        """Every pooled document (the union of the cut runs) with its hits and fused score."""
        if self._pool is None:
            self._pool = _pooled(self.rankings, RRF_K)
        return self._pool

    @property
    def pending(self) -> str | None:
        """The proposed document not yet recorded, if any."""
        return self._pending[1] if self._pending else None

    def head(self, run: str) -> str | None:
        """``run``'s first unjudged document (None when exhausted), consuming judged ones."""
        ranking, i = self.rankings[run], self._pointer[run]
        while i < len(ranking) and ranking[i] in self.judged:
            self._consumed(run, self.judged[ranking[i]])
            i += 1
        self._pointer[run] = i
        return ranking[i] if i < len(ranking) else None

    def next_document(self) -> str | None:
        """The document to judge next, or None when every pooled document is judged."""
        if self._pending is None:
            run = self._choose()
            if run is None:
                return None
            doc = self.head(run)
            assert doc is not None  # _choose only returns runs with an unjudged document
            self._pending = (run, doc)
        return self._pending[1]

    def record(self, doc_id: str, relevant: bool) -> None:
        """Take the judgment of ``doc_id`` (proposed or not)."""
        previous = self.judged.get(doc_id)
        if previous is not None:
            if previous != relevant:
                raise InvalidAnswer(f"document {doc_id!r} was already judged {previous}")
            return
        self.judged[doc_id] = relevant
        if self._pending is not None and self._pending[1] == doc_id:
            run = self._pending[0]
            self._pending = None
            self._answered(run, relevant)

    def best_value(self) -> float | None:
        """What the method thinks of the run it would take next (None: nothing is left):
        MaxMean's posterior mean, Move-to-Front's priority, the fused score for the fused
        order. A campaign over many queries compares these (docs/campaigns.md#allocation)."""
        if self._pending is not None:
            return self._value(self._pending[0])
        run = self._choose()
        return None if run is None else self._value(run)

    def _value(self, run: str) -> float:
        raise NotImplementedError

    def _open_runs(self) -> list[str]:
        return [name for name in self.names if self.head(name) is not None]

    def _choose(self) -> str | None:
        raise NotImplementedError

    def _consumed(self, run: str, relevant: bool) -> None:
        """Hook: ``run``'s pointer passed a judged document."""

    def _answered(self, run: str, relevant: bool) -> None:
        """Hook: the document proposed from ``run`` was judged."""


class FusedOrder(AdaptivePooler):
    """The depth pool in fused (RRF) order; judgments do not change the order."""

    def __init__(self, rankings: Rankings, depth: int | None = None) -> None:
        super().__init__(rankings, depth)
        order = sorted(self.pool().values(), key=lambda d: (-d.fused, d.best_rank, d.doc_id))
        self._order = [d.doc_id for d in order]
        self._first_run = {d.doc_id: d.hits[0][0] for d in order}
        self._next = 0

    def next_document(self) -> str | None:
        if self._pending is None:
            while self._next < len(self._order) and self._order[self._next] in self.judged:
                self._next += 1
            if self._next == len(self._order):
                return None
            doc = self._order[self._next]
            self._pending = (self._first_run[doc], doc)
        return self._pending[1]

    def best_value(self) -> float | None:
        doc = self.next_document()
        return None if doc is None else self.pool()[doc].fused


class MoveToFront(AdaptivePooler):
    """Move-to-Front: stay on a run while it gives relevant documents (module docstring)."""

    def __init__(self, rankings: Rankings, depth: int | None = None) -> None:
        super().__init__(rankings, depth)
        self.priority = dict.fromkeys(self.names, 0)
        self.current: str | None = None

    def _choose(self) -> str | None:
        if self.current is not None and self.head(self.current) is not None:
            return self.current
        open_runs = self._open_runs()
        if not open_runs:
            self.current = None
            return None
        best = max(self.priority[r] for r in open_runs)
        self.current = next(r for r in open_runs if self.priority[r] == best)
        return self.current

    def _answered(self, run: str, relevant: bool) -> None:
        if not relevant:
            self.priority[run] -= 1
            self.current = None

    def _value(self, run: str) -> float:
        return float(self.priority[run])

    def staying(self) -> bool:
        """True while the current run gave a relevant document last and has more to give."""
        return self.current is not None and self.head(self.current) is not None


class MaxMean(AdaptivePooler):
    """MaxMean bandit: the run with the highest Beta posterior mean (module docstring)."""

    def __init__(self, rankings: Rankings, depth: int | None = None) -> None:
        super().__init__(rankings, depth)
        self.relevant = dict.fromkeys(self.names, 0)
        self.nonrelevant = dict.fromkeys(self.names, 0)

    def posterior_mean(self, run: str) -> float:
        """``(1 + rel)/(2 + rel + nonrel)`` over the run's judged prefix."""
        self.head(run)  # bring the judged prefix up to date
        return self._mean(run)

    def _value(self, run: str) -> float:
        return self._mean(run)

    def _mean(self, run: str) -> float:
        rel, non = self.relevant[run], self.nonrelevant[run]
        return (1.0 + rel) / (2.0 + rel + non)

    def _consumed(self, run: str, relevant: bool) -> None:
        if relevant:
            self.relevant[run] += 1
        else:
            self.nonrelevant[run] += 1

    def _choose(self) -> str | None:
        chosen, best = None, -1.0
        for run in self.names:  # strict > keeps the earlier run on ties
            if self.head(run) is not None and self._mean(run) > best:
                chosen, best = run, self._mean(run)
        return chosen


def rank_value(n: int, rank: int) -> float:
    """Hedge's value of rank ``rank`` in a pool of ``n``: ``ℓ(r) = ln(n/r)/ln n`` (1 when n = 1)."""
    return 1.0 if n == 1 else math.log(n / rank) / math.log(n)


def free_value(n: int, length: int) -> float:
    """The mean of :func:`rank_value` over the ranks a run of ``length`` leaves free (0: none)."""
    free = n - length
    if free <= 0 or n == 1:
        return float(free > 0)
    tail = (math.lgamma(n + 1) - math.lgamma(length + 1)) / free  # mean ln r over L+1..n
    return max(0.0, (math.log(n) - tail) / math.log(n))


class Hedge(AdaptivePooler):
    """Hedge over the runs (module docstring; Freund and Schapire's Hedge). Run s has weight
    ``w_s`` (initially equal) and gives d the value ``ℓ_s(d)``: :func:`rank_value` of its rank
    in s, or :func:`free_value` of s's length if s lacks it (the paper's ``log(N/r)``). Next:
    the unjudged d of largest ``Σ_s w_s ℓ_s(d)`` (ties: fused order). A judgment of a pooled d
    (proposed or not) charges s the loss ``ℓ_s(d)``, or ``1 − ℓ_s(d)`` if d is relevant, and
    ``w_s ← w_s · β^{loss_s}`` renormalised (β = :data:`HEDGE_BETA`). Only hits are stored:
    ``Σ_s w_s ℓ_s(d) = Σ_s w_s f_s + Σ_{(s, r) ∈ hits(d)} w_s (ℓ(r) − f_s)``, f_s the run's
    :func:`free_value`, so a step costs O(hits), not O(pool × runs). :meth:`best_value` (what
    a campaign compares, docs/campaigns.md#allocation): the query's discounted rate of relevant
    documents ``(1 + rel)/(2 + rel + nonrel)``, both counts times γ = :data:`HEDGE_DISCOUNT`
    before each judgment is added (the bandit paper's non-stationary MaxMean, queries as arms).
    """

    def __init__(
        self,
        rankings: Rankings,
        depth: int | None = None,
        *,
        beta: float = HEDGE_BETA,
        discount: float = HEDGE_DISCOUNT,
    ) -> None:
        if not 0.0 < beta < 1.0 or not 0.0 < discount <= 1.0:
            raise ConfigError(f"Hedge needs 0 < beta < 1, 0 < discount ≤ 1: {beta}, {discount}")
        super().__init__(rankings, depth)
        order = sorted(self.pool().values(), key=lambda d: (-d.fused, d.best_rank, d.doc_id))
        self._docs = [d.doc_id for d in order]
        self._row = {d: i for i, d in enumerate(self._docs)}
        self._col = {name: j for j, name in enumerate(self.names)}
        n = len(self._docs)
        self._free = np.array([free_value(n, len(r)) for r in self.rankings.values()])
        hits = [(i, self._col[s], rank_value(n, r)) for i, d in enumerate(order) for s, r in d.hits]
        self._rows = np.array([h[0] for h in hits], dtype=np.intp)
        self._cols = np.array([h[1] for h in hits], dtype=np.intp)
        self._delta = np.array([h[2] for h in hits]) - self._free[self._cols]
        self.weights = np.full(len(self.names), 1.0 / max(len(self.names), 1))
        self._open = np.ones(n, dtype=bool)
        self.beta, self.discount = beta, discount
        self.relevant_rate = (0.0, 0.0)  # discounted (relevant, non-relevant) counts

    def scores(self) -> np.ndarray:
        """``Σ_s w_s ℓ_s(d)`` of every pooled document, in fused order."""
        w = self.weights
        spread = np.bincount(self._rows, self._delta * w[self._cols], minlength=len(self._docs))
        return float(self._free @ w) + spread

    def next_document(self) -> str | None:
        if self._pending is None:
            if not self._open.any():
                return None
            scores = np.where(self._open, self.scores(), -np.inf)
            doc = self._docs[int(np.argmax(scores))]  # the first maximum: fused order breaks ties
            self._pending = (self.pool()[doc].hits[0][0], doc)
        return self._pending[1]

    def record(self, doc_id: str, relevant: bool) -> None:
        new = doc_id not in self.judged
        super().record(doc_id, relevant)
        if not new or doc_id not in self._row:
            return
        self._open[self._row[doc_id]] = False
        values = self._free.copy()
        n = len(self._docs)
        for run, rank in self.pool()[doc_id].hits:
            values[self._col[run]] = rank_value(n, rank)
        weights = self.weights * self.beta ** (1.0 - values if relevant else values)
        self.weights = weights / weights.sum()
        rel, non = self.relevant_rate
        self.relevant_rate = (self.discount * rel + relevant, self.discount * non + (not relevant))

    def best_value(self) -> float | None:
        if self.next_document() is None:
            return None
        rel, non = self.relevant_rate
        return (1.0 + rel) / (2.0 + rel + non)


def make_pooler(method: Method, rankings: Rankings, depth: int | None = None) -> AdaptivePooler:
    """A fresh pooler of ``method`` (``"depth"``: :class:`FusedOrder`, ``"hedge"``:
    :class:`Hedge` with its default β and discount) over one query's runs."""
    if method == "depth":
        return FusedOrder(rankings, depth)
    if method == "mtf":
        return MoveToFront(rankings, depth)
    if method == "maxmean":
        return MaxMean(rankings, depth)
    if method == "hedge":
        return Hedge(rankings, depth)
    if method == "cal":
        raise ConfigError("cal needs the documents' feature vectors (labeling.study.cal_pool)")
    raise ConfigError(f"unknown pooling method {method!r}; choose one of {', '.join(METHODS)}")


@dataclass(frozen=True)
class Selection:
    """One query's pool as a service builds it: ``pool``, the depth-k union in fused order;
    ``picks``, the documents the method selects in its judging order; ``known``, how many of
    the picks had a judgment already (the feedback)."""

    pool: tuple[PooledDocument, ...]
    picks: tuple[str, ...]
    known: int


def select_pool(
    rankings: Rankings,
    method: Method,
    depth: int | None,
    budget: int | None = None,
    feedback: Mapping[str, bool] | None = None,
    *,
    pooler: AdaptivePooler | None = None,
) -> Selection:
    """Run ``method`` over one query's runs until ``budget`` documents are picked (None: the
    whole depth pool), with the judgments known so far as its relevance feedback.

    A proposed document with a judgment in ``feedback`` is recorded with it; one without is
    picked and recorded as **not relevant** — TREC's convention for unjudged documents, the
    one :func:`simulate_pooling` uses for documents outside the qrels — so that the method can
    go on without an assessor: with no feedback at all MTF and MaxMean then take the runs in
    turns, and a later build that knows the picks' judgments follows the runs that gave
    relevant ones (docs/campaigns.md#pools-in-the-service). Every pick counts against the
    budget, judged before or not, so a top-k task over the picks sees every candidate.
    ``pooler``: the method's pooler over these runs, made by the caller (``cal``'s needs the
    documents' features), instead of :func:`make_pooler`'s.
    """
    if budget is not None and budget < 1:
        raise ConfigError(f"budget must be ≥ 1, got {budget}")
    known = feedback or {}
    pooler = pooler or make_pooler(method, rankings, depth)
    pooled = pooler.pool()
    picks: list[str] = []
    while budget is None or len(picks) < budget:
        doc = pooler.next_document()
        if doc is None:
            break
        pooler.record(doc, known.get(doc, False))
        picks.append(doc)
    order = sorted(pooled.values(), key=lambda d: (-d.fused, d.best_rank, d.doc_id))
    return Selection(tuple(order), tuple(picks), sum(1 for d in picks if d in known))


@dataclass(frozen=True)
class QuerySimulation:
    """One query's simulated campaign.

    ``judged``: (document, relevant) in judging order; ``pool``: those documents with their
    runs and ranks; ``relevant_in_pool``: relevant documents (by the qrels) in the full
    depth-k pool, the most any method can find; ``pool_size``: that pool's size.
    """

    query_id: str
    judged: tuple[tuple[str, bool], ...]
    relevant_found: int
    relevant_in_pool: int
    pool_size: int
    outside_qrels: int
    pool: tuple[PooledDocument, ...]


@dataclass(frozen=True)
class Simulation:
    """A simulated campaign over every query that the runs and the qrels share."""

    method: Method
    budget: int | None
    fraction: float | None
    depth: int
    queries: Mapping[str, QuerySimulation]

    @property
    def judged_total(self) -> int:
        return sum(len(q.judged) for q in self.queries.values())

    @property
    def relevant_found(self) -> int:
        return sum(q.relevant_found for q in self.queries.values())

    @property
    def relevant_in_pool(self) -> int:
        return sum(q.relevant_in_pool for q in self.queries.values())

    @property
    def pool_size(self) -> int:
        return sum(q.pool_size for q in self.queries.values())

    def judged_qrels(self) -> dict[str, dict[str, int]]:
        """The judgments made, as qrels (1 relevant, 0 not) to score the runs with."""
        return {qid: {doc: int(rel) for doc, rel in q.judged} for qid, q in self.queries.items()}


def _simulate_query(
    query_id: str,
    pooler: AdaptivePooler,
    grades: Mapping[str, float],
    budget: int | None,
    fraction: float | None,
    relevant_from: float,
) -> QuerySimulation:
    pooled = pooler.pool()
    if fraction is not None:
        budget = math.floor(fraction * len(pooled) + 0.5)
    judged: list[tuple[str, bool]] = []
    outside = 0
    while budget is None or len(judged) < budget:
        doc = pooler.next_document()
        if doc is None:
            break
        grade = grades.get(doc)
        outside += grade is None
        relevant = grade is not None and float(grade) >= relevant_from
        pooler.record(doc, relevant)
        judged.append((doc, relevant))
    return QuerySimulation(
        query_id=query_id,
        judged=tuple(judged),
        relevant_found=sum(rel for _, rel in judged),
        relevant_in_pool=sum(
            1 for d in pooled if d in grades and float(grades[d]) >= relevant_from
        ),
        pool_size=len(pooled),
        outside_qrels=outside,
        pool=tuple(pooled[doc] for doc, _ in judged),
    )


def simulate_pooling(
    runs: Runs,
    qrels: Mapping[str, Mapping[str, float]],
    method: Method,
    budget: int | None = None,
    *,
    fraction: float | None = None,
    depth: int = 100,
    relevant_from: float = 1.0,
    poolers: PoolerFactory | None = None,
) -> Simulation:
    """Run ``method`` per query with the qrels as the assessor, ``budget`` judgments per query.

    ``runs``: run → query → documents best first; ``qrels``: query → document → grade.
    Queries that no run ranks or that the qrels lack are left out. ``budget=None`` judges the
    whole depth pool (every method then ends with the same judgments, in its own order);
    ``fraction`` instead gives each query the budget ``round(fraction × its depth-pool size)``
    (halves up). ``poolers`` makes each query's pooler (``cal`` needs one: its features).
    """
    if budget is not None and budget < 0:
        raise ConfigError(f"budget must be ≥ 0, got {budget}")
    if fraction is not None and (budget is not None or not 0.0 <= fraction <= 1.0):
        raise ConfigError("give either a budget or a fraction in [0, 1] of each query's pool")
    if method not in METHODS or (method == "cal" and poolers is None):
        make_pooler(method, {})  # raises, naming the choices (or what cal needs)
    make = poolers or (lambda _q, rankings: make_pooler(method, rankings, depth))
    queries = {
        qid: _simulate_query(
            qid, make(qid, _for_query(runs, qid)), qrels[qid], budget, fraction, relevant_from
        )
        for qid in _queries(runs)
        if qid in qrels
    }
    return Simulation(method=method, budget=budget, fraction=fraction, depth=depth, queries=queries)
