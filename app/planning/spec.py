"""The study plan's types: what an admin asks for (:class:`PlanSpec`, :class:`PoolSpec`) and
what the preview answers (:class:`PlanPreview`, :class:`PlannedTask`); the use cases are in
:mod:`app.planning.service`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.planning.cost import COST_MODEL
from labeling.protocol.prior_orders import NO_PRIOR


@dataclass(frozen=True, slots=True)
class PoolSpec:
    """How each query's judging pool is chosen (see :func:`labeling.study.pools.build_pool`)."""

    mode: str = "all"
    """``all``, ``sample``, ``run`` (top n of ``run``), ``bm25`` (top n of the query's
    documents by BM25 over the collection, :mod:`app.retrieval.service`) or ``runs`` (the
    documents the stored pool ``pool_id`` picked from many runs,
    :mod:`app.campaign_pools.service`)."""
    n: int | None = None
    seed: int = 0
    dedupe: bool = False
    run: str | None = None
    """TREC run text for ``mode="run"``."""
    stored_run: str | None = None
    """For ``mode="run"``, instead of ``run``: the name of a run stored on the collection
    (:mod:`app.runs.service`), ranked as the same file sent as ``run`` would be."""
    run_order: bool = False
    """With ``mode="run"``/``"bm25"``: top-k tasks start from the pool's ranking (the same as
    ``PlanSpec.prior`` = ``run``/``bm25`` with that run); with ``mode="runs"``: from the stored
    pool's fused order (reciprocal rank fusion of its runs)."""
    pool_id: int | None = None
    """The stored pool of ``mode="runs"``."""


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
    """TREC run text of ``prior="run"`` (default: the pool's run, ``pool.run`` or
    ``pool.stored_run``)."""
    prior_stored_run: str | None = None
    """For ``prior="run"``, instead of ``prior_run``: the name of a run stored on the
    collection."""
    machine: str | None = None
    """The top-k tasks' machine judge (``bm25``, ``embedding``, ``model:<run id>``, ``llm``; a
    ``+assist`` strategy), copied into every top-k task's options
    (docs/machine-judges.md#the-service)."""
    machine_max_loss: float | None = None
    """The expected κ-NDCG@k loss per query the machine may cost (option ``machine.max_loss``;
    None: the default 0.01; docs/machine-judges.md#the-rule)."""
    machine_accuracy: float | None = None
    """The machine's pairwise accuracy on random pairs the preview's figures with the machine
    assume (None: measured on the collection, else
    :data:`app.planning.cost.ASSUMED_MACHINE_ACCURACY`, 0.8; :mod:`app.planning.machine`)."""
    second_opinions: bool = True
    """With a ``+robust`` strategy: route each top-k task's repeats to the plan's other top-k
    assessors of its query (option ``second_assessor``;
    docs/noise.md#routing-re-asks-to-a-second-assessor). The timeout is
    ``options.topk.second_opinion_timeout_s``."""


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
    ``graded_minutes`` for ONE task of each method (:func:`app.planning.cost.expected_cost`)."""
    totals: dict[str, float] = field(default_factory=dict)
    """Sums over the plan's tasks (all tasks): ``topk_judgments``, ``topk_minutes``,
    ``graded_judgments``, ``graded_minutes``, ``judgments``, ``minutes``, and the tasks per
    method ``topk_tasks``, ``graded_tasks``."""
    pool: dict[str, Any] = field(default_factory=dict)
    """The pools as chosen (:func:`app.planning.pooling.pool_summary`): source, depth and the
    documents per query."""
    constraints: list[dict[str, Any]] = field(default_factory=list)
    """The constraints that apply to this plan, each with ``holds``
    (:func:`app.planning.checks.constraints`)."""
    strategies: list[dict[str, Any]] = field(default_factory=list)
    """Every strategy side by side for this plan (:func:`app.planning.cost.strategy_rows`)."""
    machine_accuracy: dict[str, Any] | None = None
    """With a machine: the pairwise accuracy its figures assume and where it comes from
    (:class:`app.planning.machine.MachineAccuracy`: value, source, pairs, judges)."""

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
            "tasks": [task_dict(t) for t in self.tasks],
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
            "pool": self.pool,
            "constraints": self.constraints,
            "strategies": self.strategies,
            "machine_accuracy": self.machine_accuracy,
        }


def task_dict(t: PlannedTask) -> dict[str, Any]:
    return {
        "assessor": t.assessor,
        "query_id": t.query_id,
        "method": t.method,
        "label": t.label,
        "seed": t.seed,
        "n": t.n,
        "second_assessor": list(t.second_assessor),
    }
