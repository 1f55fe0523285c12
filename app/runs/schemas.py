"""Pydantic models of the REST API v1: runs on a collection, label sets, leaderboards and the
agreement of label sets (they shape /openapi.json; docs/rest-api.md#runs)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class RunOut(BaseModel):
    id: int
    name: str
    tag: str = Field(description="The run tag of the file (last column of its first line).")
    file_name: str
    uploaded_by: str | None = Field(description="The admin who uploaded it (null: the CLI).")
    uploaded_at: str
    queries: int
    entries: int


class RunListOut(BaseModel):
    collection_id: int
    runs: list[RunOut]


class UploadedRunOut(BaseModel):
    run: RunOut
    unknown_queries: list[str] = Field(
        description="Query ids the collection lacks, left out (ignore_unknown_queries=true)."
    )
    documents_outside: int = Field(
        description="Entries naming a document the query does not have in the collection "
        "(kept: unjudged, so not relevant to every metric)."
    )


class RunsUploadOut(BaseModel):
    collection_id: int
    runs: list[UploadedRunOut]


class RunDeletedOut(BaseModel):
    deleted: RunOut


class LabelSetOut(BaseModel):
    key: str = Field(
        description="Stable key: qrels, topk (hybrid where a machine answered), topk-human, grades."
    )
    kind: str = Field(description="qrels (graded) or topk (a top-k truth).")
    title: str
    description: str
    queries: int = Field(description="Queries it labels (0: not available yet).")
    available: bool


class LabelSetsOut(BaseModel):
    collection_id: int
    label_sets: list[LabelSetOut]


class LabelSetRef(BaseModel):
    key: str
    kind: str
    title: str
    queries: int


class LeaderboardRow(BaseModel):
    run: str
    rank: int
    mean: float | None
    low: float | None = Field(description="Lower end of the 95% interval (Student t).")
    high: float | None
    queries_counted: int
    queries_missing: int = Field(description="Label-set queries the run lacks (scored 0).")
    trec_eval_differs: str | None = Field(
        description="What trec_eval would print instead, when it differs (qrels only)."
    )


class PairOut(BaseModel):
    system_a: str
    system_b: str
    mean_a: float
    mean_b: float
    difference: float
    p_value: float
    p_adjusted: float
    significant: bool


class MatrixOut(BaseModel):
    test: str
    correction: str
    alpha: float
    n_queries: int
    queries_left_out: int = Field(description="Queries some run's metric skipped.")
    n_resamples: int | None
    exact: bool
    seed: int
    systems: list[str] = Field(description="Best first, as the leaderboard.")
    pairs: list[PairOut]


class PerQueryOut(BaseModel):
    queries: list[str]
    values: dict[str, list[float | None]]


class LeaderboardOut(BaseModel):
    collection_id: int
    label_set: LabelSetRef
    metric: str
    preset: str
    preset_reason: str | None
    conventions: dict[str, Any]
    metric_conventions: dict[str, str]
    interval: str
    n_queries: int
    runs: list[LeaderboardRow]
    matrix: MatrixOut | None = Field(
        description="Null with fewer than 2 runs, or too few queries for the test."
    )
    matrix_note: str | None = Field(description="Why the matrix is null.")
    per_query: PerQueryOut | None


class AgreementOut(BaseModel):
    collection_id: int
    metric: str
    label_set: LabelSetRef = Field(description="The reference (truth) label set.")
    against: LabelSetRef
    preset: str
    preset_against: str
    test: str
    correction: str
    alpha: float
    seed: int
    ordering: list[str]
    ordering_against: list[str]
    means: dict[str, float]
    means_against: dict[str, float]
    kendall_tau: float | None
    tau_ap: float | None
    significant_swaps: int = Field(
        description="Pairs the reference separates significantly that the other label set "
        "orders strictly the other way."
    )
    significant_in_truth: int
    significant_in_against: int
    significant_in_one_only: int = Field(
        description="Pairs exactly one of the two label sets finds significant."
    )
    swaps_significant_in_both: int
    swapped_pairs: list[list[str]]
    n_pairs: int
