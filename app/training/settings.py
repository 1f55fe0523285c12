"""Queue and training-job settings (``HEAPJUDGE_*``, docs/training.md#queue)."""

from __future__ import annotations

from pydantic import Field

from app.kernel.queue import QueueSettings


class JobSettings(QueueSettings):
    """Queue and training-job settings, read from ``HEAPJUDGE_*`` like
    :class:`app.kernel.settings.Settings` (the queue's own in
    :class:`app.kernel.queue.QueueSettings`)."""

    training_time_limit_seconds: int = Field(
        default=3600, ge=1, le=7 * 86400, description="Default time limit of a training run."
    )
    training_stale_seconds: float = Field(
        default=30.0,
        gt=0,
        description="A running job whose heartbeat is older than this is retried or failed.",
    )
    training_max_attempts: int = Field(
        default=2, ge=1, description="Executions of a run before a lost worker fails it."
    )

    @property
    def heartbeat_seconds(self) -> float:
        return self.training_stale_seconds / 5

    @property
    def sweep_seconds(self) -> float:
        return self.training_stale_seconds / 2
