"""Pydantic models of the machine judges' REST API (they shape /openapi.json)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class StudyUsageOut(BaseModel):
    """One study's LLM spending (docs/machine-judges.md#the-llm-client)."""

    collection_id: int
    plan: str | None = Field(description="The plan (task.plan); null: tasks without a plan.")
    purpose: Literal["opinions", "grades"] = Field(
        description="opinions: the tasks' machine opinions; grades: the collection's LLM grades "
        "(the llm prior), counted apart with their own budget."
    )
    requests: int = Field(description="Requests the endpoint answered.")
    cached: int = Field(description="Replies served from the response cache (free).")
    prompt_tokens: int
    completion_tokens: int
    tokens: int = Field(description="prompt_tokens + completion_tokens (what the budget counts).")
    malformed: int = Field(description="Replies that did not parse (no opinion).")
    failed: int = Field(description="Prompts that failed after every retry (no opinion).")
    refused: int = Field(description="Prompts not sent: the budget was spent (no opinion).")
    timeouts: int = Field(description="Of the failed, those whose last attempt hit the deadline.")
    budget: int = Field(
        description="Tokens the study may spend (HEAPJUDGE_LLM_TOKEN_BUDGET, or "
        "HEAPJUDGE_LLM_GRADE_TOKEN_BUDGET for the grades)."
    )
    remaining: int = Field(description="Tokens left before the machine stops answering.")
    last_error: str | None = Field(
        description="The study's last failed or malformed call: what went wrong (never a URL or "
        "a key)."
    )
    last_error_at: str | None = Field(description="When it happened (ISO 8601).")


class MachineFailureAlarmOut(BaseModel):
    """An open alarm about the collection's machine's calls
    (docs/machine-judges.md#when-the-machine-fails)."""

    id: int
    collection_id: int
    task_id: int | None = Field(description="The task it concerns; null: the collection.")
    kind: str = Field(description="calls_failing: every call of a task's opinion job failed.")
    evidence: str
    raised_at: str
    seen_at: str


class MachineUsageOut(BaseModel):
    """A collection's LLM spending per study."""

    collection_id: int
    model: str | None = Field(description="The configured model (HEAPJUDGE_LLM_MODEL).")
    budget: int = Field(description="Tokens per study (HEAPJUDGE_LLM_TOKEN_BUDGET).")
    grade_budget: int = Field(
        description="Tokens of the collection's LLM grades (HEAPJUDGE_LLM_GRADE_TOKEN_BUDGET)."
    )
    studies: list[StudyUsageOut]
    alarms: list[MachineFailureAlarmOut] = Field(description="Open alarms about the machine.")


class MachineCheckOut(BaseModel):
    """One example pair asked of the LLM endpoint (docs/machine-judges.md#checking-the-endpoint)."""

    ok: bool = Field(description="A 200 whose reply reads as A or B.")
    endpoint: str = Field(description="The chat-completions URL, user info and query masked.")
    model: str | None = Field(description="The configured model (HEAPJUDGE_LLM_MODEL).")
    reply_model: str | None = Field(description="The model the endpoint says answered.")
    template: str = Field(description="The prompt template asked.")
    latency_ms: float | None = Field(description="Milliseconds until the whole reply was read.")
    status: int | None = Field(description="The HTTP status; null: no response.")
    answer: Literal["A", "B"] | None = Field(description="The answer read from the reply.")
    expected: Literal["A", "B"] = Field(description="The right answer to the example pair.")
    reply_chars: int | None = Field(description="Length of the reply text (never shown).")
    error: str | None = Field(description="What went wrong (never a URL's secret or a key).")


class PromptMessageOut(BaseModel):
    """One chat message of a rendered prompt."""

    role: str = Field(description="system or user.")
    content: str


class PromptExampleOut(BaseModel):
    """A template rendered for a fixed example (app.machine.prompts.EXAMPLE_QUERY)."""

    query: str
    documents: list[str] = Field(description="Two for a pairwise template (A, B), one graded.")
    messages: list[PromptMessageOut] = Field(description="What the endpoint would be sent.")


