"""Evidence on real data: how much of a depth-100 pool must be judged to find the relevant
documents and to rank systems as the full labels do (docs/campaigns.md#evidence-on-real-data).

On **Cranfield** (1,400 documents, 225 queries; grade = 5 − code, ``-1`` and unlisted 0) and
**MQ2008** (LETOR 4.0, all five partitions, 784 queries, grades 0/1/2), a field of systems made
from what heapjudge has:

* Cranfield: BM25 with five (k1, b) settings (:class:`labeling.retrieval.bm25.Bm25Index`);
  single text features as rankers (:mod:`labeling.machine.features`: BM25 of the title and the
  body, the three smoothed query likelihoods of the whole document, of the title and of the
  body, TF-IDF, coverage); trained linear models (ListNet, RankNet, RankSVM, ListMLE of
  :mod:`ranking.estimators`) on different feature subsets, re-ranking BM25's top 100, each
  trained on half the queries and run on the other half (cross-fitted, so no model ranks a
  query it learned from); three degraded copies of BM25 / the Dirichlet model;
* MQ2008: single LETOR features as rankers (TF-IDF, BM25 and the three LMIR models of several
  fields, PageRank), trained models (the same four losses on feature subsets, trained on four
  partitions and run on the fifth), three degraded copies.

The collection's labels are the truth. For each pooling method (``depth``: the depth-100 pool
in reciprocal-rank-fusion order; ``mtf``: Move-to-Front; ``maxmean``: the MaxMean bandit;
``hedge``: Hedge over the runs, :mod:`labeling.study.campaign_pools`; ``cal``: continuous
active learning over the documents' feature vectors — Cranfield's the service's text features,
normalised per query over the collection as it stores them, MQ2008's its LETOR vectors —
:mod:`labeling.study.cal_pool`) and each budget (a share
of every query's depth-100 pool), the labels of the judged documents form the pooled qrels
(unjudged: not relevant, as in TREC); printed: the share of the depth-100 pool's relevant
documents found, and Kendall's τ-b (and τ_AP) between the system ordering by NDCG@10 (and by
AP) under the pooled qrels and the ordering under the full labels (trec_eval's conventions:
linear gain, ideal from the qrels, a query a run lacks scores 0). A method's judging order does
not depend on its budget, so each method is simulated once over the whole pool and every
budget is a prefix of its order; ``cal`` is also run as the service runs it ("query, rounds":
one build per budget, each with one model fitted on every judgment so far, :func:`cal_rounds`;
"campaign, rounds": the service's campaign allocation, one build per budget over all queries,
:func:`cal_campaign_rounds`).
Per method and allocation, the smallest budget that finds 90% of the pool's relevant documents
and τ there; and reference points (:func:`oracle_bounds`): the most a budget per query can
find with a perfect order, what perfect stopping needs with the fused order, and the share of
relevant documents that every run ranks below 50.

Then τ between the system orderings by κ-NDCG@10 from a top-k truth (k = 10: per query the
labelled documents by grade, equal grades in a seeded random order, as Niu et al. make top-k
truth from graded lists; a grade-0 document never enters the top; queries without a relevant
document left out) and by NDCG@10 from the full graded labels (same queries).

    python benchmarks/campaign.py            # both collections (a few minutes)
    python benchmarks/campaign.py --quick    # fewer systems and budgets (about a minute)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks.campaign_field import (  # noqa: E402
    DEPTH,
    Campaign,
    Qrels,
    Run,
    cranfield,
    mq2008,
)
from labeling.study.cal_build import cal_campaign_build  # noqa: E402
from labeling.study.cal_pool import (  # noqa: E402
    ActiveLearning,
    cal_campaign_order,
    fit_logistic,
    pool_matrix,
    shared_scores,
)
from labeling.study.campaign_order import campaign_order  # noqa: E402
from labeling.study.campaign_pools import (  # noqa: E402
    METHODS,
    Method,
    Simulation,
    depth_pool,
    select_pool,
    simulate_pooling,
)
from ranking.compare.correlation import kendall_tau_b, tau_ap  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data"
K = 10
FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)
QUICK_FRACTIONS = (0.1, 0.2, 0.3, 0.4, 1.0)
TARGET = (0.9, 0.9, 0.4)  # relevant found ≥ 90%, τ ≥ 0.9 (NDCG@10 and AP), ≤ 40% judged

# --------------------------------------------------------------------------- evaluation


def ndcg_ap(run: Run, qrels: Qrels, queries: Sequence[str]) -> tuple[float, float]:
    """Mean NDCG@10 and AP over ``queries`` under trec_eval's conventions (linear gain, log2
    discount, ideal from the qrels' grades; AP over the qrels' relevant documents, grade ≥ 1;
    a query with none, or that the run lacks, scores 0)."""
    disc = 1.0 / np.log2(np.arange(2, K + 2))
    nd, ap = 0.0, 0.0
    for q in queries:
        grades = qrels.get(q, {})
        docs = run.get(q, [])
        gains = np.array([grades.get(d, 0) for d in docs[:K]], dtype=float)
        ideal = np.sort(np.array(list(grades.values()), dtype=float))[::-1][:K]
        idcg = float((ideal * disc[: ideal.size]).sum())
        nd += float((gains * disc[: gains.size]).sum()) / idcg if idcg > 0 else 0.0
        relevant = sum(1 for g in grades.values() if g >= 1)
        if relevant:
            rel = np.array([grades.get(d, 0) >= 1 for d in docs], dtype=float)
            hits = np.cumsum(rel)
            ap += float((rel * hits / np.arange(1, rel.size + 1)).sum()) / relevant
    n = max(len(queries), 1)
    return nd / n, ap / n


def kappa_ndcg10(run: Run, top: Mapping[str, list[str]]) -> float:
    """Mean κ-NDCG@10 (Niu et al. 2012 §3.3: gain 2^y − 1 on κ-labels y = k + 1 − pos for the
    true top-k, 0 otherwise; ideal = the true top-k in order)."""
    from ranking.io.topk import kappa_labels

    disc = 1.0 / np.log2(np.arange(2, K + 2))
    total = 0.0
    for q, best in top.items():
        labels = kappa_labels(best, [], K)
        gains = np.array([2.0 ** labels.get(d, 0) - 1 for d in run.get(q, [])[:K]])
        ideal = np.array([2.0 ** (K - i) - 1 for i in range(len(best))])
        total += float((gains * disc[: gains.size]).sum()) / float(
            (ideal * disc[: ideal.size]).sum()
        )
    return total / max(len(top), 1)


def topk_truth(qrels: Qrels, seed: int = 0) -> dict[str, list[str]]:
    """Per query with a relevant document: the labelled documents of grade ≥ 1 by grade,
    equal grades in a seeded random order, the first k."""
    rng = np.random.default_rng(seed)
    out = {}
    for q, grades in qrels.items():
        docs = [d for d, g in grades.items() if g >= 1]
        if docs:
            noise = rng.random(len(docs))
            order = sorted(range(len(docs)), key=lambda i: (-grades[docs[i]], noise[i]))
            out[q] = [docs[i] for i in order[:K]]
    return out


@dataclass
class Row:
    method: str
    allocation: str
    fraction: float
    judged: float
    found: float
    tau_ndcg: float
    tau_ap: float
    tauap_ndcg: float
    tauap_ap: float


def _row(
    camp: Campaign,
    names: list[str],
    queries: list[str],
    full: tuple[np.ndarray, np.ndarray],
    judged_lists: Mapping[str, Sequence[tuple[str, bool]]],
    label: tuple[str, str, float],
    pool: tuple[int, int],
) -> Row:
    """One table row from the judgments ``judged_lists`` (per query, in order)."""
    judged: Qrels = {q: {} for q in queries}
    count = found = 0
    for q, docs in judged_lists.items():
        for doc, relevant in docs:
            judged[q][doc] = camp.qrels[q].get(doc, 0)
            found += relevant
            count += 1
    scores = [ndcg_ap(camp.runs[s], judged, queries) for s in names]
    nd = np.array([x[0] for x in scores])
    ap = np.array([x[1] for x in scores])
    return Row(
        *label,
        count / pool[0],
        found / pool[1],
        kendall_tau_b(full[0], nd),
        kendall_tau_b(full[1], ap),
        tau_ap(full[0], nd),
        tau_ap(full[1], ap),
    )


def _found_at(
    sims: Mapping[str, Sequence[tuple[str, bool]]], sizes: Mapping[str, int], f: float
) -> int:
    return sum(sum(r for _, r in s[: math.floor(f * sizes[q] + 0.5)]) for q, s in sims.items())


def _share_for(
    judged: Mapping[str, Sequence[tuple[str, bool]]], sizes: Mapping[str, int], want: float
) -> float:
    """The smallest share f of every query's pool (to 1e-4) whose prefixes find ``want``."""
    lo, hi = 0.0, 1.0
    while hi - lo > 1e-4:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if _found_at(judged, sizes, mid) >= want else (mid, hi)
    return hi


