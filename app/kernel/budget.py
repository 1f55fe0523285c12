"""Bounded work for one request: a computation that checks, between chunks, whether its client
is still there and whether its time is up (docs/performance.md#bounded-requests).

A :class:`WorkBudget` is made per request. The computation (in a worker thread) calls
:meth:`WorkBudget.check` between chunks of work; the request's event loop side calls
:meth:`WorkBudget.cancel` when the client disconnects (:func:`app.http.bounded.run_bounded`).
``check`` raises :class:`WorkStopped` once cancelled or past the deadline, so the thread stops
within one chunk instead of finishing minutes of work nobody reads. The budget counts its
checks (``checks``) and says why it stopped (``stopped``), which is what tests read.

This module imports no web framework: the use cases take a budget without knowing where the
cancellation comes from (a web request, a CLI, nothing).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Literal

StopReason = Literal["disconnected", "time"]


class WorkStopped(Exception):
    """The work was stopped between two chunks: its client left, or its time ran out."""

    def __init__(self, reason: StopReason, seconds: float | None, checks: int) -> None:
        super().__init__(reason)
        self.reason: StopReason = reason
        self.seconds = seconds
        self.checks = checks


class WorkBudget:
    """A deadline ``seconds`` from now (None: no deadline) and a cancel flag, checked by the
    work between chunks. Thread-safe: ``cancel`` may come from any thread."""

    def __init__(
        self, seconds: float | None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.seconds = seconds
        self._clock = clock
        self._deadline = None if seconds is None else clock() + seconds
        self._cancelled = threading.Event()
        self.checks = 0
        self.stopped: StopReason | None = None

    def cancel(self) -> None:
        """Ask the work to stop at its next check (the client is gone)."""
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def check(self) -> None:
        """Count a chunk; raise :class:`WorkStopped` when cancelled or past the deadline."""
        self.checks += 1
        if self._cancelled.is_set():
            self._stop("disconnected")
        if self._deadline is not None and self._clock() > self._deadline:
            self._stop("time")

    def _stop(self, reason: StopReason) -> None:
        self.stopped = reason
        raise WorkStopped(reason, self.seconds, self.checks)


def unbounded() -> WorkBudget:
    """A budget that never stops the work (CLI commands, whose user can press Ctrl-C)."""
    return WorkBudget(None)
