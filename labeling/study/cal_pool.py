"""Continuous active learning over a pool: a relevance classifier, re-fit as judgments come in,
picks the next document (docs/campaigns.md#continuous-active-learning).

Continuous active learning (CAL; Cormack, Grossman, "Evaluation of machine-learning protocols
for technology-assisted review in electronic discovery", SIGIR 2014; "Autonomy and reliability
of continuous active learning for technology-assisted review", 2015) judges next the unjudged
documents a classifier trained on every judgment so far finds most likely relevant, and re-fits
it after each batch, the batches growing by a tenth (their BMI: batch size ``B ← B + ⌈B/10⌉``,
from 1). Used to build test collections from the runs' pools (Rahman, Kutlu, Elsayed, Lease,
"Efficient test collection construction via active learning", ICTIR 2020; Li, Kanoulas,
"Active sampling for large-scale information retrieval evaluation", CIKM 2017), the candidates
are a depth-k pool and a document is described by

* its **feature vector** for the query (LETOR's vectors, or heapjudge's text features,
  docs/features.md), each feature standardised over the query's pool, ``(x − mean)/sd``
  (0 where it is constant), so that one model serves queries of different scales;
* the runs' **rank evidence**: its fused score ``Σ_runs 1/(60 + rank)`` divided by the
  query's largest, the share of the runs that retrieved it, and ``1 − ln(best rank)/ln(depth)``.

The classifier is L2-regularised logistic regression, ``P(rel | x) = σ(w·x + b)``, ``w`` and
``b`` minimising ``−Σ_i [y_i ln p_i + (1 − y_i) ln(1 − p_i)] + (λ/2)‖w‖²`` (λ =
:data:`CAL_L2`; the intercept is not penalised), fitted by Newton's method from zero (iteratively
reweighted least squares: deterministic, no seed). It only ever sees the judgments made so far.

Seed: the fused order (the runs' consensus), until the judgments hold a relevant and a
non-relevant document — CAL's seed is the topic's text; here it is the runs'.

* :class:`ActiveLearning` — one query: its own judgments train the model; the pick is the
  unjudged document of highest predicted probability (ties: fused order).
* :func:`cal_campaign_order` — one budget over the campaign: **one model for all queries**,
  so the allocation between queries follows the predicted probabilities. The seed judges each
  query's first fused document. Beside a document's features the model sees its query's state
  when the document was picked (for training) or now (for prediction): its rate of relevant
  documents ``r = (1 + rel)/(2 + judged)``, the rate's log-odds ``ln(r/(1 − r))`` and the
  share of its pool judged. A query whose relevant documents are running out thus yields to
  the others as the model learns that such states give fewer relevant documents. The weights
  are re-fit once per batch, but a query's state is updated after each of its judgments, so
  within a batch its remaining documents are re-scored at once (the model's weights, the
  query's new state): a query whose judgment was not relevant yields before the batch ends.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from labeling.errors import ConfigError
from labeling.study.campaign_order import CampaignOrder
from labeling.study.campaign_pools import (
    AdaptivePooler,
    PooledDocument,
    Rankings,
    Runs,
    depth_pool,
)

__all__ = [
    "CAL_GROWTH",
    "CAL_L2",
    "ActiveLearning",
    "DocumentFeatures",
    "cal_campaign_order",
    "fit_logistic",
    "pool_matrix",
    "shared_scores",
]

CAL_L2 = 1.0
CAL_GROWTH = 0.1
DocumentFeatures = Mapping[str, Sequence[float] | np.ndarray]
"""One query's documents' feature vectors: document id → vector (every one the same length)."""


def fit_logistic(
    x: np.ndarray, y: np.ndarray, l2: float = CAL_L2, *, iterations: int = 50
) -> np.ndarray:
    """L2-regularised logistic regression by Newton's method (module docstring): the weights of
    the columns of ``x`` and, last, the intercept. Starts from zero; stops when a step moves no
    weight by more than 1e-8 or after ``iterations`` steps."""
    n, p = x.shape
    a = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(p + 1)
    penalty = np.full(p + 1, l2)
    penalty[-1] = 0.0
    for _ in range(iterations):
        prob = 1.0 / (1.0 + np.exp(-(a @ w)))
        grad = a.T @ (prob - y) + penalty * w
        hess = (a * (prob * (1.0 - prob))[:, None]).T @ a + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return w


def pool_matrix(
    pool: Sequence[PooledDocument], features: DocumentFeatures, runs: int, depth: int
) -> np.ndarray:
    """One query's rows (module docstring), in the order of ``pool``: the feature vectors
    standardised over the pool, then the fused score over the largest, the share of the runs
    that retrieved the document and ``1 − ln(best rank)/ln(depth)``. ConfigError naming
    documents without a vector, or for vectors of different lengths or not finite."""
    if not pool:
        return np.zeros((0, 3))
    missing = [d.doc_id for d in pool if d.doc_id not in features]
    if missing:
        raise ConfigError(f"no feature vector for {len(missing)} pooled documents: {missing[:3]}")
    rows = [np.asarray(features[d.doc_id], dtype=np.float64).ravel() for d in pool]
    if len({r.size for r in rows}) > 1:
        raise ConfigError("the feature vectors of a query's pooled documents differ in length")
    x = np.array(rows).reshape(len(pool), -1)
    if not np.isfinite(x).all():
        raise ConfigError("a pooled document's feature vector is not finite")
    sd = x.std(axis=0)
    x = np.where(sd > 0, (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0), 0.0)
    fused = np.array([d.fused for d in pool])
    top = float(fused.max())
    best = np.array([d.best_rank for d in pool], dtype=np.float64)
    evidence = np.column_stack(
        [
            fused / top,
            np.array([len(d.hits) for d in pool]) / max(runs, 1),
            1.0 - np.log(best) / math.log(max(depth, 2)),
        ]
    )
    return np.hstack([x, evidence])


def shared_scores(
    rankings: Mapping[str, Rankings],
    features: Mapping[str, DocumentFeatures],
    judged: Mapping[str, Mapping[str, bool]],
    *,
    depth: int | None = None,
    l2: float = CAL_L2,
) -> dict[str, dict[str, float]] | None:
    """One model for many queries (module docstring's rows, without the query's state): fitted
    on the judged documents of every query's pool (``rankings``: query → its runs; ``judged``:
    query → document → relevant), it gives every pooled document its log-odds, per query.
    None when the judgments lack a relevant or a non-relevant document (no model: the fused
    order). A batch of CAL whose batch is a round of judging: the service re-fits it at
    every build (docs/campaigns.md#pools-in-the-service)."""
    pools = {q: _fused(AdaptivePooler(r, depth).pool()) for q, r in rankings.items()}
    rows, labels, blocks = [], [], {}
    for q, pool in pools.items():
        if not pool:
            continue
        cut = max((len(r) for r in rankings[q].values()), default=1)
        blocks[q] = pool_matrix(pool, features.get(q, {}), len(rankings[q]), depth or cut)
        known = judged.get(q, {})
        for i, d in enumerate(pool):
            if d.doc_id in known:
                rows.append(blocks[q][i])
                labels.append(float(known[d.doc_id]))
    if len({b.shape[1] for b in blocks.values()}) > 1:
        raise ConfigError("the feature vectors of the queries differ in length")
    y = np.array(labels)
    if not 0.0 < y.sum() < y.size:
        return None
    w = fit_logistic(np.array(rows), y, l2)
    return {
        q: {d.doc_id: float(v) for d, v in zip(pools[q], blocks[q] @ w[:-1] + w[-1], strict=True)}
        for q in blocks
    }


def _fused(pool: Mapping[str, PooledDocument]) -> list[PooledDocument]:
    return sorted(pool.values(), key=lambda d: (-d.fused, d.best_rank, d.doc_id))


class ActiveLearning(AdaptivePooler):
    """Continuous active learning over one query's pool (module docstring).

    ``features`` must hold a vector for every pooled document. The model is re-fit when the
    judgments reach the next batch boundary (1, 2, 3, ..., growing by ``growth``); between
    fits the unjudged document of highest probability under the last fit is proposed (ties:
    fused order). Until the judgments hold both a relevant and a non-relevant document the
    fused order is followed. Every recorded judgment of a pooled document trains the model.

    ``scores``: a model's log-odds of every pooled document, fixed (say :func:`shared_scores`,
    one model fitted on many queries' judgments): the documents are proposed in that order
    and the query's own judgments re-fit nothing.
    """

    def __init__(
        self,
        rankings: Rankings,
        features: DocumentFeatures,
        depth: int | None = None,
        *,
        l2: float = CAL_L2,
        growth: float = CAL_GROWTH,
        scores: Mapping[str, float] | None = None,
    ) -> None:
        if l2 <= 0.0 or growth < 0.0:
            raise ConfigError(f"active learning needs l2 > 0 and growth ≥ 0: {l2}, {growth}")
        super().__init__(rankings, depth)
        order = _fused(self.pool())
        self._docs = [d.doc_id for d in order]
        self._row = {d: i for i, d in enumerate(self._docs)}
        cut = max((len(r) for r in self.rankings.values()), default=1)
        self.matrix = pool_matrix(order, features, len(self.names), depth or cut)
        self.l2, self.growth = l2, growth
        self._labels = np.zeros(len(order))
        self._open = np.ones(len(order), dtype=bool)
        self.scores = -np.arange(len(order), dtype=np.float64)  # the fused order until a fit
        self._batch, self._next_fit = 1, 1.0
        self.fits = 0
        if scores is not None:
            missing = [d for d in self._docs if d not in scores]
            if missing:
                raise ConfigError(f"no score for {len(missing)} pooled documents: {missing[:3]}")
            self.scores = np.array([float(scores[d]) for d in self._docs])
            self._next_fit = math.inf  # a fixed model: never re-fit

    def next_document(self) -> str | None:
        if self._pending is None:
            if not self._open.any():
                return None
            judged = ~self._open
            if judged.sum() >= self._next_fit:
                self._refit(judged)
            doc = self._docs[int(np.argmax(np.where(self._open, self.scores, -np.inf)))]
            self._pending = (self.pool()[doc].hits[0][0], doc)
        return self._pending[1]

    def _refit(self, judged: np.ndarray) -> None:
        y = self._labels[judged]
        if not 0.0 < y.sum() < y.size:
            return  # one class: the fused order goes on, and every judgment tries again
        w = fit_logistic(self.matrix[judged], y, self.l2)
        self.scores = self.matrix @ w[:-1] + w[-1]
        self.fits += 1
        while self._next_fit <= y.size:
            self._batch += math.ceil(self.growth * self._batch)
            self._next_fit += self._batch

    def record(self, doc_id: str, relevant: bool) -> None:
        new = doc_id not in self.judged
        super().record(doc_id, relevant)
        if new and doc_id in self._row:
            self._open[self._row[doc_id]] = False
            self._labels[self._row[doc_id]] = float(relevant)

    def best_value(self) -> float | None:
        """The highest predicted log-odds among the unjudged documents (None: none left)."""
        if self.next_document() is None:
            return None
        return float(np.max(np.where(self._open, self.scores, -np.inf)))


class _Campaign:
    """The arrays of :func:`cal_campaign_order`: every query's pool stacked, in fused order."""

    def __init__(
        self, runs: Runs, features: Mapping[str, DocumentFeatures], queries: list[str], depth: int
    ) -> None:
        blocks, self.docs, owner = [], [], []
        self.sizes: list[int] = []
        for i, q in enumerate(queries):
            pool = depth_pool({r: per_query.get(q, ()) for r, per_query in runs.items()}, depth)
            blocks.append(pool_matrix(pool, features.get(q, {}), len(runs), depth))
            self.docs += [d.doc_id for d in pool]
            owner += [i] * len(pool)
            self.sizes.append(len(pool))
        blocks = [b for b in blocks if len(b)]
        if len({b.shape[1] for b in blocks}) > 1:
            raise ConfigError("the feature vectors of the campaign's queries differ in length")
        self.matrix = np.vstack(blocks) if blocks else np.zeros((0, 3))
        self.owner = np.array(owner, dtype=np.intp)
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.intp)


