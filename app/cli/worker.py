"""``heapjudge worker``'s composition: import every concept's jobs (each registers its jobs
with :mod:`app.kernel.queue` from its own folder), then consume the queues asked for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from app.kernel.settings import Settings


def register_all() -> None:
    """Import the concepts' job modules (registering their jobs and services)."""
    import app.judging.jobs
    import app.machine.jobs
    import app.training.jobs  # noqa: F401


def consume(
    queues: Sequence[str], settings: Settings, *, threads: int = 1, parent: int | None = None
) -> None:
    """Run a worker on ``queues`` with ``settings`` (read once, the server's: docs/cli.md#config)
    until SIGTERM or SIGINT. ValueError naming an unknown queue or a queue URL of an unknown
    scheme."""
    from app.kernel import queue
    from app.kernel.settings import mask_url

    register_all()
    unknown = [q for q in queues if q not in queue.QUEUES]
    if unknown or not queues:
        raise ValueError(
            f"--queues: unknown queue {', '.join(unknown) or '(none given)'}; "
            f"expected any of {', '.join(queue.QUEUES)}"
        )
    url = queue.queue_url(settings)
    for name in queues:
        queue.huey_for(url, name)  # a queue URL of an unknown scheme is refused here
    typer.echo(
        f"heapjudge worker: database {mask_url(settings.database_url)}, queue {mask_url(url)}, "
        f"queues {', '.join(queues)}, llm model {settings.llm_model or '(not set)'}",
        err=True,
    )
    queue.run_worker(settings, queues=queues, threads=threads, parent=parent)
