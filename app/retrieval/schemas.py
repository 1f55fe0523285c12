"""Pydantic models of the REST API v1: BM25 retrieval (they shape /openapi.json)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Bm25HitOut(BaseModel):
    doc_id: str
    score: float


class Bm25RunOut(BaseModel):
    """A BM25 run as JSON: its summary and the hits of each query, best first."""

    collection_id: int
    k1: float
    b: float
    depth: int
    documents: int
    queries: int
    lines: int
    empty_queries: list[str] = Field(description="Queries none of whose terms occurs.")
    seconds: float
    hits: dict[str, list[Bm25HitOut]]


class Bm25OrderOut(BaseModel):
    query_id: str
    order: list[str] = Field(description="The query's documents, best first.")
