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
    csv: str = Field(description="The plan's entries as CSV (assessor,query_id,method).")


class PlanCreatedOut(BaseModel):
    name: str
    task_ids: list[int]
    warnings: list[ViolationOut]
