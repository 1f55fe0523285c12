"""Pydantic models of the REST API v1: study plans (they shape /openapi.json)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from app.http.schemas import MethodName


class ViolationOut(BaseModel):
    """A violated constraint of a study plan (``code`` for programs, ``message`` for people)."""

    code: str
    severity: Literal["error", "warning"]
    message: str
    assessor: str | None
    query_id: str | None
    method: str | None


class ConstraintOut(BaseModel):
    """A constraint that applies to the plan."""

    code: str
    text: str
    holds: bool
    severity: Literal["error", "warning"] | None = Field(
        description="The worst severity among the violations that break it (null: it holds)."
    )


class PoolSummaryOut(BaseModel):
    """How the plan's pools are chosen, and the documents per query they hold."""

    mode: str
    source: str = Field(description="How each query's pool is chosen, in words.")
    depth: int | None = Field(description="n of the pool (null: all documents, or the whole run).")
    dedupe: bool
    min: int
    max: int
    mean: float


class MachineAccuracyOut(BaseModel):
    """The machine's pairwise accuracy on random pairs the figures with it assume: ``given``
    in the plan, ``measured`` on the collection (people's agreement with its opinions on the
    pairs they answered, the study calibration's evidence: a lower bound), or ``none`` (no
    measurement: a cold start; ``value`` 0.8 is the near end of the figures' range)."""

    value: float
    source: str
    pairs: int = Field(
        description="People's answers on the judge's pairs in the collection (measured when "
        "at least 50)."
    )


class MachineRowOut(BaseModel):
    """A ``+assist`` strategy's expected cost with the plan's machine judge (people's
    judgments and minutes, the machine's answers), by simulation with a machine of pairwise
    accuracy ``machine_accuracy`` (docs/admin-guide.md#plan-preview)."""

    machine_accuracy: float
    human_judgments_per_task: float
    human_p95_per_task: float
    machine_answers_per_task: float
    minutes_per_task: float = Field(description="People's time only.")
    topk_human_judgments: float
    topk_machine_answers: float
    topk_minutes: float
    judgments: float = Field(description="People's judgments, all tasks of the plan.")
    minutes: float = Field(description="People's minutes, all tasks of the plan.")
    expected_loss_per_task: float = Field(
        description="The simulated queries' mean κ-NDCG@k loss against the person-only "
        "result, to compare with max_loss."
    )
    max_loss: float = Field(description="The stated option machine.max_loss.")
    cold_start_range: dict[str, list[float]] | None = Field(
        default=None,
        description="Without a measured or given accuracy: [with a machine of accuracy 0.8, "
        "with one that earns nothing (the figures without it)] per figure; null otherwise.",
    )


class StrategyRowOut(BaseModel):
    """The plan's expected cost with one top-k strategy (per task: the mean over its top-k
    tasks; totals: over all tasks)."""

    strategy: str
    chosen: bool
    topk_tasks: int
    judgments_per_task: float
    p95_per_task: float | None
    minutes_per_task: float
    topk_judgments: float = Field(description="All top-k tasks.")
    topk_minutes: float = Field(description="All top-k tasks.")
    judgments: float = Field(description="All tasks of the plan (top-k and graded).")
    minutes: float = Field(description="All tasks of the plan (top-k and graded).")
    with_machine: MachineRowOut | None = Field(
        default=None,
        description="With the plan's machine judge (the chosen +assist row; the row's own "
        "figures are without it); null without a machine and on the other rows.",
    )


class PlannedTaskOut(BaseModel):
    assessor: str
    query_id: str
    method: MethodName
    label: str
    seed: int
    n: int = Field(description="Documents in the task's pool.")
    second_assessor: list[str] = Field(
        default_factory=list,
        description="topk, +robust: who gets this task's repeats (options.second_assessor).",
    )


class PlanPreviewOut(BaseModel):
    """A study plan as a grid, with loads, pools, costs and every violated constraint."""

    ok: bool = Field(description="No violation of severity error.")
    name: str
    scheme: str
    k: int
    options: dict[str, dict[str, Any]] = Field(description="The options of each method's tasks.")
    assessors: list[str]
    query_ids: list[str]
    tasks: list[PlannedTaskOut]
    grid: dict[str, dict[str, str]] = Field(
        description='grid[assessor][query_id] = "topk" | "graded" ("topk+graded": a conflict).'
    )
    loads: dict[str, dict[str, int]] = Field(description="Tasks per assessor and method.")
    pool_sizes: dict[str, int] = Field(description="Documents in each query's pool.")
    pool_lost: dict[str, dict[str, int]] = Field(
        description="Ranked pools: per query, documents of the ranking the pool could not take."
    )
    violations: list[ViolationOut]
    strategy: str
    prior: str
    cost: dict[str, dict[str, float]] = Field(
        description="Per query: expected judgments and minutes of one task of each method."
    )
    totals: dict[str, float] = Field(description="Expected judgments and minutes of the plan.")
    cost_model: dict[str, str | float] = Field(description="How the costs are estimated.")
    machine_accuracy: MachineAccuracyOut | None = Field(
        default=None,
        description="With a machine: the pairwise accuracy the figures with it assume and "
        "where it comes from (docs/admin-guide.md#plan-preview).",
    )
    pool: PoolSummaryOut
    constraints: list[ConstraintOut] = Field(
        description="The constraints that apply to this plan, each saying whether it holds."
    )
    strategies: list[StrategyRowOut] = Field(
        description="Every strategy side by side for this plan as chosen (pools and prior "
        "included); `chosen` marks the plan's."
    )
    csv: str = Field(description="The plan's entries as CSV (assessor,query_id,method).")


class PlanCreatedOut(BaseModel):
    name: str
    task_ids: list[int]
    warnings: list[ViolationOut]
