"""Use cases: build a pool from many runs, list a collection's pools, read one, hand its
documents to the planner, and simulate pooling against qrels (docs/campaigns.md).

A pool is built from TREC runs (``qid Q0 docno rank score tag``; each run ranked by score as
trec_eval ranks it, :func:`labeling.study.pools.parse_trec_run`):

1. every run is cut to its top ``depth`` documents (ranks are the run's own, 1-based); the
   union per query is the *depth-k pool*, each document with the runs that retrieved it and at
   which rank, ordered by reciprocal rank fusion ``Σ_runs 1/(60 + rank)`` (Cormack, Clarke,
   Büttcher, SIGIR 2009). RRF and not CombSUM of normalised scores: it needs no score scale
   (runs from BM25, language models and learned rankers have incomparable scores, and a TREC
   run's scores are often missing or ties), and it is the fusion the pooling literature
   compares against;
2. documents that are not among the query's documents in the collection cannot be judged:
   they are dropped (counted in the summary); queries the collection lacks are skipped;
3. the method picks the documents to judge, up to ``budget`` per query (None: all): ``depth``
   in fused order, ``mtf`` Move-to-Front, ``maxmean`` the MaxMean bandit, ``hedge`` Hedge over
   the runs (:func:`labeling.study.campaign_pools.select_pool`), ``cal`` continuous active
   learning over the documents' feature vectors, one batch per build: one model fitted on every
   query's feedback, fixed while the build picks (:mod:`app.campaign_pools.cal`; every pooled
   document needs a vector, else the build is refused, naming how many lack one). The adaptive
   methods take as relevance feedback what the collection's finished tasks say about the
   documents: a top-k task's top counts as relevant and the rest of its pool as not; a graded
   task's grade ≥ 1 as relevant; a document any task calls relevant is relevant. A pick nobody
   judged yet counts as not relevant, so a first build takes the runs in turns and a later
   build (after those tasks finished) follows the runs that gave relevant documents. With
   ``allocation="campaign"`` (``cal`` only) ``budget`` is one total over the collection's
   queries: one build of campaign-wide CAL (:func:`app.campaign_pools.cal.campaign_picks`)
   keeps every judged pooled document and adds the unjudged ones the model finds most likely
   relevant, whichever their query.

The runs are either uploaded files or runs stored on the collection (``BuildSpec.stored``:
names or ids, or every stored run; read through :func:`app.runs.service.run_rankings`, which
ranks them as trec_eval does, so a pool from stored runs equals the pool from the same files).

The build reads the collection and computes its picks with no transaction open, in the build
process (:func:`compute_rows`), then stores the pool marked ``building`` and its documents in
batches of :data:`BATCH_ROWS`, each its own short write transaction, the last one marking it
``ready``; so judging never waits for a build's computation nor for more than one batch's
insert (docs/performance.md#pool-builds), and no reader lists, shows or plans from a pool
before its last batch is in. A build that fails between its batches deletes what it wrote; one
whose process died leaves a ``building`` pool, shown as ``failed`` after :data:`STALE_BUILD`
and deleted by the collection's next build. A bad run file or an unknown stored run is refused
before any write (with its file name and line, or the names the collection lacks), and nothing
is stored.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.exc import IntegrityError

from app.campaign_pools import repository
from app.campaign_pools.build_priority import lower_priority
from app.campaign_pools.cal import cal_vectors
from app.campaign_pools.picking import BuildInputs, feedback_of, pool_rows
from app.campaign_pools.run_input import Runs, StoredChoice, read_runs, stored_rankings
from app.kernel.db import Database
from app.kernel.errors import Conflict, Invalid, NotFound
from app.kernel.models import CampaignPool, utcnow
from app.kernel.settings import Settings
from labeling.study.campaign_pools import (
    METHODS,
    Method,
)

FUSION = "rrf60"
MAX_DEPTH = 10_000
#: How a pool's budget is spread: per query, or one total over the campaign (``cal`` only).
ALLOCATIONS = ("query", "campaign")
#: Pool documents written per write transaction: each batch holds SQLite's write lock a few
#: milliseconds (the driver's executemany, about 10 µs a row), so a judgment submit waits at
#: most one batch behind a build (docs/performance.md#pool-builds).
BATCH_ROWS = 200
#: The pause between two batches (seconds): this process's writers queue on a lock that is
#: not first-come-first-served, and a build that took the next batch at once would pass them.
BATCH_PAUSE = 0.002
#: A pool still ``building`` this long after its build started was left by a build that died
#: between its batches (writing takes seconds): shown as ``failed``, deleted by the
#: collection's next build.
STALE_BUILD = timedelta(minutes=10)


@dataclass(frozen=True, slots=True)
class BuildSpec:
    """What to build: ``runs`` maps a run's name to its TREC text (in run order, which breaks
    the adaptive methods' ties); ``budget`` is judgments per query (None: the depth pool), or
    with ``allocation="campaign"`` (``cal`` only; a budget required) the documents of all the
    queries together."""

    collection_id: int
    runs: Mapping[str, str | bytes | Iterable[bytes]] = field(default_factory=dict)
    method: str = "depth"
    depth: int = 100
    budget: int | None = None
    name: str | None = None
    feedback: bool = True
    file_names: Mapping[str, str] = field(default_factory=dict)
    """The file each run came from, by run name (errors name it; default the run name)."""
    stored: StoredChoice | None = None
    """Runs stored on the collection instead of ``runs``: names or ids in run order, or
    :data:`ALL_STORED` (every stored run, by upload order)."""
    allocation: str = "query"


@dataclass(frozen=True, slots=True)
class PoolView:
    id: int
    collection_id: int
    name: str
    method: str
    depth: int
    budget: int | None
    fusion: str
    runs: list[str]
    summary: dict[str, Any]
    created_at: datetime
    documents: int = 0
    picked: int = 0
    allocation: str = "query"
    status: str = "ready"
    """``ready``; ``building`` while its documents are written (counts 0, no documents shown,
    not plannable); ``failed`` for a build that died between its batches (:data:`STALE_BUILD`)."""


@dataclass(frozen=True, slots=True)
class PooledRow:
    """A pooled document of one query: runs and ranks, fused score and order, pick."""

    query_id: str
    doc_id: str
    position: int
    pick: int | None
    fused: float
    hits: list[tuple[str, int]] = field(default_factory=list)


def check_method(method: str, depth: int, budget: int | None) -> Method:
    """``method`` as a :data:`Method`; Invalid naming the choices, or a bad depth or budget."""
    if method not in METHODS:
        raise Invalid(f"unknown pooling method {method!r}; choose one of {', '.join(METHODS)}")
    if not 1 <= depth <= MAX_DEPTH:
        raise Invalid(f"depth must be in 1..{MAX_DEPTH}, got {depth}")
    if budget is not None and budget < 1:
        raise Invalid(f"budget must be at least 1 judgment per query, got {budget}")
    return method


def check_allocation(allocation: str, method: str, budget: int | None) -> str:
    """Invalid unless ``allocation`` is one of :data:`ALLOCATIONS` and, for ``campaign``, the
    method is ``cal`` with a budget."""
    if allocation not in ALLOCATIONS:
        raise Invalid(f"allocation is per 'query' or over the 'campaign', not {allocation!r}")
    if allocation == "campaign":
        if method != "cal":
            raise Invalid(
                f"allocation 'campaign' (one budget over all the queries) is for method 'cal', "
                f"not {method!r}; nothing was stored"
            )
        if budget is None:
            raise Invalid(
                "allocation 'campaign' needs a budget: the documents to pool over all the "
                "queries together; nothing was stored"
            )
    return allocation


@dataclass(frozen=True, slots=True)
class QueryRef:
    """A query row as a build reads it (its row id): small and picklable, unlike the ORM row,
    so a build's inputs cross to the build process."""

    id: int


