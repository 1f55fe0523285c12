"""Use cases: plan a labeling study (assessors × queries × methods), preview it, create tasks.

A :class:`PlanSpec` names the collection, the assessors, the queries (default: all), a scheme
and the task settings:

* ``scheme="rotation"`` — the paper's fold rotation
  (:func:`labeling.study.assignment.fold_rotation`;
  ``shifts=(0, 2)`` adds the shift-by-2 second assignment);
* ``scheme="balanced"`` — ``per_query`` assessors per query and method, seeded
  (:func:`labeling.study.assignment.plan_balanced`);
* ``scheme="csv"`` — an admin's own plan (``assessor,query_id,method[,label]``).

Settings per plan: ``k``, options per method (validated by the labeling core), and the pool
(:mod:`labeling.study.pools`: all documents, a seeded sample of n, the top n of a TREC run or the
top
n by BM25, optionally deduplicated by content). A ranked pool takes the first n documents of
the ranking that the query has; the preview warns, per query, how many of the ranking's top n
it could not take and why (not in the collection, or not among the query's documents). The
pool is computed once per query and shared by every task on that query, so assessors of one
query judge the same documents (agreement needs that).

The top-k tasks' judging strategy is the option ``strategy`` (:func:`labeling.strategies.
strategy_names`; ``PlanSpec.strategy`` sets it), and their prior (``PlanSpec.prior``: none,
bm25, feature:<number>, run) is resolved per query into ``initial_order`` when the plan is
previewed (:mod:`app.planning.priors`). The preview gives, per query and in total, the
expected judgments and minutes of each method (:func:`expected_cost`), so an admin can compare
strategies before a study starts (``docs/strategies-in-practice.md#planning``).

:func:`preview_plan` computes everything and checks the constraints (the pure validator plus
the database: unknown or disabled users, queries without documents, tasks that already exist)
without writing; :func:`create_plan` runs the same check and inserts all the tasks in ONE write
transaction, serialised per collection (all or nothing; two plans created at once cannot both
pass the check against the existing tasks).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from app.kernel.db import Database
from app.kernel.errors import Invalid, NotFound, issue_items
from app.kernel.models import Collection, Document, Query, Task, User
from app.planning.priors import PriorResolver, PriorSource, check_source
from app.retrieval import service as retrieval
from labeling.errors import ConfigError
from labeling.protocol.options import validate_options
from labeling.protocol.prior_orders import NO_PRIOR
from labeling.protocol.session import open_session
from labeling.sources import SourceError
from labeling.strategies.registry import makes_repeats
from labeling.study.assignment import (
    Plan,
    PlanEntry,
    PlanError,
    Violation,
    fold_rotation,
    plan_balanced,
    validate_plan,
)
from labeling.study.plan_csv import plan_from_csv
from labeling.study.pools import build_pool, content_hash, parse_trec_run
from labeling.study.simulation import GRADE_SECONDS, PAIR_SECONDS

SCHEMES = ("rotation", "balanced", "csv")
#: What the preview's expected judgments and minutes mean (shown with them).
COST_MODEL = {
    "topk_judgments": "the strategy's own expected count at the start of a task (session "
    "progress: a consistent assessor, documents in random order; a good prior makes "
    "insertion cheaper than this)",
    "graded_judgments": "one grade per document of the pool",
    "seconds_per_pair": PAIR_SECONDS,
    "seconds_per_grade": GRADE_SECONDS,
    "minutes": "judgments times the time model's mean seconds per judgment "
    "(labeling.study.simulation.TimeModel: 13.87 s per grade, 13.87/2.5 = 5.55 s per pair)",
}
#: Pool modes that cut a ranking (a run, or BM25) at n.
RANKED_POOLS = ("run", "bm25")


@dataclass(frozen=True, slots=True)
class PoolSpec:
    """How each query's judging pool is chosen (see :func:`labeling.study.pools.build_pool`)."""

    mode: str = "all"
    """``all``, ``sample``, ``run`` (top n of ``run``) or ``bm25`` (top n of the query's
    documents by BM25 over the collection, :mod:`app.retrieval.service`)."""
    n: int | None = None
    seed: int = 0
    dedupe: bool = False
    run: str | None = None
    """TREC run text for ``mode="run"``."""
    run_order: bool = False
    """With ``mode="run"``/``"bm25"``: top-k tasks start from the pool's ranking (the same as
    ``PlanSpec.prior`` = ``run``/``bm25`` with that run)."""


