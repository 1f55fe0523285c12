"""Each query's judging pool for a plan (:func:`labeling.study.pools.build_pool`): all documents, a
seeded sample of n, the top n of a ranking (a TREC run, or BM25 over the collection), or the
documents a stored pool from many runs picked (:mod:`app.campaign_pools.service`), and for a ranked
pool what the cut lost and the warning that says so."""

from __future__ import annotations

from typing import Any

from app.campaign_pools import service as pools
from app.kernel.errors import Invalid, issue_items
from app.kernel.models import Query
from app.planning import repository
from app.retrieval import service as retrieval
from labeling.errors import ConfigError
from labeling.protocol.prior_orders import prior_spec, ranking_order
from labeling.sources import SourceError
from labeling.study.pools import build_pool, content_hash, parse_trec_run

#: Pool modes that cut a ranking (a run, or BM25) at n.
RANKED_POOLS = ("run", "bm25")
#: The pool mode of a stored pool from many runs (``PoolSpec.pool_id``).
STORED_POOL = "runs"


#: Per query, what a ranked pool's cut lost: ``considered``, ``not_in_collection``,
#: ``not_in_query``.
Lost = dict[str, dict[str, int]]


def _ranking(
    s: Any,
    collection_id: int,
    queries: dict[str, Query],
    mode: str,
    run: str | None,
    stored: dict[str, list[str]] | None,
) -> Any:
    """The ranking a ranked pool cuts, by query (empty for the other modes): a stored run's
    (``stored``, already ranked), the run text's or BM25's."""
    if mode == "run" and stored is not None:
        return stored
    if mode == "run":
        if not run:
            raise Invalid("pool mode 'run' needs a TREC run")
        try:
            parsed = parse_trec_run(run, file="run")
        except SourceError as err:
            raise Invalid(
                issue_items(err.issues),
                extra={"message": "the run has errors; nothing was planned"},
            ) from None
        return {q: [e.doc_id for e in entries] for q, entries in parsed.items()}
    if mode == "bm25":
        return retrieval.bm25_rankings(s, collection_id, list(queries))
    return {}


def query_pools(
    s: Any,
    collection_id: int,
    queries: dict[str, Query],
    *,
    mode: str,
    n: int | None,
    seed: int,
    dedupe: bool,
    run: str | None,
    stored: dict[str, list[str]] | None = None,
) -> tuple[dict[str, list[str]], Lost]:
    """Each query's pool (``mode``, ``n``, ``seed``, ``dedupe``, ``run``: the plan's
    :class:`app.planning.spec.PoolSpec`; ``stored``: the rankings of its stored run), and
    for ranked pools (``run``, ``bm25``) what the cut lost: per query, how many of the
    ranking's top n are not in the collection at all (``not_in_collection``) or are in it
    but not among this query's documents (``not_in_query``)."""
    ranking: dict[str, list[str]] = _ranking(s, collection_id, queries, mode, run, stored)
    ranked = mode in RANKED_POOLS
    in_collection = repository.collection_doc_ids(s, collection_id) if ranked else set()
    out: dict[str, list[str]] = {}
    lost: Lost = {}
    for qid, query in queries.items():
        docs = repository.query_documents(s, query.id)
        ids = [d.external_id for d in docs]
        hashes = (
            {d.external_id: content_hash(d.title, d.text, d.html) for d in docs} if dedupe else None
        )
        try:
            chosen = build_pool(
                ids,
                mode="run" if ranked else mode,  # type: ignore[arg-type]
                n=n,
                seed=seed,
                run=ranking.get(qid, []) if ranked else None,
                hashes=hashes,
            )
        except ConfigError as err:
            raise Invalid(f"pool of query {qid}: {err}") from None
        out[qid] = list(chosen.doc_ids)
        if ranked:
            cut = _cut_loss(ranking.get(qid, [])[:n], set(ids), in_collection)
            if cut is not None:
                lost[qid] = cut
    return out, lost