@dataclass(slots=True)
class Picked:
    """What a build computed (:func:`pick_rows`): the runs' names in run order, the rows as
    the write's parameters (:func:`app.campaign_pools.repository.pool_document_params`), the
    query ids the collection lacks, the documents dropped, the picks judged already, and the id
    of the process that computed them."""

    runs: list[str]
    rows: list[tuple[Any, ...]]
    unknown: list[str]
    dropped: int
    known: int
    pid: int


def pick_rows(
    settings: Settings,
    spec: BuildSpec,
    runs: Runs | None,
    method: Method,
    campaign: bool,
    name: str,
) -> Picked:
    """The read and the computation of a build (:func:`build_pool`), in a database of its
    own opened from ``settings`` (it runs in the build process): the stored runs read (unless
    ``runs``, the files parsed already), the collection read in a read transaction, then the
    picks computed with no transaction open (:func:`app.campaign_pools.picking.pool_rows`)."""
    db = Database(settings)
    try:
        if runs is None:
            assert spec.stored is not None
            runs = stored_rankings(db=db, collection_id=spec.collection_id, chosen=spec.stored)
        adaptive = method != "depth" and spec.feedback
        with db.read() as s:
            if not repository.collection_exists(s, spec.collection_id):
                raise NotFound(f"no collection with id {spec.collection_id}")
            _check_name_free(s, spec.collection_id, name)
            queries = {
                qid: QueryRef(q.id)
                for qid, q in repository.queries_by_id(s, spec.collection_id).items()
            }
            inputs = BuildInputs(
                runs=runs,
                queries=queries,
                documents=repository.documents_by_query(s, spec.collection_id),
                feedback=feedback_of(s, spec.collection_id) if adaptive else {},
                vectors={},
            )
            inputs.vectors = cal_vectors(
                s, spec.collection_id, runs, inputs.queries, inputs.documents, method, spec.depth
            )
    finally:
        db.dispose()
    built = pool_rows(inputs, method, spec.depth, spec.budget, campaign)  # no transaction open
    rows = repository.pool_document_params(
        {
            "query_id": r.query_id,
            "doc_id": r.doc_id,
            "position": r.position,
            "pick": r.pick,
            "fused": r.fused,
            "hits": r.hits,
        }
        for r in built.rows
    )
    return Picked(list(runs), rows, built.unknown, built.dropped, built.known, os.getpid())


