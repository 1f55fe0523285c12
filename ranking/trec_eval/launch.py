"""The entry points of the trec_eval drop-in (``python -m ranking.trec_eval``,
``heapjudge-trec-eval``, ``heapjudge trec-eval``): what runs before the command line
(:mod:`ranking.trec_eval.cli`) and numpy are imported (docs/trec-eval.md#speed)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from ranking.trec_eval.prefetch import start

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> None:
    """Run trec_eval's command line ``argv`` (``sys.argv[1:]`` by default) and exit with
    its status."""
    args = list(sys.argv[1:] if argv is None else argv)
    # The drop-in does no linear algebra: one BLAS thread spares the process the start of a
    # pool of them when numpy is imported (about 40 ms of CPU). A value the caller set is
    # kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # the join reads the files in a thread while numpy and the measures are imported below
    start(args)
    from ranking.trec_eval.cli import main as run_command_line

    run_command_line(args)
