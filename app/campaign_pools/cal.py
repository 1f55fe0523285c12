"""Continuous active learning's inputs for a pool build (docs/campaigns.md#pools-in-the-service):
the feature vectors stored on the collection's documents, refused when a pooled document has
none, and the build's model, fitted on the finished tasks' labels of every query. Each build
is one batch of continuous active learning (Cormack, Grossman, "Evaluation of machine-learning
protocols for technology-assisted review in electronic discovery", SIGIR 2014): the model is
fixed while the build picks, and the next build, after those picks are judged, re-fits it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.campaign_pools import repository
from app.kernel.errors import Invalid
from labeling.errors import ConfigError
from labeling.study.cal_build import cal_campaign_build
from labeling.study.cal_pool import shared_scores
from labeling.study.campaign_pools import Method, cut_rankings, depth_pool

#: Runs by name: query id → documents best first.
Runs = Mapping[str, Mapping[str, Sequence[str]]]


def judgeable(
    rankings: Mapping[str, Sequence[str]], have: set[str], depth: int
) -> dict[str, list[str]]:
    """Each run's top ``depth`` documents that the query has (the ones that can be judged)."""
    return {
        run: [d for d in docs if d in have] for run, docs in cut_rankings(rankings, depth).items()
    }


def _cal_inputs(
    runs: Runs,
    queries: Mapping[str, Any],
    documents: Mapping[int, set[str]],
    vectors: Mapping[int, Mapping[str, list[float]]],
    depth: int,
) -> tuple[dict[str, dict[str, list[str]]], dict[str, Mapping[str, list[float]]]]:
    """Per query the collection has (in its order) with a judgeable pooled document: its runs'
    judgeable documents, and its documents' vectors."""
    rankings, features = {}, {}
    for qid, query in queries.items():
        per_query = {run: r.get(qid, []) for run, r in runs.items()}
        cut = judgeable(per_query, documents.get(query.id, set()), depth)
        if any(cut.values()):
            rankings[qid], features[qid] = cut, vectors.get(query.id, {})
    return rankings, features


def campaign_picks(
    runs: Runs,
    queries: Mapping[str, Any],
    documents: Mapping[int, set[str]],
    vectors: Mapping[int, Mapping[str, list[float]]],
    feedback: Mapping[str, Mapping[str, bool]],
    depth: int,
    budget: int,
) -> dict[str, tuple[str, ...]]:
    """``cal`` with one budget over the campaign, one build (one batch of CAL,
    :func:`labeling.study.cal_build.cal_campaign_build`): per query, its documents judged
    already, then the unjudged documents the model finds most likely relevant over all the
    queries, until the pool holds ``budget`` documents in total."""
    rankings, features = _cal_inputs(runs, queries, documents, vectors, depth)
    try:
        return cal_campaign_build(rankings, features, feedback, budget).picks
    except ConfigError as err:
        raise Invalid(f"cal: {err}") from None


def cal_scores(
    runs: Runs,
    queries: Mapping[str, Any],
    documents: Mapping[int, set[str]],
    vectors: Mapping[int, Mapping[str, list[float]]],
    feedback: Mapping[str, Mapping[str, bool]],
    depth: int,
) -> dict[str, dict[str, float]] | None:
    """``cal``'s model for this build: one logistic regression fitted on the finished tasks'
    labels of every query's pooled documents (:func:`labeling.study.cal_pool.shared_scores`),
    each build a batch of continuous active learning: per query, each pooled document's
    log-odds. While the labels lack a relevant or a non-relevant document there is no model and
    the scores are the fused order (minus the place). None for another method (no vectors)."""
    if not vectors:
        return None
    rankings, features = _cal_inputs(runs, queries, documents, vectors, depth)
    try:
        scores = shared_scores(rankings, features, feedback)
    except ConfigError as err:
        raise Invalid(f"cal: {err}") from None
    if scores is None:  # no model yet: the fused order
        scores = {
            q: {d.doc_id: -float(i) for i, d in enumerate(depth_pool(r, depth))}
            for q, r in rankings.items()
        }
    return {q: judged_first(v, feedback.get(q, {})) for q, v in scores.items()}


def judged_first(scores: Mapping[str, float], known: Mapping[str, bool]) -> dict[str, float]:
    """``scores`` with the documents judged already above every other (their order kept): a
    build replays them first, with their labels, as the other methods' rounds do, so that a
    budget counts every judgment of the query, then takes the unjudged by the model."""
    if not scores:
        return {}
    lift = max(scores.values()) - min(scores.values()) + 1.0
    return {d: v + lift if d in known else v for d, v in scores.items()}


def cal_vectors(
    s: Any,
    collection_id: int,
    runs: Runs,
    queries: Mapping[str, Any],
    documents: Mapping[int, set[str]],
    method: Method,
    depth: int,
) -> dict[int, dict[str, list[float]]]:
    """``cal``'s feature vectors per query row id (none for another method). Invalid naming
    how many pooled documents lack a vector, and where, when any does."""
    if method != "cal":
        return {}
    vectors = repository.document_vectors(s, collection_id)
    missing: list[tuple[str, str]] = []
    for qid, query in queries.items():
        rankings = {run: per_query.get(qid, []) for run, per_query in runs.items()}
        have, known = documents.get(query.id, set()), vectors.get(query.id, {})
        missing += [
            (qid, d)
            for docs in cut_rankings(rankings, depth).values()
            for d in docs
            if d in have and d not in known
        ]
    if missing:
        shown = ", ".join(f"{q}/{d}" for q, d in list(dict.fromkeys(missing))[:3])
        raise Invalid(
            f"cal needs a feature vector for every pooled document; "
            f"{len(set(missing))} have none (e.g. {shown}): compute the collection's text "
            "features or attach LETOR vectors first (docs/features.md), or choose another "
            "method; nothing was stored"
        )
    return vectors