#: The build process (docs/performance.md#pool-builds): one, started on the first build and
#: kept, so builds never compute in the web process (whose interpreter lock the judging loop
#: needs), at most one build computes at a time, and at the lowest CPU priority, taken before
#: it imports the service (:mod:`app.campaign_pools.build_priority`).
_build_process: ProcessPoolExecutor | None = None
_build_process_lock = threading.Lock()


def _build_executor() -> ProcessPoolExecutor:
    global _build_process
    with _build_process_lock:
        if _build_process is None:
            _build_process = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=lower_priority,
            )
        return _build_process


def stop_build_process() -> None:
    """Stop the build process, if one was started: at the web process's exit (its lifespan),
    where no build is running any more (the server waited for its requests). Not left to an
    ``atexit`` hook: uvicorn ends the process by raising SIGTERM again after its shutdown, no
    hook runs, and the idle build process outlived the server, one more per restart."""
    global _build_process
    with _build_process_lock:
        executor, _build_process = _build_process, None
    if executor is not None:
        executor.shutdown(wait=True, cancel_futures=True)


def compute_rows(
    settings: Settings,
    spec: BuildSpec,
    runs: Runs | None,
    method: Method,
    campaign: bool,
    name: str,
) -> Picked:
    """:func:`pick_rows` in the build process, with no transaction of the caller open; in
    this process for an in-memory SQLite database (no other process can open it). Conflict
    (nothing stored) when the build process dies."""
    if settings.database_url.startswith("sqlite") and ":memory:" in settings.database_url:
        return pick_rows(settings, spec, runs, method, campaign, name)
    try:
        return (
            _build_executor()
            .submit(pick_rows, settings, spec, runs, method, campaign, name)
            .result()
        )
    except BrokenProcessPool:
        global _build_process
        with _build_process_lock:
            _build_process = None
        raise Conflict("the pool build's process stopped; nothing was stored, try again") from None