def simulate(camp: Campaign, method: Method) -> Simulation:
    """``method`` per query over the whole depth pool (``cal`` with the campaign's features)."""
    if method != "cal":
        return simulate_pooling(camp.runs, camp.qrels, method, None, depth=DEPTH)

    def pooler(query: str, rankings: Mapping[str, Sequence[str]]) -> ActiveLearning:
        return ActiveLearning(rankings, camp.features.get(query, {}), DEPTH)

    return simulate_pooling(camp.runs, camp.qrels, method, None, depth=DEPTH, poolers=pooler)


def budget_rows(camp: Campaign, fractions: Sequence[float]) -> tuple[list[Row], list[Row], float]:
    """Every method and budget, per query and (adaptive methods) over the campaign (module
    docstring); per method and allocation, the row at the smallest budget that finds
    ``TARGET[0]`` of the pool's relevant documents; and the CPU seconds the simulations took."""
    queries = [q for q in camp.qrels if any(q in r for r in camp.runs.values())]
    names = list(camp.runs)
    scored = [ndcg_ap(camp.runs[s], camp.qrels, queries) for s in names]
    full = (np.array([f[0] for f in scored]), np.array([f[1] for f in scored]))
    rows: list[Row] = []
    needed: list[Row] = []
    spent = 0.0
    for method in METHODS:
        start = time.process_time()
        sim = simulate(camp, method)
        spent += time.process_time() - start
        pool = (
            sum(s.pool_size for s in sim.queries.values()),
            sum(s.relevant_in_pool for s in sim.queries.values()),
        )
        judged = {q: s.judged for q, s in sim.queries.items()}
        sizes = {q: s.pool_size for q, s in sim.queries.items()}
        for f in fractions:
            cut = {q: s[: math.floor(f * sizes[q] + 0.5)] for q, s in judged.items()}
            rows.append(_row(camp, names, queries, full, cut, (method, "query", f), pool))
        f = _share_for(judged, sizes, TARGET[0] * pool[1])
        cut = {q: s[: math.floor(f * sizes[q] + 0.5)] for q, s in judged.items()}
        needed.append(_row(camp, names, queries, full, cut, (method, "query", f), pool))
    for method in METHODS[1:]:
        start = time.process_time()
        order = (
            cal_campaign_order(camp.runs, camp.qrels, camp.features, depth=DEPTH)
            if method == "cal"
            else campaign_order(camp.runs, camp.qrels, method, depth=DEPTH)
        )
        spent += time.process_time() - start
        for f in fractions:
            cut = order.prefix(math.floor(f * pool[0] + 0.5))
            rows.append(_row(camp, names, queries, full, cut, (method, "campaign", f), pool))
        found = np.cumsum([r for _, _, r in order.order])
        b = int(np.searchsorted(found, TARGET[0] * pool[1])) + 1  # the first b judgments
        label = (method, "campaign", b / pool[0])
        needed.append(_row(camp, names, queries, full, order.prefix(b), label, pool))
    start = time.process_time()
    rounds = cal_rounds(camp, fractions)
    spent += time.process_time() - start
    for f, judged_lists in rounds:
        rows.append(
            _row(camp, names, queries, full, judged_lists, ("cal", "query, rounds", f), pool)
        )
    start = time.process_time()
    rounds = cal_campaign_rounds(camp, fractions)
    spent += time.process_time() - start
    for f, judged_lists in rounds:
        label = ("cal", "campaign, rounds", f)
        rows.append(_row(camp, names, queries, full, judged_lists, label, pool))
    return rows, needed, spent


