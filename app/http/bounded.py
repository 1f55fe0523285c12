"""Run a request's heavy computation in a worker thread and stop it when the client leaves
(docs/performance.md#bounded-requests).

:func:`run_bounded` starts the computation with :func:`starlette.concurrency.run_in_threadpool`
and, while it runs, asks Starlette every :data:`POLL_SECONDS` whether the client is still
connected (``Request.is_disconnected``, the ASGI ``http.disconnect`` message). When it is not,
the computation's :class:`app.kernel.budget.WorkBudget` is cancelled: the thread stops at its
next check, within one chunk of work, instead of computing for minutes nobody reads.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from app.kernel.budget import WorkBudget, WorkStopped

T = TypeVar("T")

#: How often the client's connection is looked at while the work runs.
POLL_SECONDS = 0.1


class ClientGone(Exception):
    """The client disconnected and the work was stopped; nobody reads an answer."""


async def run_bounded(
    request: Request, budget: WorkBudget, fn: Callable[..., T], /, **kwargs: Any
) -> T:
    """``fn(**kwargs)`` in the thread pool; :class:`ClientGone` once the client disconnected
    (the work was cancelled through ``budget``, which ``fn`` must check)."""
    work = asyncio.ensure_future(run_in_threadpool(fn, **kwargs))
    while True:
        done, _ = await asyncio.wait({work}, timeout=POLL_SECONDS)
        if done:
            return work.result()
        if await request.is_disconnected():
            budget.cancel()
            with contextlib.suppress(WorkStopped):
                await work  # the thread stops at its next check
            raise ClientGone
