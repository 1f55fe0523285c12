"""The compiled join started before numpy is imported (docs/trec-eval.md#speed).

A whole ``heapjudge trec-eval`` process spends about 0.15 s importing numpy and the measure
modules before it reads a file, and then about 0.35 s in the join of the run with the qrels
(``ranking/trec_eval/_rankjoin.c``), which needs neither numpy nor the measures and lets
other threads run while it reads (it releases the GIL). :func:`start`, called by the entry
points (:mod:`ranking.trec_eval.launch`) before they import the rest, parses the command
line with :mod:`ranking.trec_eval.options` (no numpy there) and, for a qrels evaluation of
two named files, runs the join in a thread while the imports go on; on a second free core
the two overlap.

:func:`ranking.trec_eval.fast_merge.fast_merge` asks :func:`take` for the result of exactly
the call it would make (:func:`rank_arguments`), so what is printed never depends on this
module: without a prefetch, with other arguments, or when the thread failed, ``take``
answers None and ``fast_merge`` calls the join itself (an error then surfaces there, as
without a prefetch).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from ranking.trec_eval.options import parse_args

if TYPE_CHECKING:
    from ranking.trec_eval._rankjoin import RankResult

try:
    import ranking.trec_eval._rankjoin as compiled
except ImportError:  # not built: nothing to start, fast_merge reads with Python
    rankjoin: ModuleType | None = None
else:
    rankjoin = compiled

__all__ = ["RankArguments", "rank_arguments", "start", "take"]

#: -M values beyond this are "every document" (the C code reads a 64-bit integer).
MAX_RET_CAP = 2**62

#: ``_rankjoin.rank``'s arguments: qrels file, run file, -M (capped), -J, -c.
RankArguments = tuple[str, str, int, bool, bool]


def rank_arguments(
    rel_file: str, run_file: str, *, max_ret: int, judged_only: bool, complete: bool
) -> RankArguments:
    """The arguments of the join of these files under these flags."""
    return (rel_file, run_file, max(min(max_ret, MAX_RET_CAP), -1), judged_only, complete)


class _Join:
    """One join running in a daemon thread (an entry point that stops early, on a usage
    error, does not wait for it)."""

    def __init__(self, arguments: RankArguments) -> None:
        self.arguments = arguments
        self.result: RankResult | None = None
        self.thread = threading.Thread(target=self._run, name="trec-eval-join", daemon=True)

    def _run(self) -> None:
        if rankjoin is None:
            return
        try:
            self.result = rankjoin.rank(*self.arguments)
        except Exception:  # fast_merge calls the join again and sees the error itself
            self.result = None


_started: list[_Join] = []


def start(args: Sequence[str]) -> None:
    """Start the join that the command line ``args`` will ask for, if it asks for one (a
    qrels evaluation of two files, not standard input); anything else starts nothing."""
    if rankjoin is None:
        return
    try:
        options = parse_args(list(args))
    except Exception:  # a usage error: the command line reports it, nothing to start
        return
    files = options.files
    if (
        options.help
        or options.version
        or len(files) != 2
        or "-" in files
        or options.rel_format != "qrels"
        or options.results_format != "trec_results"
    ):
        return
    join = _Join(
        rank_arguments(
            files[0],
            files[1],
            max_ret=options.max_ret,
            judged_only=options.judged_only,
            complete=options.complete,
        )
    )
    join.thread.start()
    _started.append(join)


def take(arguments: RankArguments) -> RankResult | None:
    """What ``_rankjoin.rank(*arguments)`` returned in the thread :func:`start` began (once
    it has finished), or None when no join with these arguments was started or it raised."""
    for i, join in enumerate(_started):
        if join.arguments == arguments:
            del _started[i]
            join.thread.join()
            return join.result
    return None
