"""Pydantic models of the REST API v1: exports (they shape /openapi.json)."""

from __future__ import annotations

from typing import Literal

ExportFormat = Literal["qrels", "topk-jsonl", "pairs-jsonl", "grades-qrels"]
