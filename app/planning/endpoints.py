"""REST API v1, admin console: study plans, ``POST /admin/plans/preview`` and
``POST /admin/plans`` (JSON body; role admin).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from fastapi import APIRouter, Depends
from pydantic import Field

from app.http.deps import (
    DbDep,
    require_admin,
)
from app.http.openapi import declare_errors, error_responses
from app.http.schemas import (
    RUN_BODY_BYTES,
    STORED_RUN_HINT,
    InlineRun,
    PlanName,
    RowId,
    Seed,
    StoredRunName,
    StrictModel,
)
from app.planning import service as planning
from app.planning.schemas import PlanCreatedOut, PlanPreviewOut
from app.planning.spec import PlanSpec, PoolSpec

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[Depends(require_admin)])


class PoolIn(StrictModel):
    mode: Literal["all", "sample", "run", "bm25", "runs"] = "all"
    n: int | None = Field(default=None, ge=1, le=100_000)
    seed: Seed = 0
    dedupe: bool = False
    run: InlineRun | None = Field(
        default=None,
        description="TREC run text for mode=run (at most 4,000,000 characters; a longer run: "
        "store it on the collection and give stored_run).",
    )
    stored_run: StoredRunName | None = Field(
        default=None,
        description="mode=run, instead of run: the name of a run stored on the collection "
        "(POST /admin/collections/{id}/runs); the pool is the one its file would give.",
    )
    run_order: bool = False
    pool_id: RowId | None = Field(
        default=None,
        description="mode=runs: a pool from many runs of the collection (POST "
        "/admin/collections/{id}/pools); run_order then starts topk tasks from its fused order.",
    )


class PlanIn(StrictModel):
    max_json_bytes: ClassVar[int | None] = RUN_BODY_BYTES
    json_bytes_hint: ClassVar[str] = STORED_RUN_HINT

    collection_id: RowId
    assessors: list[str] = Field(default_factory=list, max_length=1000)
    query_ids: list[str] | None = None
    scheme: Literal["rotation", "balanced", "csv"] = "rotation"
    shifts: list[int] = Field(default_factory=lambda: [0, 2], max_length=50)
    per_query: dict[str, int] = Field(default_factory=lambda: {"topk": 2, "graded": 2})
    seed: Seed = 0
    csv: str | None = None
    name: PlanName = Field(default="plan", min_length=1, max_length=60)
    k: int = Field(default=10, ge=1, le=10_000)
    options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    pool: PoolIn = Field(default_factory=PoolIn)
    strategy: str | None = Field(
        default=None,
        max_length=100,
        description="Judging strategy of the topk tasks (heap, tournament, insertion, with "
        "+robust; default heap); the preview gives its expected judgments and minutes.",
    )
    prior: str = Field(
        default="none",
        max_length=120,
        description="Initial order of the topk tasks, resolved per query: none, bm25, "
        "feature:<number> (LETOR, 1-based) or run (prior_run or prior_stored_run, else the "
        "pool's run).",
    )
    prior_run: InlineRun | None = Field(
        default=None, description="TREC run text for prior=run (at most 4,000,000 characters)."
    )
    prior_stored_run: StoredRunName | None = Field(
        default=None,
        description="prior=run, instead of prior_run: the name of a run stored on the collection.",
    )
    machine: str | None = Field(
        default=None,
        max_length=40,
        description="The topk tasks' machine judge (a +assist strategy): bm25, embedding, "
        "model:<training run id> or llm; copied into each topk task's options.machine "
        "(docs/machine-judges.md#the-service).",
    )
    machine_max_loss: float | None = Field(
        default=None,
        gt=0.0,
        le=0.5,
        description="The expected κ-NDCG@k loss per query the machine may cost the result "
        "(options.machine.max_loss; default 0.01; docs/machine-judges.md#the-rule).",
    )
    machine_accuracy: float | None = Field(
        default=None,
        gt=0.5,
        le=1.0,
        description="The machine's pairwise accuracy on random pairs that the preview's "
        "figures with the machine assume (default: measured on the collection's people's "
        "answers on the machine's pairs, from 50; else none, a cold start's range from a "
        "machine of accuracy 0.8 to one that earns nothing; docs/admin-guide.md#plan-preview).",
    )
    second_opinions: bool = Field(
        default=True,
        description="With a +robust strategy, each topk task's repeats go to the plan's other "
        "topk assessors of its query (options.second_assessor; docs/noise.md).",
    )

    def spec(self) -> PlanSpec:
        return PlanSpec(
            collection_id=self.collection_id,
            assessors=self.assessors,
            query_ids=self.query_ids,
            scheme=self.scheme,
            shifts=tuple(self.shifts),
            per_query=self.per_query,
            seed=self.seed,
            csv=self.csv,
            name=self.name,
            k=self.k,
            options=self.options,
            pool=PoolSpec(**self.pool.model_dump()),
            strategy=self.strategy,
            prior=self.prior,
            prior_run=self.prior_run,
            prior_stored_run=self.prior_stored_run,
            machine=self.machine,
            machine_max_loss=self.machine_max_loss,
            machine_accuracy=self.machine_accuracy,
            second_opinions=self.second_opinions,
        )


@router.post("/plans/preview", response_model=PlanPreviewOut, responses=error_responses(404))
def preview_plan(body: PlanIn, db: DbDep) -> dict[str, Any]:
    """The plan as a grid with loads, pool sizes and every violated constraint; writes nothing."""
    preview = planning.preview_plan(db=db, spec=body.spec())
    out = preview.as_dict()
    out["csv"] = planning.plan_entries_csv(preview)
    return out


@router.post(
    "/plans", status_code=201, response_model=PlanCreatedOut, responses=error_responses(404)
)
def create_plan(body: PlanIn, db: DbDep) -> dict[str, Any]:
    """Create the plan's tasks in one transaction (422 with the violations if it has errors)."""
    created = planning.create_plan(db=db, spec=body.spec())
    return {"name": created.name, "task_ids": created.task_ids, "warnings": created.warnings}


declare_errors(router)
