"""Pydantic models of the REST API v1: a collection's analysis (they shape /openapi.json)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class AnalysisOut(BaseModel):
    """The agreement and time analysis of a collection; the sections are described in
    docs/analysis.md."""

    collection: dict[str, Any] = Field(description="id and name.")
    mode: Literal["direct", "inferred"]
    methods: dict[str, str]
    relations: list[str]
    relation_symbols: list[str]
    tasks: dict[str, dict[str, int]] = Field(description="Per method: tasks and finished.")
    queries: list[str] = Field(description="The study's queries: those of its tasks.")
    chi2_note: str | None = Field(
        description="Why the χ² tests cannot apply (no graded or no top-k pair judged by two "
        "assessors, or an empty row or column); null when they do."
    )
    judgments: dict[str, int] = Field(description="live, undone, reasks.")
    time: dict[str, dict[str, Any]] = Field(description="Table 1, per method.")
    agreement: dict[str, dict[str, Any]] = Field(description="Per method: the agreement block.")
    chi2: dict[str, dict[str, Any]] = Field(description="pearson and yates.")
    position_bias: list[dict[str, Any]]
    self_consistency: list[dict[str, Any]]
    transitivity: list[dict[str, Any]]
    topk_overlap: list[dict[str, Any]]
    time_histogram: dict[str, Any]
    machine_agreement: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Per machine judge version: tasks, machine_answers, opinion_vs_people and "
        "answers_vs_people (pairs, agree, agreement, kappa; docs/machine-judges.md).",
    )
    warnings: list[str]


class CalibrationOut(BaseModel):
    """The calibration report of a collection's machine judges
    (docs/machine-judges.md#the-calibration-report)."""

    collection: dict[str, Any] = Field(description="id and name.")
    bins: int = Field(description="Equal-width confidence bins over [0.5, 1].")
    judges: list[dict[str, Any]] = Field(
        description="Per judge version: judge, source, tasks, and three reports (report: every "
        "person's answer on a pair the machine had an opinion on; audits; hard: the questions "
        "it was not sure enough to answer), each with records, other_answers, calibrated and "
        "raw (count, accuracy, ece, brier, kappa, bins), position_bias. Empty: no machine."
    )
