"""Pydantic models of the REST API v1: pools from many runs (they shape /openapi.json)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from app.http.schemas import StrictModel

#: A stored run: its name, or its id.
StoredRunRef = (
    Annotated[str, Field(min_length=1, max_length=200)] | Annotated[int, Field(ge=1, le=2**62)]
)


class StoredPoolIn(StrictModel):
    """A pool from runs stored on the collection (``POST /admin/collections/{id}/pools`` with a
    JSON body): the runs by name or id, in run order, or ``"all"`` (every stored run, by upload
    order), and the settings the multipart upload takes as query parameters."""

    stored_runs: (
        Literal["all"] | Annotated[list[StoredRunRef], Field(min_length=1, max_length=200)]
    ) = Field(description='Run names (strings) or ids (integers), in run order; or "all".')
    method: Literal["depth", "mtf", "maxmean", "hedge", "cal"] = "depth"
    depth: int = Field(100, ge=1, le=10_000, description="Each run's top depth documents.")
    budget: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="Judgments per query (null: the depth pool); with allocation campaign, "
        "the documents of all the queries together (required).",
    )
    allocation: Literal["query", "campaign"] = Field(
        "query",
        description="query: the budget per query; campaign (cal only): one budget over the "
        "collection's queries, the model choosing the queries too.",
    )
    name: str | None = Field(
        None,
        min_length=1,
        max_length=100,
        description="Pool name (default METHOD-DEPTH[-bBUDGET]).",
    )
    feedback: bool = Field(
        True, description="mtf/maxmean/hedge/cal: finished tasks' labels as feedback."
    )


class PoolOut(BaseModel):
    """A pool from many runs: its settings, runs and counts."""

    id: int
    collection_id: int
    name: str
    method: str = Field(description="depth | mtf | maxmean | hedge | cal")
    depth: int = Field(description="Each run's top depth documents per query.")
    budget: int | None = Field(
        description="Judgments per query (null: the whole depth pool); with allocation "
        "campaign, the documents of all the queries together."
    )
    allocation: str = Field(
        description="query (a budget per query) | campaign (cal: one budget over the queries)"
    )
    fusion: str = Field(description="The fused score ordering the pool: rrf60 = Σ 1/(60 + rank).")
    runs: list[str] = Field(description="The runs, in run order (the methods' tie-break).")
    summary: dict[str, Any] = Field(
        description="queries, unknown_queries, unknown_query_ids, not_in_query (pooled "
        "documents dropped: not among their query's), feedback (finished tasks' labels used), "
        "picked_judged (picks judged already), source (files: uploaded with the request; "
        "stored: runs stored on the collection)."
    )
    created_at: datetime
    documents: int = Field(description="Documents in the depth pools of all queries.")
    picked: int = Field(description="Documents the method picked for judging (the plan's pool).")
    status: str = Field(
        "ready",
        description="ready | building (its documents are being written: counts 0, no "
        "documents shown, not plannable) | failed (its build died; the next build deletes it)",
    )


class HitOut(BaseModel):
    run: str
    rank: int = Field(description="The run's rank of the document, 1-based.")


class PooledDocumentOut(BaseModel):
    query_id: str
    doc_id: str
    position: int = Field(description="Place in the query's fused order, 0-based.")
    pick: int | None = Field(description="Place in the method's judging order (null: not picked).")
    fused: float
    hits: list[HitOut]


class PoolDetailOut(PoolOut):
    documents_shown: list[PooledDocumentOut] = Field(
        description="The pooled documents (of query_id only, when given), by query and position."
    )
