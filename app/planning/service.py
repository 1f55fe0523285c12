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
previewed (:mod:`app.tasks.priors`). The preview gives, per query and in total, the
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
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from app.kernel.db import Database
from app.kernel.errors import Invalid, NotFound, issue_items
from app.kernel.models import Query
from app.kernel.settings import Settings
from app.machine import service as machine
from app.machine.judges import PreparedScores
from app.planning import checks, repository
from app.planning.cost import (
    Resolved,
    cost_totals,
    plan_cost,
    strategy_candidates,
    strategy_rows,
)
from app.planning.machine import MachineAccuracy, preview_accuracy
from app.planning.pooling import (
    RANKED_POOLS,
    STORED_POOL,
    fused_prior,
    lost_warning,
    plan_query_pools,
    pool_summary,
)
from app.planning.spec import PlannedTask, PlanPreview, PlanSpec
from app.tasks import service as tasks
from app.tasks.priors import (
    PriorResolver,
    PriorSource,
    StoredRun,
    check_source,
    load_stored_run,
)
from labeling.errors import ConfigError
from labeling.protocol.prior_orders import NO_PRIOR
from labeling.protocol.spec import MachineSpec, TaskSpec, parse_source, parse_spec
from labeling.sources import SourceError
from labeling.strategies.registry import parse_strategy
from labeling.study.assignment import (
    Plan,
    PlanEntry,
    PlanError,
    fold_rotation,
    plan_balanced,
    validate_plan,
)
from labeling.study.plan_csv import plan_from_csv, plan_to_csv

SCHEMES = ("rotation", "balanced", "csv")


