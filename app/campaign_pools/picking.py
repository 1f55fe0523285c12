"""A pool build's computation: from the runs and what the collection holds (read before, in a
read transaction), each query's pooled documents and picks (docs/campaigns.md#pools-in-the-service).

Nothing here opens a transaction: :func:`app.campaign_pools.service.pick_rows` reads the
inputs and calls :func:`pool_rows` with no transaction open, in the build process, then
:func:`app.campaign_pools.service.build_pool` writes the rows in one short transaction, so judging
submits never wait behind a build's computation (docs/performance.md#pool-builds).
:func:`feedback_of` is the read of the finished tasks' labels, in the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.campaign_pools.cal import Runs, cal_scores, campaign_picks, judgeable
from app.exports.selection import query_labels
from app.exports.service import ExportRequest
from app.kernel.errors import Invalid
from app.kernel.models import PoolDocument
from labeling.errors import ConfigError
from labeling.study.cal_pool import ActiveLearning
from labeling.study.campaign_pools import Method, cut_rankings, depth_pool, select_pool


@dataclass(slots=True)
class BuildInputs:
    """What a build reads from the collection: the runs, the queries by external id (rows
    with ``id``), each query row's documents, the finished tasks' feedback per query and the
    feature vectors (``cal``) per query row."""

    runs: Runs
    queries: Mapping[str, Any]
    documents: Mapping[int, set[str]]
    feedback: Mapping[str, Mapping[str, bool]]
    vectors: Mapping[int, Mapping[str, list[float]]] = field(default_factory=dict)


@dataclass(slots=True)
class BuiltRows:
    """The pool's rows (query rows set), the query ids the collection lacks, the documents
    dropped (not the query's), and the picks judged already."""

    rows: list[PoolDocument]
    unknown: list[str]
    dropped: int
    known: int


def feedback_of(s: Any, collection_id: int) -> dict[str, dict[str, bool]]:
    """What finished tasks say, per query and document: relevant (top-k membership, grade ≥ 1)
    or not; relevant wins when tasks disagree."""
    out: dict[str, dict[str, bool]] = {}
    for labels in ("kappa", "grades"):
        req = ExportRequest(collection_id=collection_id, labels=labels, source="all")
        for ql in query_labels(s, req):
            known = out.setdefault(ql.query_id, {})
            for doc, value in ql.labels.items():
                known[doc] = known.get(doc, False) or value >= 1
    return out


def query_rows(
    rankings: Mapping[str, Sequence[str]],
    have: set[str],
    method: Method,
    depth: int,
    budget: int | None,
    feedback: Mapping[str, bool],
    vectors: Mapping[str, list[float]] | None = None,
    scores: Mapping[str, float] | None = None,
    given: Sequence[str] | None = None,
) -> tuple[list[PoolDocument], int, int]:
    """One query's pool rows (query id unset), documents dropped, picks already judged;
    ``vectors``: the query's feature vectors by document, ``scores`` the model's log-odds
    (``cal``; None: no model yet, the fused order); ``given``: the picks, in order, made
    already (``cal`` over the campaign)."""
    pooled = [d for d in depth_pool(rankings, depth) if d.doc_id in have]
    cut = cut_rankings(rankings, depth)
    if given is not None:
        picks, known = list(given), sum(1 for d in given if d in feedback)
    elif method == "depth":  # the stored fused order (the runs' own ranks), cut at the budget
        picks, known = [d.doc_id for d in pooled][:budget], 0
    else:  # the adaptive methods walk each run's judgeable documents in its order
        runs_here = judgeable(rankings, have, depth)
        try:
            cal = method == "cal"
            pooler = ActiveLearning(runs_here, vectors or {}, scores=scores) if cal else None
        except ConfigError as err:
            raise Invalid(f"cal: {err}") from None
        chosen = select_pool(runs_here, method, None, budget, feedback, pooler=pooler)
        picks, known = list(chosen.picks), chosen.known
    pick = {doc: i for i, doc in enumerate(picks)}
    dropped = len({d for docs in cut.values() for d in docs}) - len(pooled)
    rows = [
        PoolDocument(
            doc_id=d.doc_id,
            position=i,
            pick=pick.get(d.doc_id),
            fused=d.fused,
            hits=[[run, rank] for run, rank in d.hits],
        )
        for i, d in enumerate(pooled)
    ]
    return rows, dropped, known


def pool_rows(
    inputs: BuildInputs, method: Method, depth: int, budget: int | None, campaign: bool
) -> BuiltRows:
    """Every query's rows, in the runs' query order (queries the collection lacks listed,
    not pooled). ``campaign``: ``cal`` with one budget over the queries."""
    model = (
        inputs.runs,
        inputs.queries,
        inputs.documents,
        inputs.vectors,
        inputs.feedback,
        depth,
    )
    # a campaign has a budget (check_allocation): one total over the queries
    chosen = campaign_picks(*model, budget or 0) if campaign else {}
    scores = None if campaign else cal_scores(*model)
    out = BuiltRows([], [], 0, 0)
    query_order = dict.fromkeys(q for per_query in inputs.runs.values() for q in per_query)
    for qid in query_order:
        query = inputs.queries.get(qid)
        if query is None:
            out.unknown.append(qid)
            continue
        rankings = {run: per_query.get(qid, []) for run, per_query in inputs.runs.items()}
        rows, dropped, known = query_rows(
            rankings,
            inputs.documents.get(query.id, set()),
            method,
            depth,
            budget,
            inputs.feedback.get(qid, {}),
            inputs.vectors.get(query.id),
            (scores or {}).get(qid),
            chosen.get(qid, ()) if campaign else None,
        )
        for row in rows:
            row.query_id = query.id
        out.rows += rows
        out.dropped += dropped
        out.known += known
    return out
