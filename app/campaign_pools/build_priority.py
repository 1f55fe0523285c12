"""The build process's priority (docs/performance.md#pool-builds), in a module that imports
nothing of the service: the process pool unpickles its initializer, importing the
initializer's module, before the initializer runs. From :mod:`app.campaign_pools.service`
that import (the service, SQLAlchemy, the pooling cores: about 1.3 s of CPU, 700 modules) ran
at the web process's priority, beside the judging loop; from here the process is at the lowest
priority before it imports any of it (the first build's work imports the rest)."""

from __future__ import annotations

import contextlib
import os
import sys

#: How much lower the build process's CPU priority is than the web process's (``nice``): a
#: build is background work, a judgment submit is a person waiting. The lowest priority: at
#: nice 10 the kernel's scheduler still gives the build about a tenth of a core the web
#: process wants (CFS weights 110 against 1024), at 19 about 1.5% (15 against 1024).
BUILD_NICENESS = 19

#: The modules this process had imported when :func:`lower_priority` ran (empty before it
#: ran, or outside the build process): none of the service's (tests check).
IMPORTED_AT_LOWERING: frozenset[str] = frozenset()


def lower_priority() -> None:
    """The build process's initializer: the lowest CPU priority the OS grants without
    privileges. Linux: ``SCHED_IDLE`` (sched(7)), under which a waking thread of any normal
    process preempts the build at once; with ``nice`` alone the scheduler may let the build
    finish its time slice first (EEVDF's run-to-parity), which a judgment submit waits for.
    Elsewhere (or when refused): ``nice`` :data:`BUILD_NICENESS`."""
    global IMPORTED_AT_LOWERING
    IMPORTED_AT_LOWERING = frozenset(sys.modules)
    if hasattr(os, "nice"):
        os.nice(BUILD_NICENESS)
    if hasattr(os, "sched_setscheduler") and hasattr(os, "SCHED_IDLE"):
        with contextlib.suppress(OSError):  # a sandbox that refuses the policy: nice alone
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def imported_at_lowering() -> frozenset[str]:
    """:data:`IMPORTED_AT_LOWERING` of the process that calls it (run it in the build
    process)."""
    return IMPORTED_AT_LOWERING