def task_seed(plan_seed: int, assessor: str, query_id: str, method: str) -> int:
    """A task's protocol seed: a hash of (plan seed, assessor, query, method), so re-planning
    with the same seed reproduces every task, and different assessors see different orders."""
    digest = hashlib.sha256(f"{plan_seed}|{assessor}|{query_id}|{method}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


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


def _task_specs(spec: PlanSpec) -> dict[str, TaskSpec]:
    """Each method's task spec (the plan's k; seeds are per task); ``spec.strategy`` and
    ``spec.machine`` go into the top-k spec (an unknown name is a 422 listing the valid ones).
    ``initial_order`` and ``prior`` are per query, so a plan sets them through ``spec.prior``
    only, and ``second_assessor`` per task (``spec.second_opinions``)."""
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
    try:
        top = parse_spec("topk", topk, k=spec.k)
        if spec.strategy is not None:
            chosen = parse_strategy(spec.strategy)
            if "strategy" in topk and top.strategy != chosen:
                raise Invalid(
                    f"strategy {spec.strategy!r} and options.topk.strategy "
                    f"{top.strategy.name!r} disagree"
                )
            top = replace(top, strategy=chosen)
        if spec.machine is not None:
            source = parse_source(spec.machine, "machine")
            if top.machine is not None and top.machine.source != source:
                raise Invalid(
                    f"machine {spec.machine!r} and options.topk.machine "
                    f"{top.machine.source.text!r} disagree"
                )
            top = replace(top, machine=top.machine or MachineSpec(source))
        if spec.machine_max_loss is not None:
            if top.machine is None:
                raise Invalid("machine_max_loss is the loss a machine may cost: choose a machine")
            top = replace(top, machine=replace(top.machine, max_loss=spec.machine_max_loss))
        return {"topk": top, "graded": parse_spec("graded", spec.options.get("graded"), k=spec.k)}
    except ConfigError as err:
        raise Invalid(str(err)) from None


def _options(specs: Mapping[str, TaskSpec]) -> dict[str, dict[str, Any]]:
    """Each method's options as JSON (what the preview shows and the cost model reads)."""
    return {method: task.options() for method, task in specs.items()}


def _stored_runs(db: Database, spec: PlanSpec) -> tuple[StoredRun | None, StoredRun | None]:
    """The runs stored on the collection that the plan names, read before its transaction:
    the pool's (``pool.stored_run``) and the prior's (``prior_stored_run``); a 422 naming the
    field for a name the collection lacks, or a stored run given with its text too."""
    pool = spec.pool
    if pool.stored_run is not None and pool.mode != "run":
        raise Invalid(f"pool.stored_run is the run of pool mode 'run', not {pool.mode!r}")
    if pool.stored_run is not None and pool.run is not None:
        raise Invalid("pool: give the run's text (run) or a stored run's name (stored_run)")
    if spec.prior_stored_run is not None and spec.prior_run is not None:
        raise Invalid("give the prior's run as text (prior_run) or by name (prior_stored_run)")
    if spec.prior_stored_run is not None and (spec.prior or NO_PRIOR) != "run":
        raise Invalid(f"prior_stored_run is the run of prior 'run', not {spec.prior!r}")
    load = [(pool.stored_run, "pool.stored_run"), (spec.prior_stored_run, "prior_stored_run")]
    found = [
        None if name is None else load_stored_run(db, spec.collection_id, name, field)
        for name, field in load
    ]
    return found[0], found[1]


def _prior_source(
    spec: PlanSpec, stored: tuple[StoredRun | None, ...] = (None, None)
) -> PriorSource:
    """The plan's prior: ``spec.prior``, or the pool's ranking with ``pool.run_order``;
    ``stored``: the pool's and the prior's stored runs (:func:`_stored_runs`)."""
    prior = spec.prior or NO_PRIOR
    if spec.pool.mode != STORED_POOL and spec.pool.pool_id is not None:
        raise Invalid("pool_id names a pool from runs: give it with pool mode 'runs'")
    if spec.pool.run_order and spec.pool.mode == STORED_POOL and prior != NO_PRIOR:
        raise Invalid(
            f"the pool's fused order and prior {prior!r} disagree; choose one (run_order or prior)"
        )
    if spec.pool.run_order and spec.pool.mode in RANKED_POOLS:
        if prior not in (NO_PRIOR, spec.pool.mode):
            raise Invalid(
                f"the pool's ranking order ({spec.pool.mode}) and prior {prior!r} disagree; "
                "choose one"
            )
        prior = spec.pool.mode
    if prior != "run":
        return check_source(prior)
    pool_stored, prior_stored = stored
    run, by_name = spec.prior_run, prior_stored
    if run is None and by_name is None:  # the pool's run, as text or by name
        run, by_name = spec.pool.run, pool_stored
    if not run and by_name is None:
        if spec.pool.mode == "run":
            raise Invalid("pool mode 'run' needs a TREC run (run, or stored_run)")
        raise Invalid(
            "prior 'run' needs a TREC run (prior_run, prior_stored_run, or pool from a run)"
        )
    return check_source(prior, run or None, by_name)


def preview_plan(*, db: Database, spec: PlanSpec) -> PlanPreview:
    """Build the plan, its pools and every violated constraint, without writing anything."""
    specs = _task_specs(spec)
    stored = _stored_runs(db, spec)
    prior = _prior_source(spec, stored)
    with db.read() as s:
        if not repository.collection_exists(s, spec.collection_id):
            raise NotFound(f"no collection with id {spec.collection_id}")
        source = machine.check_machine(s, spec.collection_id, specs["topk"].machine, db.settings)
    text = None if source is None else source.text
    accuracy = preview_accuracy(db, spec.collection_id, text, spec.machine_accuracy)
    with db.read() as s:
        preview = _preview_in(s, spec, specs, prior, db.settings, accuracy, pool_run=stored[0])[0]
    return preview


def _query_ids(spec: PlanSpec, all_queries: Mapping[str, Query]) -> list[str]:
    """The plan's queries: the spec's (deduplicated, in order), else every query."""
    if spec.query_ids is None:
        return list(all_queries)
    return list(dict.fromkeys(str(q) for q in spec.query_ids))


def _resolve_priors(
    s: Any,
    spec: PlanSpec,
    prior: PriorSource,
    topk_queries: list[str],
    known: Mapping[str, Query],
    pools: Mapping[str, list[str]],
    settings: Settings,
    fused: Mapping[str, list[str]] | None = None,
) -> tuple[dict[str, Resolved], list[dict[str, Any]]]:
    """Each top-k query's resolved prior, and an error item per query whose prior failed;
    with a stored pool's ``fused`` order (its pool in run order), that order."""
    if fused is not None:
        pool_id = spec.pool.pool_id
        assert pool_id is not None
        return {q: fused_prior(pool_id, pools[q], fused.get(q, [])) for q in topk_queries}, []
    resolver = PriorResolver(s, spec.collection_id, prior, settings)
    resolver.prefetch(topk_queries)
    resolved: dict[str, Resolved] = {}
    errors: list[dict[str, Any]] = []
    for q in topk_queries:
        try:
            resolved[q] = resolver.resolve(known[q], pools[q])
        except Invalid as err:
            errors.append(checks.error_item("prior", str(err.detail), query_id=q))
    return resolved, errors


def _planned_tasks(
    spec: PlanSpec, plan: Plan, topk: TaskSpec, pools: dict[str, list[str]]
) -> list[PlannedTask]:
    """The plan's entries as tasks: seed, pool size and, with a ``+robust`` strategy, the
    other top-k assessors of the query who get the task's repeats."""
    routes = spec.second_opinions and topk.strategy.repeats
    topk_assessors: dict[str, list[str]] = {}
    for e in plan.entries:
        if e.method == "topk":
            topk_assessors.setdefault(e.query_id, []).append(e.assessor)
    return [
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


def _grid(plan: Plan) -> dict[str, dict[str, str]]:
    """grid[assessor][query_id] = "topk" / "graded" (or "topk+graded" on a conflict)."""
    grid: dict[str, dict[str, str]] = {a: {} for a in plan.assessors}
    for e in plan.entries:
        cell = grid.setdefault(e.assessor, {})
        cell[e.query_id] = e.method if e.query_id not in cell else f"{cell[e.query_id]}+{e.method}"
    return grid


def _violations(
    spec: PlanSpec,
    plan: Plan,
    extra: list[dict[str, Any]],
    pools: dict[str, list[str]],
    lost: dict[str, dict[str, int]],
) -> list[dict[str, Any]]:
    """The pure validator's errors, then the database's (``extra``), then every warning."""
    per_query = None
    if spec.scheme == "balanced":
        per_query = dict(spec.per_query)
    elif spec.scheme == "rotation":
        r = len(tuple(spec.shifts))
        per_query = {"topk": r, "graded": r}
    found = [checks.violation_item(v) for v in validate_plan(plan, per_query=per_query)]
    return (
        [v for v in found if v["severity"] == "error"]
        + extra
        + [v for v in found if v["severity"] != "error"]
        + [
            lost_warning(q, spec.pool.mode, spec.pool.n, info, len(pools[q]))
            for q, info in lost.items()
        ]
    )


def _preview_in(
    s: Any,
    spec: PlanSpec,
    specs: Mapping[str, TaskSpec],
    prior: PriorSource,
    settings: Settings,
    accuracy: MachineAccuracy | None = None,
    pool_run: StoredRun | None = None,
) -> tuple[PlanPreview, dict[str, list[str]], dict[str, Resolved]]:
    """The preview computed in transaction ``s`` (a read or a write one) on an existing
    collection, plus the pools and each top-k query's resolved prior; with a machine's
    ``accuracy``, the strategies' figures with the machine too (the preview's, never
    :func:`create_plan`'s: no simulation inside its write transaction); ``pool_run``: the
    pool's stored run (:func:`_stored_runs`).

    :func:`create_plan` calls this inside its write transaction, so the check against the
    existing tasks sees every plan committed before it (see there)."""
    options = _options(specs)
    all_queries = repository.queries_by_id(s, spec.collection_id)
    query_ids = _query_ids(spec, all_queries)
    extra = checks.unknown_queries(query_ids, all_queries)
    plan = _build_plan(spec, query_ids)
    names = list(dict.fromkeys([*plan.assessors, *(e.assessor for e in plan.entries)]))
    extra += checks.user_errors(names, repository.users_by_name(s, names))
    known = {q: all_queries[q] for q in query_ids if q in all_queries}
    pool = spec.pool
    pools, lost, fused = plan_query_pools(
        s, spec.collection_id, known, mode=pool.mode, n=pool.n, seed=pool.seed,
        dedupe=pool.dedupe, run=pool.run, pool_id=pool.pool_id, run_order=pool.run_order,
        stored=pool_run.ranking if pool_run is not None else None,
    )  # fmt: skip
    extra += checks.empty_pools(pools)
    topk = dict.fromkeys(e.query_id for e in plan.entries if e.method == "topk")
    topk_queries = [q for q in topk if pools.get(q)]
    resolved, prior_errors = _resolve_priors(
        s, spec, prior, topk_queries, known, pools, settings, fused
    )
    extra += prior_errors
    have = repository.active_tasks(s, spec.collection_id)
    extra += checks.existing_task_errors(plan.entries, have)
    tasks = _planned_tasks(spec, plan, specs["topk"], pools)
    cost = plan_cost(spec.k, options, pools, resolved, _methods_by_query(tasks))
    pairs = [(t.query_id, t.method) for t in tasks]
    sizes = {q: len(v) for q, v in pools.items()}
    violations = _violations(spec, plan, extra, pools, lost)
    preview = PlanPreview(
        spec=spec,
        assessors=list(plan.assessors),
        query_ids=list(plan.query_ids),
        tasks=tasks,
        grid=_grid(plan),
        loads=plan.load(),
        pool_sizes=sizes,
        violations=violations,
        options=options,
        pool_lost=lost,
        prior=prior.spec,
        cost=cost,
        totals=cost_totals(pairs, cost),
        pool=pool_summary(pool.mode, pool.n, pool.seed, pool.dedupe, sizes, pool_id=pool.pool_id),
        constraints=checks.constraints(
            violations,
            methods={t.method for t in tasks},
            assessors=len(plan.assessors),
            prior=prior.spec != NO_PRIOR,
            named_queries=spec.query_ids is not None,
        ),
        strategies=strategy_rows(
            spec.k,
            options,
            pools,
            resolved,
            pairs,
            strategy_candidates(specs["topk"].strategy.name),
            None if accuracy is None else accuracy.value,
            machine_known=accuracy is None or accuracy.known,
        ),
        machine_accuracy=None if accuracy is None else accuracy.as_dict(),
    )
    return preview, pools, resolved


def _methods_by_query(tasks: list[PlannedTask]) -> dict[str, set[str]]:
    """The methods each query has tasks of."""
    methods: dict[str, set[str]] = {}
    for t in tasks:
        methods.setdefault(t.query_id, set()).add(t.method)
    return methods


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
    the collection row is locked first with ``SELECT ... FOR NO KEY UPDATE``
    (:func:`app.planning.repository.lock_collection`), so a second plan waits for the first to
    commit and its check statements, each with a fresh snapshot, then see the first plan's
    tasks."""
    specs = _task_specs(spec)
    stored = _stored_runs(db, spec)
    prior = _prior_source(spec, stored)
    with db.write() as s:
        if not repository.lock_collection(s, spec.collection_id):
            raise NotFound(f"no collection with id {spec.collection_id}")
        machine.check_machine(s, spec.collection_id, specs["topk"].machine, db.settings)
        preview, pools, resolved = _preview_in(
            s, spec, specs, prior, db.settings, pool_run=stored[0]
        )
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
        created = _new_tasks(s, spec, specs, preview, pools, resolved, db.settings)
    tasks.after_commit(db.settings, created)
    return CreatedPlan(
        name=spec.name,
        task_ids=[task_id for task_id, _ in created],
        warnings=[v for v in preview.violations if v["severity"] != "error"],
    )


def _new_tasks(
    s: Any,
    spec: PlanSpec,
    specs: Mapping[str, TaskSpec],
    preview: PlanPreview,
    pools: dict[str, list[str]],
    resolved: dict[str, Resolved],
    settings: Settings,
) -> list[tuple[int, PreparedScores | None]]:
    """The previewed tasks made by :func:`app.tasks.service.new_task` (each config checked by
    opening its session, its machine's scores stored): each task's id and scores."""
    queries = repository.queries_by_id(s, spec.collection_id)
    users = repository.users_by_name(s, preview.assessors)
    created: list[tuple[int, PreparedScores | None]] = []
    for t in preview.tasks:
        task = replace(specs[t.method], seed=t.seed)
        where = f"task {t.assessor}/{t.query_id}/{t.method}: "
        if t.method == "topk":
            order, prior = resolved[t.query_id]
            try:
                task = replace(
                    task,
                    initial_order=None if order is None else tuple(order),
                    prior=prior,
                    routing=replace(task.routing, second_assessor=t.second_assessor or None),
                )
            except ConfigError as err:
                raise Invalid(f"{where}{err}") from None
        label = f"{spec.name}:{t.label}" if t.label else spec.name
        row, prepared = tasks.new_task(
            s, settings, spec.collection_id, queries[t.query_id], users[t.assessor],
            pools[t.query_id], task, plan=label[:100], where=where,
        )  # fmt: skip
        created.append((row.id, prepared))
    return created


def plan_entries_csv(preview: PlanPreview) -> str:
    """The previewed plan as CSV (for editing and re-import with ``scheme="csv"``)."""
    plan = Plan(
        tuple(PlanEntry(t.assessor, t.query_id, t.method, t.label) for t in preview.tasks),  # type: ignore[arg-type]
        tuple(preview.assessors),
        tuple(preview.query_ids),
    )
    return plan_to_csv(plan)