@dataclass(frozen=True, slots=True)
class PlanSpec:
    collection_id: int
    assessors: Sequence[str] = ()
    query_ids: Sequence[str] | None = None
    scheme: str = "rotation"
    shifts: Sequence[int] = (0, 2)
    per_query: Mapping[str, int] = field(default_factory=lambda: {"topk": 2, "graded": 2})
    seed: int = 0
    csv: str | None = None
    name: str = "plan"
    k: int = 10
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    pool: PoolSpec = field(default_factory=PoolSpec)
    strategy: str | None = None
    """The top-k tasks' judging strategy (None: ``options["topk"]["strategy"]`` or heap)."""
    prior: str = NO_PRIOR
    """Where the top-k tasks' initial order comes from: none, bm25, feature:<number>, run."""
    prior_run: str | None = None
    """TREC run text of ``prior="run"`` (default: the pool's run, ``pool.run``)."""
    second_opinions: bool = True
    """With a ``+robust`` strategy: route each top-k task's repeats to the plan's other top-k
    assessors of its query (option ``second_assessor``; docs/noise.md#routing-re-asks-to-a-
    second-assessor). The timeout is ``options.topk.second_opinion_timeout_s``."""


@dataclass(frozen=True, slots=True)
class PlannedTask:
    assessor: str
    query_id: str
    method: str
    label: str
    seed: int
    n: int
    second_assessor: tuple[str, ...] = ()
    """Top-k with a ``+robust`` strategy: the plan's other top-k assessors of the query, who
    get this task's repeats (empty: none, or ``PlanSpec.second_opinions`` off)."""


