"""Pydantic models of the machine judges' REST API (they shape /openapi.json)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class StudyUsageOut(BaseModel):
    """One study's LLM spending (docs/machine-judges.md#the-llm-client)."""

    collection_id: int
    plan: str | None = Field(description="The plan (task.plan); null: tasks without a plan.")
    requests: int = Field(description="Requests the endpoint answered.")
    cached: int = Field(description="Replies served from the response cache (free).")
    prompt_tokens: int
    completion_tokens: int
    tokens: int = Field(description="prompt_tokens + completion_tokens (what the budget counts).")
    malformed: int = Field(description="Replies that did not parse (no opinion).")
    failed: int = Field(description="Prompts that failed after every retry (no opinion).")
    refused: int = Field(description="Prompts not sent: the budget was spent (no opinion).")
    budget: int = Field(description="Tokens the study may spend (HEAPJUDGE_LLM_TOKEN_BUDGET).")
    remaining: int = Field(description="Tokens left before the machine stops answering.")


class MachineUsageOut(BaseModel):
    """A collection's LLM spending per study."""

    collection_id: int
    model: str | None = Field(description="The configured model (HEAPJUDGE_LLM_MODEL).")
    budget: int = Field(description="Tokens per study (HEAPJUDGE_LLM_TOKEN_BUDGET).")
    studies: list[StudyUsageOut]