def cal_rounds(
    camp: Campaign, fractions: Sequence[float]
) -> list[tuple[float, dict[str, list[tuple[str, bool]]]]]:
    """``cal`` as the service runs it (docs/campaigns.md#pools-in-the-service): one build per
    budget in ``fractions`` (a share of every query's pool), each build one model fitted on
    every judgment so far (:func:`labeling.study.cal_pool.shared_scores`; none yet: the fused
    order), the documents judged already first, then the unjudged by the model; the picks of
    a build are judged before the next. Per budget, the judgments so far, per query."""
    from app.campaign_pools.cal import judged_first

    names = list(camp.runs)
    queries = [q for q in camp.qrels if any(q in r for r in camp.runs.values())]
    rankings = {q: {r: camp.runs[r].get(q, []) for r in names} for q in queries}
    fused = {q: [d.doc_id for d in depth_pool(rankings[q], DEPTH)] for q in queries}
    judged: dict[str, dict[str, bool]] = {q: {} for q in queries}
    order: dict[str, list[tuple[str, bool]]] = {q: [] for q in queries}
    out = []
    for f in fractions:
        model = shared_scores(rankings, camp.features, judged, depth=DEPTH)
        for q in queries:
            budget = math.floor(f * len(fused[q]) + 0.5)
            if not budget:
                continue
            scores = model[q] if model else {d: -float(i) for i, d in enumerate(fused[q])}
            pooler = ActiveLearning(
                rankings[q], camp.features[q], DEPTH, scores=judged_first(scores, judged[q])
            )
            for doc in select_pool(
                rankings[q], "cal", DEPTH, budget, judged[q], pooler=pooler
            ).picks:
                if doc not in judged[q]:
                    judged[q][doc] = camp.qrels[q].get(doc, 0) >= 1
                    order[q].append((doc, judged[q][doc]))
        out.append((f, {q: list(v) for q, v in order.items()}))
    return out