class PromptTemplateOut(BaseModel):
    """One versioned prompt template of the LLM judge (docs/machine-judges.md#llm-prompts)."""

    key: str = Field(description="name@vVERSION, e.g. pairwise@v1.", examples=["pairwise@v1"])
    name: str
    version: int
    kind: str = Field(description="pairwise (answer A or B) or graded (answer 0..4).")
    hash: str = Field(
        description="First 16 hex digits of SHA-256 over the template's canonical JSON: the "
        "prompt_hash recorded with every machine answer."
    )
    max_doc_chars: int = Field(description="Documents are cut to this many characters.")
    system: str = Field(description="The system message.")
    user: str = Field(description="The user message, with its {fields}.")
    used_by_llm_judge: bool = Field(description="The template the llm machine source asks.")
    used_by_llm_prior: bool = Field(
        description="The template the llm prior's grades are asked with (llm-grades)."
    )
    example: PromptExampleOut


class LlmJudgeConfigOut(BaseModel):
    """The llm judge as the settings configure it. The API key's value is never shown, only
    the name of the environment variable that holds it."""

    source: str = Field(description="The machine source: llm.")
    configured: bool = Field(description="HEAPJUDGE_LLM_MODEL is set (else the source is refused).")
    model: str | None = Field(description="HEAPJUDGE_LLM_MODEL.")
    base_url: str = Field(
        description="HEAPJUDGE_LLM_BASE_URL without user, password, query and fragment."
    )
    template: str = Field(description="The key of the template the judge asks.")
    template_hash: str
    version: str | None = Field(
        description="The judge's version recorded with tasks and answers "
        "(llm/<model>/<template>/<hash>); null while no model is set."
    )
    temperature: float
    max_tokens: int = Field(description="HEAPJUDGE_LLM_MAX_TOKENS.")
    api_key_env: str = Field(
        description="The name of the environment variable holding the API key."
    )
    api_key_set: bool = Field(description="That variable is set and not empty in this process.")


class PromptTemplatesOut(BaseModel):
    """Every prompt template and the llm judge's configuration."""

    judge: LlmJudgeConfigOut
    templates: list[PromptTemplateOut]


class MachineAlarmOut(BaseModel):
    """A machine alarm: the audits showed the judge worse than it claimed on the collection
    (docs/machine-judges.md#audits-that-act)."""

    id: int
    judge: str = Field(description="The judge version it stops on the collection.")
    task_id: int | None = Field(description="The task whose audit raised it.")
    active: bool = Field(description="True until an admin resumes the machine.")
    raised_at: str
    resumed_at: str | None
    resumed_by: str | None
    audits: int = Field(description="Audited answers the test had seen.")
    agree: int = Field(description="Of them, answers where the person agreed with the machine.")
    agreement: float | None
    claimed_wrong: float = Field(description="The mean P(wrong) the machine claimed (its bound).")
    log_ratio: float = Field(description="The test's log likelihood ratio (alarm at ln 20).")
    test: str = Field(description="The sequential test and its false-alarm rate.")


class MachineAlarmsOut(BaseModel):
    """A collection's machine alarms, newest first."""

    collection_id: int
    active: bool = Field(description="Whether an alarm stops a machine on the collection now.")
    alarms: list[MachineAlarmOut]


class GoldPairIn(BaseModel):
    """One gold pair: of query ``query_id``'s documents, ``better`` is more relevant than
    ``worse``."""

    query_id: str = Field(min_length=1, max_length=200, description="The query's external id.")
    better: str = Field(min_length=1, max_length=200, description="The more relevant document.")
    worse: str = Field(min_length=1, max_length=200, description="The less relevant document.")


class GoldIn(BaseModel):
    """Pairs to mark as gold (all or none)."""

    pairs: list[GoldPairIn] = Field(min_length=1, max_length=5000)


class GoldPairOut(BaseModel):
    id: int
    query_id: str
    better: str
    worse: str
    created_by: str
    created_at: str


class GoldOut(BaseModel):
    """A collection's gold pairs (docs/machine-judges.md#the-gold-set)."""

    collection_id: int
    gold: list[GoldPairOut]


class GoldDeletedOut(BaseModel):
    """The gold pair an admin unmarked."""

    collection_id: int
    deleted: int