@dataclass(slots=True)
class PlanPreview:
    """Everything the preview page shows: the grid, loads, pools and every problem."""

    spec: PlanSpec
    assessors: list[str]
    query_ids: list[str]
    tasks: list[PlannedTask]
    grid: dict[str, dict[str, str]]
    """grid[assessor][query_id] = "topk" / "graded" (or "topk+graded" on a conflict)."""
    loads: dict[str, dict[str, int]]
    pool_sizes: dict[str, int]
    violations: list[dict[str, Any]]
    options: dict[str, dict[str, Any]]
    pool_lost: dict[str, dict[str, int]] = field(default_factory=dict)
    """Ranked pools (run, bm25): per query, documents of the ranking's top n the pool could
    not take (``not_in_collection``, ``not_in_query``); also one warning per query."""
    prior: str = NO_PRIOR
    """The top-k tasks' prior source (as requested; each task records its resolved spec)."""
    cost: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per query: ``topk_judgments``, ``topk_minutes``, ``graded_judgments``,
    ``graded_minutes`` for ONE task of each method (:func:`expected_cost`)."""
    totals: dict[str, float] = field(default_factory=dict)
    """Sums over the plan's tasks: ``topk_judgments``, ``topk_minutes``, ``graded_judgments``,
    ``graded_minutes``, ``judgments``, ``minutes``."""

    @property
    def strategy(self) -> str:
        return str(self.options["topk"]["strategy"])

    @property
    def ok(self) -> bool:
        return not any(v["severity"] == "error" for v in self.violations)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "name": self.spec.name,
            "scheme": self.spec.scheme,
            "k": self.spec.k,
            "options": self.options,
            "assessors": self.assessors,
            "query_ids": self.query_ids,
            "tasks": [_task_dict(t) for t in self.tasks],
            "grid": self.grid,
            "loads": self.loads,
            "pool_sizes": self.pool_sizes,
            "pool_lost": self.pool_lost,
            "violations": self.violations,
            "strategy": self.strategy,
            "prior": self.prior,
            "cost": self.cost,
            "totals": self.totals,
            "cost_model": COST_MODEL,
        }


def _task_dict(t: PlannedTask) -> dict[str, Any]:
    return {
        "assessor": t.assessor,
        "query_id": t.query_id,
        "method": t.method,
        "label": t.label,
        "seed": t.seed,
        "n": t.n,
        "second_assessor": list(t.second_assessor),
    }


def task_seed(plan_seed: int, assessor: str, query_id: str, method: str) -> int:
    """A task's protocol seed: a hash of (plan seed, assessor, query, method), so re-planning
    with the same seed reproduces every task, and different assessors see different orders."""
    digest = hashlib.sha256(f"{plan_seed}|{assessor}|{query_id}|{method}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _violation(v: Violation) -> dict[str, Any]:
    return {
        "code": v.code,
        "severity": v.severity,
        "message": v.message,
        "assessor": v.assessor,
        "query_id": v.query_id,
        "method": v.method,
    }


def _error(code: str, message: str, **where: Any) -> dict[str, Any]:
    return {
        "code": code,
        "severity": "error",
        "message": message,
        "assessor": where.get("assessor"),
        "query_id": where.get("query_id"),
        "method": where.get("method"),
    }


def _build_plan(spec: PlanSpec, query_ids: list[str]) -> Plan:
    try:
        if spec.scheme == "rotation":
            return fold_rotation(spec.assessors, query_ids, shifts=spec.shifts)
        if spec.scheme == "balanced":
            return plan_balanced(
                spec.assessors, query_ids, per_query=spec.per_query, seed=spec.seed
            )
        if spec.scheme == "csv":
            if not spec.csv:
                raise Invalid("scheme 'csv' needs the plan CSV")
            plan = plan_from_csv(spec.csv, file="plan.csv")
            assessors = list(spec.assessors) or list(plan.assessors)
            return Plan(plan.entries, tuple(assessors), tuple(query_ids))
    except SourceError as err:
        raise Invalid(
            issue_items(err.issues),
            extra={"message": "the plan CSV has errors; nothing was planned"},
        ) from None
    except PlanError as err:
        raise Invalid(str(err)) from None
    except ConfigError as err:
        raise Invalid(str(err)) from None
    raise Invalid(f"unknown scheme {spec.scheme!r}; expected one of {', '.join(SCHEMES)}")


def _pools(
    s: Any, collection_id: int, queries: dict[str, Query], pool: PoolSpec
) -> tuple[dict[str, list[str]], dict[str, dict[str, int]]]:
    """Each query's pool, and for ranked pools (``run``, ``bm25``) what the cut lost: per
    query, how many of the ranking's top n are not in the collection at all
    (``not_in_collection``) or are in it but not among this query's documents
    (``not_in_query``)."""
    ranking: dict[str, list[str]] = {}
    if pool.mode == "run":
        if not pool.run:
            raise Invalid("pool mode 'run' needs a TREC run")
        try:
            parsed = parse_trec_run(pool.run, file="run")
        except SourceError as err:
            raise Invalid(
                issue_items(err.issues),
                extra={"message": "the run has errors; nothing was planned"},
            ) from None
        ranking = {q: [e.doc_id for e in entries] for q, entries in parsed.items()}
    elif pool.mode == "bm25":
        ranking = retrieval.bm25_rankings(s, collection_id, list(queries))
    ranked = pool.mode in RANKED_POOLS
    in_collection: set[str] = set()
    if ranked:
        in_collection = set(
            s.scalars(
                select(Document.external_id)
                .where(Document.collection_id == collection_id)
                .distinct()
            )
        )
    out: dict[str, list[str]] = {}
    lost: dict[str, dict[str, int]] = {}
    for qid, query in queries.items():
        docs = list(
            s.scalars(select(Document).where(Document.query_id == query.id).order_by(Document.id))
        )
        ids = [d.external_id for d in docs]
        hashes = (
            {d.external_id: content_hash(d.title, d.text, d.html) for d in docs}
            if pool.dedupe
            else None
        )
        try:
            chosen = build_pool(
                ids,
                mode="run" if ranked else pool.mode,  # type: ignore[arg-type]
                n=pool.n,
                seed=pool.seed,
                run=ranking.get(qid, []) if ranked else None,
                hashes=hashes,
            )
        except ConfigError as err:
            raise Invalid(f"pool of query {qid}: {err}") from None
        out[qid] = list(chosen.doc_ids)
        if ranked:
            top = ranking.get(qid, [])[: pool.n]
            have = set(ids)
            missing = [d for d in top if d not in have]
            if missing:
                outside = sum(1 for d in missing if d not in in_collection)
                lost[qid] = {
                    "considered": len(top),
                    "not_in_collection": outside,
                    "not_in_query": len(missing) - outside,
                }
    return out, lost


def _lost_warning(
    qid: str, mode: str, n: int | None, lost: dict[str, int], size: int
) -> dict[str, Any]:
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


def _options(spec: PlanSpec) -> dict[str, dict[str, Any]]:
    """Each method's validated options; ``spec.strategy`` goes into the top-k options (an
    unknown name is a 422 listing the valid ones). ``initial_order`` and ``prior`` are per
    query, so a plan sets them through ``spec.prior`` only."""
    unknown = sorted(set(spec.options) - {"topk", "graded"})
    if unknown:
        raise Invalid(f"options are given per method (topk, graded), not {', '.join(unknown)}")
    if spec.k < 1:
        raise Invalid("k must be at least 1")
    topk = dict(spec.options.get("topk") or {})
    if topk.get("second_assessor") is not None:
        raise Invalid(
            "options.topk.second_assessor is per task: a plan gives each +robust top-k task "
            "the other top-k assessors of its query (second_opinions)"
        )
    for key in ("initial_order", "prior"):
        if topk.get(key) is not None:
            raise Invalid(
                f"options.topk.{key} is per query: choose the plan's prior (none, bm25, "
                "feature:<number>, run) instead"
            )
    if spec.strategy is not None:
        named = topk.get("strategy")
        if named is not None and named != spec.strategy:
            raise Invalid(
                f"strategy {spec.strategy!r} and options.topk.strategy {named!r} disagree"
            )
        topk["strategy"] = spec.strategy
    try:
        return {
            "topk": validate_options("topk", topk),
            "graded": validate_options("graded", spec.options.get("graded")),
        }
    except ConfigError as err:
        raise Invalid(str(err)) from None


def _prior_source(spec: PlanSpec) -> PriorSource:
    """The plan's prior: ``spec.prior``, or the pool's ranking with ``pool.run_order``."""
    prior = spec.prior or NO_PRIOR
    if spec.pool.run_order and spec.pool.mode in RANKED_POOLS:
        if prior not in (NO_PRIOR, spec.pool.mode):
            raise Invalid(
                f"the pool's ranking order ({spec.pool.mode}) and prior {prior!r} disagree; "
                "choose one"
            )
        prior = spec.pool.mode
    run = None
    if prior == "run":
        run = spec.prior_run or spec.pool.run
        if not run:
            if spec.pool.mode == "run":
                raise Invalid("pool mode 'run' needs a TREC run")
            raise Invalid("prior 'run' needs a TREC run (upload one, or pool from a run)")
    return check_source(prior, run)


def expected_cost(
    method: str, doc_ids: list[str], *, k: int, options: dict[str, Any]
) -> tuple[float, float]:
    """``(judgments, minutes)`` expected for one task of ``method`` on ``doc_ids``.

    Top-k: the expected count of the task's strategy at the start,
    ``open_session(...).progress().expected_remaining`` (its model for a consistent assessor
    on a random order; re-asks included when ``reask_fraction`` > 0); graded: one grade per
    document. Minutes = judgments × the time model's mean seconds per judgment / 60
    (:class:`labeling.study.simulation.TimeModel`: ``PAIR_SECONDS`` = 13.87/2.5 = 5.55 s per pair,
    ``GRADE_SECONDS`` = 13.87 s per grade, after Niu et al., SIGIR 2012, Table 1)."""
    if not doc_ids:
        return 0.0, 0.0
    if method == "graded":
        judgments = float(len(doc_ids))
        return judgments, judgments * GRADE_SECONDS / 60.0
    progress = open_session("topk", doc_ids, k=k, seed=0, options=options).progress()
    judgments = 0.0 if progress.done else progress.expected_remaining
    return judgments, judgments * PAIR_SECONDS / 60.0


def preview_plan(*, db: Database, spec: PlanSpec) -> PlanPreview:
    """Build the plan, its pools and every violated constraint, without writing anything."""
    options = _options(spec)
    prior = _prior_source(spec)
    with db.read() as s:
        return _preview_in(s, spec, options, prior)[0]


#: A query's resolved prior: (initial_order, recorded prior spec).
Resolved = tuple[list[str] | None, str]


def _preview_in(
    s: Any, spec: PlanSpec, options: dict[str, dict[str, Any]], prior: PriorSource
) -> tuple[PlanPreview, dict[str, list[str]], dict[str, Resolved]]:
    """The preview computed with session ``s`` (read or write transaction), plus the pools and
    each top-k query's resolved prior.

    :func:`create_plan` calls this inside its write transaction, so the check against the
    existing tasks sees every plan committed before it (see there)."""
    if s.get(Collection, spec.collection_id) is None:
        raise NotFound(f"no collection with id {spec.collection_id}")
    all_queries = {
        q.external_id: q
        for q in s.scalars(
            select(Query).where(Query.collection_id == spec.collection_id).order_by(Query.id)
        )
    }
    if spec.query_ids is None:
        query_ids = list(all_queries)
    else:
        query_ids = list(dict.fromkeys(str(q) for q in spec.query_ids))
    extra: list[dict[str, Any]] = []
    for q in query_ids:
        if q not in all_queries:
            extra.append(_error("unknown_query", f"no query {q!r} in this collection", query_id=q))
    plan = _build_plan(spec, query_ids)
    names = list(dict.fromkeys([*plan.assessors, *(e.assessor for e in plan.entries)]))
    users = {u.username: u for u in s.scalars(select(User).where(User.username.in_(names)))}
    for name in names:
        user = users.get(name)
        if user is None:
            extra.append(_error("unknown_user", f"no user named {name!r}", assessor=name))
        elif user.disabled:
            extra.append(_error("disabled_user", f"user {name!r} is disabled", assessor=name))
    known = {q: all_queries[q] for q in query_ids if q in all_queries}
    pools, lost = _pools(s, spec.collection_id, known, spec.pool)
    for q, ids in pools.items():
        if not ids:
            extra.append(_error("empty_pool", f"query {q} has no documents to judge", query_id=q))
    topk_queries = [
        q
        for q in dict.fromkeys(e.query_id for e in plan.entries if e.method == "topk")
        if pools.get(q)
    ]
    resolver = PriorResolver(s, spec.collection_id, prior)
    resolver.prefetch(topk_queries)
    resolved: dict[str, Resolved] = {}
    for q in topk_queries:
        try:
            resolved[q] = resolver.resolve(known[q], pools[q])
        except Invalid as err:
            extra.append(_error("prior", str(err.detail), query_id=q))
    existing = s.execute(
        select(User.username, Query.external_id, Task.method, Task.id)
        .join(User, User.id == Task.assessor_id)
        .join(Query, Query.id == Task.query_id)
        .where(Task.collection_id == spec.collection_id, Task.status != "cancelled")
    ).all()
    have: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for name, qid, method, tid in existing:
        have.setdefault((name, qid), []).append((method, tid))
    for e in plan.entries:
        for method, tid in have.get((e.assessor, e.query_id), []):
            if method == e.method:
                extra.append(
                    _error(
                        "exists",
                        f"{e.assessor} already has a {method} task on query {e.query_id} "
                        f"(task {tid})",
                        assessor=e.assessor,
                        query_id=e.query_id,
                        method=method,
                    )
                )
            else:
                extra.append(
                    _error(
                        "both_methods",
                        f"{e.assessor} already judges query {e.query_id} with {method} "
                        f"(task {tid}); requirement b",
                        assessor=e.assessor,
                        query_id=e.query_id,
                    )
                )
    per_query = None
    if spec.scheme == "balanced":
        per_query = dict(spec.per_query)
    elif spec.scheme == "rotation":
        r = len(tuple(spec.shifts))
        per_query = {"topk": r, "graded": r}
    violations = [_violation(v) for v in validate_plan(plan, per_query=per_query)]
    violations = (
        [v for v in violations if v["severity"] == "error"]
        + extra
        + [v for v in violations if v["severity"] != "error"]
        + [
            _lost_warning(q, spec.pool.mode, spec.pool.n, info, len(pools[q]))
            for q, info in lost.items()
        ]
    )
    grid: dict[str, dict[str, str]] = {a: {} for a in plan.assessors}
    for e in plan.entries:
        cell = grid.setdefault(e.assessor, {})
        cell[e.query_id] = e.method if e.query_id not in cell else f"{cell[e.query_id]}+{e.method}"
    routes = spec.second_opinions and makes_repeats(options["topk"]["strategy"])
    topk_assessors: dict[str, list[str]] = {}
    for e in plan.entries:
        if e.method == "topk":
            topk_assessors.setdefault(e.query_id, []).append(e.assessor)
    tasks = [
        PlannedTask(
            e.assessor,
            e.query_id,
            e.method,
            e.label,
            task_seed(spec.seed, e.assessor, e.query_id, e.method),
            len(pools.get(e.query_id, [])),
            tuple(dict.fromkeys(a for a in topk_assessors[e.query_id] if a != e.assessor))
            if routes and e.method == "topk"
            else (),
        )
        for e in plan.entries
    ]
    cost = _plan_cost(spec, options, pools, resolved, tasks)
    totals: dict[str, float] = {}
    for t in tasks:
        one = cost.get(t.query_id, {})
        for what in ("judgments", "minutes"):
            value = one.get(f"{t.method}_{what}", 0.0)
            totals[f"{t.method}_{what}"] = totals.get(f"{t.method}_{what}", 0.0) + value
            totals[what] = totals.get(what, 0.0) + value
    preview = PlanPreview(
        spec=spec,
        assessors=list(plan.assessors),
        query_ids=list(plan.query_ids),
        tasks=tasks,
        grid=grid,
        loads=plan.load(),
        pool_sizes={q: len(v) for q, v in pools.items()},
        violations=violations,
        options=options,
        pool_lost=lost,
        prior=prior.spec,
        cost=cost,
        totals={key: round(value, 1) for key, value in totals.items()},
    )
    return preview, pools, resolved


def _plan_cost(
    spec: PlanSpec,
    options: dict[str, dict[str, Any]],
    pools: dict[str, list[str]],
    resolved: dict[str, Resolved],
    tasks: list[PlannedTask],
) -> dict[str, dict[str, float]]:
    """Per query, the expected judgments and minutes of one task of each method it has."""
    methods: dict[str, set[str]] = {}
    for t in tasks:
        methods.setdefault(t.query_id, set()).add(t.method)
    cost: dict[str, dict[str, float]] = {}
    for q, used in methods.items():
        ids = pools.get(q, [])
        row: dict[str, float] = {}
        for method in sorted(used):
            opts = dict(options[method])
            if method == "topk":
                if q not in resolved:
                    continue  # its prior failed: reported as a violation
                opts["initial_order"], opts["prior"] = resolved[q]
            try:
                judgments, minutes = expected_cost(method, ids, k=spec.k, options=opts)
            except ConfigError:
                continue  # create_plan reports the config error with the task's name
            row[f"{method}_judgments"] = round(judgments, 1)
            row[f"{method}_minutes"] = round(minutes, 1)
        cost[q] = row
    return cost


@dataclass(frozen=True, slots=True)
class CreatedPlan:
    name: str
    task_ids: list[int]
    warnings: list[dict[str, Any]]


def create_plan(*, db: Database, spec: PlanSpec) -> CreatedPlan:
    """Create every task of the plan in one transaction; 422 with the violations if the plan
    has any error (warnings, such as uneven loads, do not block).

    The constraint check (notably "no assessor sees a query under both methods" and "no task
    twice" against the tasks that already exist) runs INSIDE the write transaction that inserts
    the tasks, after plan creation on the collection has been serialised, so two plans created
    at the same moment cannot both pass it: on SQLite the write transaction is ``BEGIN
    IMMEDIATE`` (plus the process's writer lock; :meth:`app.kernel.db.Database.write`), so it holds
    the database's single write lock from its first statement; on Postgres (READ COMMITTED)
    the collection row is locked first with ``SELECT ... FOR NO KEY UPDATE``, so a second plan
    waits for the first to commit and its check statements, each with a fresh snapshot, then
    see the first plan's tasks."""
    options = _options(spec)
    prior = _prior_source(spec)
    created: list[int] = []
    with db.write() as s:
        # Postgres: FOR NO KEY UPDATE (key_share=True) conflicts with itself, so plans on one
        # collection queue here just as with FOR UPDATE, yet it leaves alone the KEY SHARE
        # locks that foreign-key checks of other inserts take on the row (imports, single
        # tasks). SQLite ignores the clause: BEGIN IMMEDIATE has serialised us already.
        locked = s.execute(
            select(Collection.id)
            .where(Collection.id == spec.collection_id)
            .with_for_update(key_share=True)
        ).scalar_one_or_none()
        if locked is None:
            raise NotFound(f"no collection with id {spec.collection_id}")
        preview, pools, resolved = _preview_in(s, spec, options, prior)
        if not preview.ok:
            raise Invalid(
                # Each violation as an error item: ``msg`` (what every 422 item has) and its
                # ``code``, ``message`` and where (docs/rest-api.md#errors).
                [
                    {"msg": v["message"], **v}
                    for v in preview.violations
                    if v["severity"] == "error"
                ],
                extra={"message": "the plan violates its constraints; no task was created"},
            )
        if not preview.tasks:
            raise Invalid("the plan has no tasks")
        queries = {
            q.external_id: q
            for q in s.scalars(select(Query).where(Query.collection_id == spec.collection_id))
        }
        users = {
            u.username: u
            for u in s.scalars(select(User).where(User.username.in_(preview.assessors)))
        }
        tasks: list[Task] = []
        for t in preview.tasks:
            doc_ids = pools[t.query_id]
            opts = dict(preview.options[t.method])
            if t.method == "topk":
                opts["initial_order"], opts["prior"] = resolved[t.query_id]
                if t.second_assessor:
                    opts["second_assessor"] = list(t.second_assessor)
            try:
                # Fail now, not at the first judgment, if the protocol cannot run this config.
                open_session(t.method, doc_ids, k=spec.k, seed=t.seed, options=opts, answers=())
            except ConfigError as err:
                raise Invalid(f"task {t.assessor}/{t.query_id}/{t.method}: {err}") from None
            label = f"{spec.name}:{t.label}" if t.label else spec.name
            task = Task(
                collection_id=spec.collection_id,
                query_id=queries[t.query_id].id,
                assessor_id=users[t.assessor].id,
                method=t.method,
                k=spec.k,
                seed=t.seed,
                options=opts,
                doc_ids=doc_ids,
                status="pending",
                plan=label[:100],
            )
            s.add(task)
            tasks.append(task)
        s.flush()
        created = [t.id for t in tasks]
    return CreatedPlan(
        name=spec.name,
        task_ids=created,
        warnings=[v for v in preview.violations if v["severity"] != "error"],
    )


def plan_entries_csv(preview: PlanPreview) -> str:
    """The previewed plan as CSV (for editing and re-import with ``scheme="csv"``)."""
    from labeling.study.plan_csv import plan_to_csv

    plan = Plan(
        tuple(PlanEntry(t.assessor, t.query_id, t.method, t.label) for t in preview.tasks),  # type: ignore[arg-type]
        tuple(preview.assessors),
        tuple(preview.query_ids),
    )
    return plan_to_csv(plan)
