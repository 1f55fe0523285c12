"""Pydantic models of the REST API v1: collections, guidelines and imports (they shape
/openapi.json).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from app.collections.guidelines import MAX_GUIDELINES
from app.http.schemas import CollectionName, StrictModel


class CollectionCreate(StrictModel):
    name: CollectionName = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=10_000)


class GuidelinesIn(StrictModel):
    markdown: str = Field(
        max_length=MAX_GUIDELINES,
        description="The collection's judging guidelines in Markdown (raw HTML is shown as "
        "text); empty for none.",
    )


class GuidelinesOut(BaseModel):
    collection_id: int
    collection_name: str
    markdown: str
    html: str = Field(description="The Markdown rendered and sanitised (safe to embed).")


class CollectionOut(BaseModel):
    id: int
    name: str
    description: str
    archived: bool
    created_at: datetime
    queries: int = 0
    documents: int = 0
    tasks: dict[str, int] = Field(
        default_factory=dict, description="Number of tasks by status (pending/active/done/...)."
    )


class QueryOut(BaseModel):
    query_id: str
    title: str
    description: str
    documents: int


class ImportReportOut(BaseModel):
    collection_id: int
    lines: int
    queries_created: int
    documents_created: int = Field(
        description="New (query, document) pairs (a document under two queries counts twice)."
    )
    documents_unchanged: int


class CollectionBriefOut(BaseModel):
    id: int
    name: str
    description: str
    archived: bool


class FilesImportOut(BaseModel):
    """A TREC/SMART/LETOR import (``import-files``)."""

    collection_id: int
    kind: str
    rows: int = Field(description="(query, document) rows imported.")
    queries_created: int
    documents_created: int = Field(
        description="New (query, document) pairs of the pool (a document under two queries "
        "counts twice)."
    )
    documents_unchanged: int = Field(description="Pairs of the pool already there, unchanged.")
    pooled: int = Field(description="(query, document) pairs in the pool (= rows).")
    judged: int = Field(description="Judged (query, document) pairs of the qrels (0: no qrels).")
    judged_pooled: int = Field(description="Of the judged pairs, those in the pool.")
    judged_unpooled: int = Field(
        description="Of the judged pairs, those outside the pool: kept as judgments that "
        "evaluation uses (the qrels label set), shown to no assessor."
    )
    files: list[str] = Field(description="The uploaded files read, in the order read.")
    qrels: str | None = Field(
        description="How the qrels file was read: layout (detected or given, and why) and grades."
    )
    notes: list[str] = Field(description="What the pairing left out, and suggestions.")


class AttachOut(BaseModel):
    """Grades or feature vectors attached to existing documents."""

    collection_id: int
    what: str
    lines: int
    matched: int
    unmatched: int
    unmatched_lines: list[int]
    documents_without: int