def stored_pools(
    s: Any,
    collection_id: int,
    queries: dict[str, Query],
    *,
    pool_id: int | None,
    dedupe: bool,
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Each query's pool from the stored pool ``pool_id``: the documents its method picked, in
    its judging order (deduplicated by content with ``dedupe``: the first pick is kept), and
    the same documents in fused order (the prior ``run_order`` gives the top-k tasks)."""
    if pool_id is None:
        raise Invalid("pool mode 'runs' needs the id of a pool from runs (pool_id)")
    picks, fused = pools.plan_pools(s, collection_id, pool_id, list(queries))
    out: dict[str, list[str]] = {}
    for qid, query in queries.items():
        ranked = picks.get(qid, [])
        hashes = None
        if dedupe:
            docs = repository.query_documents(s, query.id)
            hashes = {d.external_id: content_hash(d.title, d.text, d.html) for d in docs}
        ids = list(dict.fromkeys(ranked))
        out[qid] = list(build_pool(ids, mode="run", run=ranked, hashes=hashes).doc_ids)
    return out, fused


def plan_query_pools(
    s: Any,
    collection_id: int,
    queries: dict[str, Query],
    *,
    mode: str,
    n: int | None,
    seed: int,
    dedupe: bool,
    run: str | None,
    pool_id: int | None,
    run_order: bool,
    stored: dict[str, list[str]] | None = None,
) -> tuple[dict[str, list[str]], Lost, dict[str, list[str]] | None]:
    """Each query's pool (the plan's :class:`app.planning.spec.PoolSpec`), what a ranked
    pool's cut lost, and for a stored pool from runs with ``run_order`` the fused order of each
    query's picks (else None)."""
    if mode == STORED_POOL:
        pools, fused = stored_pools(s, collection_id, queries, pool_id=pool_id, dedupe=dedupe)
        return pools, {}, fused if run_order else None
    pools, lost = query_pools(
        s, collection_id, queries, mode=mode, n=n, seed=seed, dedupe=dedupe, run=run, stored=stored
    )
    return pools, lost, None


def fused_prior(pool_id: int, doc_ids: list[str], fused: list[str]) -> tuple[list[str] | None, str]:
    """A top-k task's prior from a stored pool's fused (reciprocal rank fusion) order: the
    recorded spec ``run:pool<id>-rrf60`` names the pool whose fused run it is."""
    return ranking_order(doc_ids, fused), prior_spec("run", f"pool{pool_id}-{pools.FUSION}")


def _cut_loss(top: list[str], have: set[str], in_collection: set[str]) -> dict[str, int] | None:
    missing = [d for d in top if d not in have]
    if not missing:
        return None
    outside = sum(1 for d in missing if d not in in_collection)
    return {
        "considered": len(top),
        "not_in_collection": outside,
        "not_in_query": len(missing) - outside,
    }


def lost_warning(
    qid: str, mode: str, n: int | None, lost: dict[str, int], size: int
) -> dict[str, Any]:
    """The preview's warning for a query whose ranked pool lost documents of the cut."""
    source = "the run" if mode == "run" else "the BM25 ranking of the collection"
    parts = []
    if lost["not_in_collection"]:
        parts.append(f"{lost['not_in_collection']} are not in this collection")
    if lost["not_in_query"]:
        parts.append(
            f"{lost['not_in_query']} are in the collection but not among this query's documents"
        )
    fix = (
        "import them with pairing 'run' (or 'bm25'/'all') to judge them"
        if mode == "run"
        else "import the collection with pairing 'bm25' or 'all' to judge them"
    )
    top = f"top {lost['considered']}" if n is not None else f"{lost['considered']} documents"
    return {
        "code": "pool_lost_documents",
        "severity": "warning",
        "message": (
            f"query {qid}: of the {top} of {source}, {' and '.join(parts)}; the pool has "
            f"{size} documents ({fix})"
        ),
        "assessor": None,
        "query_id": qid,
        "method": None,
        "lost": dict(lost),
    }


def pool_summary(
    mode: str,
    n: int | None,
    seed: int,
    dedupe: bool,
    sizes: dict[str, int],
    *,
    pool_id: int | None = None,
) -> dict[str, Any]:
    """What the preview says about the pools: ``source`` (how each query's pool is chosen, in
    words), ``mode``, ``depth`` (n, None for the whole ranking or all documents), ``dedupe``
    and the documents per query actually pooled (``min``, ``max``, ``mean``; 0 without
    queries)."""
    if mode == "bm25":
        source = f"top {n} by BM25" if n else "every document BM25 ranks"
    elif mode == "run":
        source = f"top {n} of the uploaded run" if n else "every document of the uploaded run"
    elif mode == "runs":
        source = f"the picks of pool {pool_id} (built from runs)"
    elif mode == "sample":
        source = f"a random sample of {n} (seed {seed})" if n else f"a random sample (seed {seed})"
    else:
        source = "all documents of each query"
    values = list(sizes.values())
    return {
        "mode": mode,
        "source": source,
        "depth": n,
        "dedupe": dedupe,
        "min": min(values, default=0),
        "max": max(values, default=0),
        "mean": round(sum(values) / len(values), 1) if values else 0.0,
    }