def cal_campaign_rounds(
    camp: Campaign, fractions: Sequence[float]
) -> list[tuple[float, dict[str, list[tuple[str, bool]]]]]:
    """``cal`` with the service's campaign allocation (docs/campaigns.md#pools-in-the-service):
    one build per budget in ``fractions`` (a share of all the queries' pools together), each
    :func:`labeling.study.cal_build.cal_campaign_build` on the labels judged so far (one model,
    the queries' leave-one-out state for training; none yet: the seed), the build's new picks
    judged before the next. Per budget, the judgments so far, per query."""
    names = list(camp.runs)
    queries = [q for q in camp.qrels if any(q in r for r in camp.runs.values())]
    rankings = {q: {r: camp.runs[r].get(q, []) for r in names} for q in queries}
    total = sum(len(depth_pool(rankings[q], DEPTH)) for q in queries)
    judged: dict[str, dict[str, bool]] = {q: {} for q in queries}
    order: dict[str, list[tuple[str, bool]]] = {q: [] for q in queries}
    out = []
    for f in fractions:
        budget = math.floor(f * total + 0.5)
        build = cal_campaign_build(rankings, camp.features, judged, budget, depth=DEPTH)
        for q, doc in build.order:
            judged[q][doc] = camp.qrels[q].get(doc, 0) >= 1
            order[q].append((doc, judged[q][doc]))
        out.append((f, {q: list(v) for q, v in order.items()}))
    return out


def _not_above(a: tuple[int, int], b: tuple[int, int], c: tuple[int, int]) -> bool:
    """Whether ``b`` lies on or below the chord from ``a`` to ``c`` (cost, gain points)."""
    return (b[1] - a[1]) * (c[0] - a[0]) <= (c[1] - a[1]) * (b[0] - a[0])


def oracle_bounds(camp: Campaign, share: float, want: float) -> tuple[float, float, float]:
    """Reference points for the target (docs/campaigns.md#evidence-on-real-data).

    * A bound no method with a budget per query can beat: with ``share`` of every query's pool
      judged in a perfect order (relevant documents first), the share of the pool's relevant
      documents found, ``Σ_q min(R_q, round(share · n_q)) / Σ_q R_q``.
    * Perfect stopping with the fused order: one budget over the campaign, each query judged in
      its fused order and stopped where an oracle that knows the labels says; the smallest
      share of the pool that finds ``want`` of its relevant documents. Per query the options
      are the prefixes ending at a relevant document (cost: its rank, gain: the relevant
      documents up to it), taken greedily over the upper concave hull of each query's (cost,
      gain) points. (A better order than the fused one can need less.)
    * The share of the pool's relevant documents that every run retrieving them ranks below
      50: the documents no method finds without judging deep.
    """
    sim = simulate_pooling(camp.runs, camp.qrels, "depth", None, depth=DEPTH)
    total = sum(s.relevant_in_pool for s in sim.queries.values())
    size = sum(s.pool_size for s in sim.queries.values())
    perfect = sum(
        min(s.relevant_in_pool, math.floor(share * s.pool_size + 0.5)) for s in sim.queries.values()
    )
    deep = sum(
        1
        for s in sim.queries.values()
        for (_, relevant), doc in zip(s.judged, s.pool, strict=True)
        if relevant and doc.best_rank > 50
    )
    steps: list[tuple[int, int]] = []
    for s in sim.queries.values():  # s.judged: the whole pool in fused order
        ranks = [i + 1 for i, (_, relevant) in enumerate(s.judged) if relevant]
        hull = [(0, 0)]
        for point in [(rank, k) for k, rank in enumerate(ranks, start=1)]:
            while len(hull) >= 2 and _not_above(hull[-2], hull[-1], point):
                hull.pop()
            hull.append(point)
        steps += [(b[0] - a[0], b[1] - a[1]) for a, b in pairwise(hull)]
    cost = gain = 0
    for c, g in sorted(steps, key=lambda step: step[0] / step[1]):
        if gain >= want * total:
            break
        cost, gain = cost + c, gain + g
    return perfect / total, cost / size, deep / total


