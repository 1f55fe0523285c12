"""Settings of the machine judges (``HEAPJUDGE_*``, docs/machine-judges.md#the-service)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class MachineSettings(BaseSettings):
    """Where the ``llm`` judge is served, read from ``HEAPJUDGE_*`` like
    :class:`app.kernel.settings.Settings`. Without a base URL the ``llm`` source is refused
    (422, not configured). The API key is read from the environment by the client only,
    never stored in the database or shown."""

    model_config = SettingsConfigDict(
        env_prefix="HEAPJUDGE_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    llm_base_url: str | None = Field(
        default=None,
        description="An OpenAI-compatible chat-completions endpoint (vLLM, Ollama, a hosted "
        "API), e.g. http://127.0.0.1:8000/v1; unset: the llm judge is not configured.",
    )
    llm_model: str = Field(default="", description="The model name sent to the endpoint.")
