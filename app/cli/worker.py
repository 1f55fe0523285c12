"""``heapjudge worker``'s composition: import every concept's jobs (each registers its jobs
with :mod:`app.kernel.queue` from its own folder), then consume the queues asked for."""

from __future__ import annotations

from collections.abc import Sequence

import typer


def register_all() -> None:
    """Import the concepts' job modules (registering their jobs and services)."""
    import app.judging.jobs
    import app.machine.jobs
    import app.training.jobs  # noqa: F401


def consume(queues: Sequence[str], *, threads: int = 1, parent: int | None = None) -> None:
    """Run a worker on ``queues`` until SIGTERM or SIGINT. ValueError naming an unknown
    queue or a queue URL of an unknown scheme."""
    from app.kernel import queue
    from app.kernel.settings import Settings

    register_all()
    unknown = [q for q in queues if q not in queue.QUEUES]
    if unknown or not queues:
        raise ValueError(
            f"--queues: unknown queue {', '.join(unknown) or '(none given)'}; "
            f"expected any of {', '.join(queue.QUEUES)}"
        )
    settings = Settings()
    url = queue.queue_url(settings)
    for name in queues:
        queue.huey_for(url, name)  # a queue URL of an unknown scheme is refused here
    typer.echo(
        f"heapjudge worker: database {settings.database_url}, queue {url}, "
        f"queues {', '.join(queues)}",
        err=True,
    )
    queue.run_worker(settings, queues=queues, threads=threads, parent=parent)