def model_bounds(camp: Campaign, share: float) -> tuple[float, float]:
    """Two more reference points for ``cal``, models that see every label (in-sample).

    The share of the pool's relevant documents found by judging ``share`` of the pool in the
    order of one logistic model fitted on all the labels over cal's rows
    (:func:`labeling.study.cal_pool.pool_matrix`: the standardised features and the rank
    evidence), over the whole campaign; and the same with each query's true rate of relevant
    documents, ``ln((r + 0.01)/(1.01 − r))``, as one more column. The first is what the rows
    tell with no judging at all, not a bound (CAL's query state, learnt as judging goes, can
    beat it); the second adds what knowing exactly how rich every query is would give, which
    CAL must buy with judgments.
    """
    blocks, labels, owner = [], [], []
    queries = [q for q in camp.qrels if any(q in r for r in camp.runs.values())]
    for i, q in enumerate(queries):
        pool = depth_pool({r: run.get(q, []) for r, run in camp.runs.items()}, DEPTH)
        if pool:
            blocks.append(pool_matrix(pool, camp.features.get(q, {}), len(camp.runs), DEPTH))
            labels += [camp.qrels[q].get(d.doc_id, 0) >= 1 for d in pool]
            owner += [i] * len(pool)
    x, y, at = np.vstack(blocks), np.array(labels, dtype=np.float64), np.array(owner)
    rate = np.bincount(at, y) / np.bincount(at)
    found = []
    for rows in (x, np.column_stack([x, np.log((rate[at] + 0.01) / (1.01 - rate[at]))])):
        w = fit_logistic(rows, y)
        ranked = np.argsort(-(rows @ w[:-1]), kind="stable")
        found.append(float(y[ranked[: math.floor(share * y.size + 0.5)]].sum() / y.sum()))
    return found[0], found[1]


def print_needed(camp: Campaign, needed: Sequence[Row]) -> None:
    """The rows at the smallest budget that finds ``TARGET[0]`` of the pool's relevant
    documents, and the oracle bounds (:func:`oracle_bounds`) at ``TARGET[2]`` of the pool."""
    want, _, share = TARGET
    print(
        f"\nThe smallest budget that finds {want:.0%} of the pool's relevant documents (over the "
        "campaign: the shortest prefix of the judging order; per query: the smallest share of "
        "every query's pool, to 0.01%), and τ there:\n"
    )
    print("| method | budget over | judged | relevant found | τ NDCG@10 | τ AP |")
    print("|---|---|---|---|---|---|")
    for r in needed:
        print(
            f"| {r.method} | {r.allocation} | {r.judged:.1%} | {r.found:.1%} | "
            f"{r.tau_ndcg:.3f} | {r.tau_ap:.3f} |"
        )
    perfect, oracle, deep = oracle_bounds(camp, share, want)
    print(
        f"\nreference points: with {share:.0%} of every query's pool judged in a perfect order "
        f"(relevant first) at most {perfect:.1%} of the relevant documents are found; over the "
        f"campaign, stopping each query's fused order where the labels say needs {oracle:.1%} "
        f"of the pool to find {want:.0%}; {deep:.1%} of the pool's relevant documents are "
        "ranked below 50 by every run that retrieved them"
    )
    if camp.features:
        rows_only, with_rate = model_bounds(camp, share)
        print(
            f"\nin-sample models (every label seen): one "
            f"logistic model over cal's rows, fitted on all the labels, finds {rows_only:.1%} "
            f"of the relevant documents with {share:.0%} of the pool judged in its order over "
            f"the campaign; given each query's true rate of relevant documents as well, "
            f"{with_rate:.1%}"
        )