def build_pool(*, db: Database, spec: BuildSpec) -> PoolView:
    """Build and store a pool (module docstring); Invalid when no run ranks a document of the
    collection's queries, or the name is taken; Conflict when the collection changed between
    the read and the write (nothing stored).

    Three phases, so that a build never holds the write lock while it computes (judging
    submits wait for that lock) and never computes in this process (its interpreter lock
    serves the judging loop): in the build process (:func:`compute_rows`), a read of the
    collection (the stored runs, queries, documents, feedback, vectors) and the picks
    computed with no transaction open; then, here, the pool written marked ``building`` in
    batches of short write transactions (:func:`_insert`)."""
    method = check_method(spec.method, spec.depth, spec.budget)
    campaign = check_allocation(spec.allocation, method, spec.budget) == "campaign"
    if spec.stored is None:  # files: parsed here, where their streams are
        runs: Runs | None = read_runs(spec.runs, spec.file_names)
        job = replace(spec, runs={}, file_names={})
    else:
        if spec.runs:
            raise Invalid("give run files or stored runs, not both")
        runs, job = None, spec
    name = spec.name or _default_name(method, spec.depth, spec.budget, spec.allocation)
    if len(name) > 100:
        raise Invalid("a pool name has at most 100 characters")
    built = compute_rows(db.settings, job, runs, method, campaign, name)
    if not built.rows:
        raise Invalid(
            "no run ranks a document of this collection's queries (query ids and document "
            "ids must be the imported ones); nothing was stored"
        )
    summary = {
        "queries": len({r[0] for r in built.rows}),
        "unknown_queries": len(built.unknown),
        "unknown_query_ids": built.unknown[:20],
        "not_in_query": built.dropped,
        "feedback": method != "depth" and spec.feedback,
        "picked_judged": built.known,
        "source": "files" if spec.stored is None else "stored",
    }
    pool = CampaignPool(
        collection_id=spec.collection_id,
        name=name,
        pool_method=method,
        depth=spec.depth,
        budget=spec.budget,
        allocation=spec.allocation,
        fusion=FUSION,
        runs=built.runs,
        summary=summary,
    )
    _insert(db, pool, built.rows)
    return _view(pool, len(built.rows), sum(1 for r in built.rows if r[3] is not None))


def _stale(pool: CampaignPool, now: datetime) -> bool:
    """A pool left ``building`` by a build that died between its batches."""
    return pool.status == "building" and pool.created_at < now - STALE_BUILD


def _status(pool: CampaignPool, now: datetime) -> str:
    return "failed" if _stale(pool, now) else pool.status


def _check_name_free(s: Any, collection_id: int, name: str) -> None:
    """Invalid when a pool of the collection has the name, a building one too (another build
    is writing it), unless that build died (:data:`STALE_BUILD`: the write deletes it)."""
    found = repository.pool_named(s, collection_id, name)
    if found is not None and not _stale(found, utcnow()):
        raise Invalid(f"the collection has a pool named {name!r} already; choose another name")


def _insert(db: Database, pool: CampaignPool, params: list[tuple[Any, ...]]) -> None:
    """The build's writes (docs/performance.md#pool-builds): first, one transaction that locks
    the collection, deletes its builds that died (:data:`STALE_BUILD`), checks the name again
    (a build beside this one may have taken it) and adds the pool marked ``building``; then
    the rows (their parameters built in the build process) in batches of :data:`BATCH_ROWS`,
    each its own transaction, a pause between two; the last batch marks the pool ``ready`` in
    its transaction. Any failure deletes the pool and what was written of it."""
    with db.write() as s:
        if not repository.lock_collection(s, pool.collection_id):
            raise NotFound(f"no collection with id {pool.collection_id}")
        repository.delete_stale_builds(s, pool.collection_id, utcnow() - STALE_BUILD)
        _check_name_free(s, pool.collection_id, pool.name)
        pool_id = repository.add_building_pool(s, pool)
    try:
        batches = [params[i : i + BATCH_ROWS] for i in range(0, len(params), BATCH_ROWS)] or [[]]
        for number, batch in enumerate(batches):
            if number:
                time.sleep(BATCH_PAUSE)
            with db.write() as s:
                repository.insert_pool_rows(s, pool_id, batch)
                if number == len(batches) - 1 and not repository.mark_ready(s, pool_id):
                    raise Conflict(
                        "the pool was deleted while it was written; nothing was stored, try again"
                    )
    except BaseException as err:
        with db.write() as s:
            repository.delete_pool(s, pool_id)
        if isinstance(err, IntegrityError):  # a query deleted since the read
            raise Conflict(
                "the collection changed while the pool was built; nothing was stored, try again"
            ) from None
        raise
    pool.status = "ready"