def cal_campaign_order(
    runs: Runs,
    qrels: Mapping[str, Mapping[str, float]],
    features: Mapping[str, DocumentFeatures],
    *,
    depth: int = 100,
    relevant_from: float = 1.0,
    l2: float = CAL_L2,
    growth: float = CAL_GROWTH,
) -> CampaignOrder:
    """The judging sequence of continuous active learning with one model and one budget over
    the campaign (module docstring), the qrels as the assessor (a document they lack is not
    relevant); ``features``: query → document → vector, for every pooled document. Each batch
    takes, one at a time, the unjudged document of highest predicted probability over all
    queries (ties: the earlier query, then fused order), re-scoring its query's documents with
    the query's new state after each judgment."""
    queries = list(dict.fromkeys(q for per_query in runs.values() for q in per_query))
    queries = [q for q in queries if q in qrels]
    c = _Campaign(runs, features, queries, depth)
    n, nq = len(c.docs), len(queries)
    labels = np.array(
        [
            float(qrels[queries[i]].get(d, 0.0)) >= relevant_from
            for i, d in zip(c.owner, c.docs, strict=True)
        ]
    )
    found = np.zeros(nq)  # relevant documents found per query
    count = np.zeros(nq)  # judgments per query
    sizes = np.asarray(c.sizes, dtype=np.float64)
    state_at_pick = np.zeros((n, 3))
    open_ = np.ones(n, dtype=bool)
    order: list[tuple[str, str, bool]] = []

    def state(i: np.ndarray) -> np.ndarray:
        rate = (1.0 + found[i]) / (2.0 + count[i])
        return np.column_stack([rate, np.log(rate / (1.0 - rate)), count[i] / sizes[i]])

    def judge(row: int) -> int:
        i = int(c.owner[row])
        state_at_pick[row] = state(np.array([i]))[0]
        open_[row] = False
        found[i] += labels[row]
        count[i] += 1
        order.append((queries[i], c.docs[row], bool(labels[row])))
        return i

    for i in range(nq):  # the seed: every query's first fused document
        if c.sizes[i]:
            judge(int(c.starts[i]))
    batch = 1
    width = c.matrix.shape[1]
    while open_.any():
        judged = ~open_
        y = labels[judged].astype(np.float64)
        w: np.ndarray | None = None
        if 0.0 < y.sum() < y.size:
            w = fit_logistic(np.hstack([c.matrix, state_at_pick])[judged], y, l2)
            base = c.matrix @ w[:width] + w[-1]
            scores = base + state(c.owner) @ w[width:-1]
        else:  # one class only: the fused order, the queries in turn
            base = scores = -(np.arange(n) - c.starts[c.owner]).astype(np.float64)
        scores = np.where(open_, scores, -np.inf)
        for _ in range(min(batch, int(open_.sum()))):
            # np.argmax takes the first of equal scores: the earlier query, then fused order
            i = judge(int(np.argmax(scores)))
            at = slice(int(c.starts[i]), int(c.starts[i + 1]))
            if w is not None:  # the query's new state re-scores its documents at once
                scores[at] = base[at] + state(c.owner[at]) @ w[width:-1]
            scores[at] = np.where(open_[at], scores[at], -np.inf)
        batch += math.ceil(growth * batch)
    relevant_in_pool = {
        q: int(labels[c.starts[i] : c.starts[i + 1]].sum()) for i, q in enumerate(queries)
    }
    return CampaignOrder(
        "cal", tuple(order), dict(zip(queries, c.sizes, strict=True)), relevant_in_pool
    )