def report(camp: Campaign, fractions: Sequence[float]) -> None:
    start = time.perf_counter()
    rows, needed, sim_cpu = budget_rows(camp, fractions)
    queries = [q for q in camp.qrels if any(q in r for r in camp.runs.values())]
    sims = simulate_pooling(camp.runs, camp.qrels, "depth", None, depth=DEPTH)
    pool = sum(s.pool_size for s in sims.queries.values())
    rel_pool = sum(s.relevant_in_pool for s in sims.queries.values())
    rel_all = sum(1 for q in queries for g in camp.qrels[q].values() if g >= 1)
    print(
        f"\n## {camp.name}: {len(camp.runs)} systems, {len(queries)} queries; depth-{DEPTH} pool "
        f"{pool} documents holding {rel_pool} of the {rel_all} relevant (grade ≥ 1)"
    )
    print(
        "\n| method | budget over | budget | judged | relevant found | τ NDCG@10 | τ AP "
        "| τ_AP NDCG@10 | τ_AP AP |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r.method} | {r.allocation} | {r.fraction:.0%} | {r.judged:.1%} | "
            f"{r.found:.1%} | "
            f"{r.tau_ndcg:.3f} | {r.tau_ap:.3f} | {r.tauap_ndcg:.3f} | {r.tauap_ap:.3f} |"
        )
    lo, tau_min, share = TARGET
    met = [
        r
        for r in rows
        # judged ≤ 40% to the 0.1% printed: a budget of 40% rounds to whole judgments
        # (24,680 of Cranfield's 61,699 documents are 40.0006%)
        if r.found >= lo and min(r.tau_ndcg, r.tau_ap) >= tau_min and r.judged < share + 5e-4
    ]
    first: dict[str, Row] = {}
    for r in met:
        first.setdefault(f"{r.method} (budget per {r.allocation})", r)
    verdict = "; ".join(f"{m} from {r.judged:.1%} judged" for m, r in first.items()) or "none"
    print(
        f"\ntarget (≥ {lo:.0%} of the pool's relevant found, τ ≥ {tau_min} for NDCG@10 and AP, "
        f"≤ {share:.0%} of the pool judged): {verdict}"
    )
    reached: dict[str, Row] = {}
    for r in rows:
        if r.found >= lo and min(r.tau_ndcg, r.tau_ap) >= tau_min:
            reached.setdefault(f"{r.method} (budget per {r.allocation})", r)
    print(
        "smallest budget with both (any share judged): "
        + ("; ".join(f"{m} {r.judged:.1%}" for m, r in reached.items()) or "none")
    )
    print_needed(camp, needed)
    top = topk_truth({q: camp.qrels[q] for q in queries})
    names = list(camp.runs)
    kappa = np.array([kappa_ndcg10(camp.runs[s], top) for s in names])
    graded = np.array([ndcg_ap(camp.runs[s], camp.qrels, list(top))[0] for s in names])
    print(
        f"κ-NDCG@10 from top-{K} truth vs NDCG@10 from the full graded labels ({len(top)} "
        f"queries with a relevant document): τ = {kendall_tau_b(graded, kappa):.3f}, "
        f"τ_AP = {tau_ap(graded, kappa):.3f}"
    )
    best = sorted(zip(graded, names, strict=True), reverse=True)
    print("systems by NDCG@10 (full labels): " + ", ".join(f"{n} {v:.3f}" for v, n in best))
    print(
        f"({time.perf_counter() - start:.1f} s wall for the tables; simulations "
        f"{sim_cpu:.1f} s CPU)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--quick", action="store_true", help="fewer systems and budgets")
    parser.add_argument(
        "--collections", default="cranfield,mq2008", help="comma list: cranfield, mq2008"
    )
    args = parser.parse_args(argv)
    fractions = QUICK_FRACTIONS if args.quick else FRACTIONS
    for name in args.collections.split(","):
        start = time.perf_counter()
        camp = (
            cranfield(args.data, args.quick)
            if name == "cranfield"
            else mq2008(args.data, args.quick)
        )
        took = time.perf_counter() - start
        print(f"\n[{camp.name}: {len(camp.runs)} systems built in {took:.1f} s]")
        report(camp, fractions)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