def _default_name(method: str, depth: int, budget: int | None, allocation: str) -> str:
    total = "-campaign" if allocation == "campaign" else ""
    return f"{method}-{depth}" + (f"-b{budget}" if budget is not None else "") + total


def _view(pool: CampaignPool, documents: int, picked: int, status: str = "ready") -> PoolView:
    return PoolView(
        id=pool.id,
        collection_id=pool.collection_id,
        name=pool.name,
        method=pool.pool_method,
        depth=pool.depth,
        budget=pool.budget,
        allocation=pool.allocation,
        fusion=pool.fusion,
        runs=list(pool.runs),
        summary=dict(pool.summary),
        created_at=pool.created_at,
        documents=documents,
        picked=picked,
        status=status,
    )


def list_pools(*, db: Database, collection_id: int) -> list[PoolView]:
    """The collection's pools, newest first (404 for an unknown collection); a pool being
    written is listed as ``building`` (or ``failed``, :data:`STALE_BUILD`) with counts 0."""
    now = utcnow()
    with db.read() as s:
        if not repository.collection_exists(s, collection_id):
            raise NotFound(f"no collection with id {collection_id}")
        pools = repository.pools_of(s, collection_id)
        counts = repository.picked_counts(s, [p.id for p in pools if p.status == "ready"])
        return [_view(p, *counts.get(p.id, (0, 0)), _status(p, now)) for p in pools]


def get_pool(
    *, db: Database, pool_id: int, query_ids: Sequence[str] | None = None
) -> tuple[PoolView, list[PooledRow]]:
    """A pool and its documents (of ``query_ids`` only, when given), by query and fused
    position, each with its runs and ranks; a pool being written: its status, no documents."""
    with db.read() as s:
        pool = repository.get_pool(s, pool_id)
        if pool is None:
            raise NotFound(f"no pool with id {pool_id}")
        if pool.status != "ready":
            return _view(pool, 0, 0, _status(pool, utcnow())), []
        found = repository.pool_documents(s, pool_id, query_ids)
        rows = [
            PooledRow(
                qid,
                d.doc_id,
                d.position,
                d.pick,
                d.fused,
                [(str(run), int(rank)) for run, rank in d.hits],
            )
            for qid, d in found
        ]
        if query_ids is None:
            total, picked = len(rows), sum(1 for r in rows if r.pick is not None)
        else:
            total, picked = repository.picked_counts(s, [pool_id]).get(pool_id, (0, 0))
        return _view(pool, total, picked), rows


def plan_pools(
    s: Any, collection_id: int, pool_id: int, query_ids: Sequence[str]
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """For the planner, in its session: per query, the picked documents in the method's
    judging order, and the same documents in fused order (the prior). Invalid when the pool
    is not the collection's, or is not ready (being written, or its build failed)."""
    pool = repository.get_pool(s, pool_id)
    if pool is None or pool.collection_id != collection_id:
        raise Invalid(f"the collection has no pool with id {pool_id}")
    if pool.status != "ready":
        raise Invalid(
            f"pool {pool_id} is still being built (or its build failed); plan from a ready pool"
        )
    picks: dict[str, list[tuple[int, str]]] = {}
    fused: dict[str, list[str]] = {}
    for qid, d in repository.pool_documents(s, pool_id, query_ids):
        if d.pick is not None:
            picks.setdefault(qid, []).append((d.pick, d.doc_id))
            fused.setdefault(qid, []).append(d.doc_id)
    return {q: [doc for _, doc in sorted(v)] for q, v in picks.items()}, fused
