"""The ``heapjudge`` command line: one typer app per area, joined here with ``add_typer``.

The areas' apps without a name (service, exports, simulate, evaluate, training, analysis)
contribute top-level commands (``heapjudge serve``, ``heapjudge evaluate``, ...); ``db``,
``admin`` and ``analysis`` are command groups. Every command follows one convention (help,
errors, exit codes, opening the database): :mod:`app.cli.conventions`,
:mod:`app.cli.database`, docs/cli.md.

The areas are imported when the tree is assembled (:data:`cli`, :func:`command`), not with
this package: ``heapjudge evaluate`` and ``heapjudge compare`` assemble a tree of their own
command alone (:func:`main`), so that a run of them does not import and introspect the
other 36 commands (0.05-0.1 s of start; docs/performance.md#evaluating-large-files).
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

import typer

from app.cli.conventions import Group

if TYPE_CHECKING:
    from types import ModuleType

#: The areas whose app contributes top-level commands, then the named groups.
AREAS = ("service", "exports", "simulate", "evaluate", "training", "analysis", "compare")
GROUPS = {"db": "database", "admin": "admin", "analysis": "calibration", "config": "config"}
#: ``heapjudge trec-eval ...``: the trec_eval drop-in (docs/trec-eval.md), run before typer.
TREC_EVAL = "trec-eval"
#: Commands run from a tree of their own area alone (the area defines that command only).
ALONE = {"evaluate": "evaluate", "compare": "compare"}


def _area(name: str) -> ModuleType:
    return importlib.import_module(f"app.cli.{name}")


def _root() -> typer.Typer:
    return typer.Typer(
        cls=Group,
        name="heapjudge",
        help="Top-k relevance labeling service and learning-to-rank toolkit.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )


def assemble() -> typer.Typer:
    """The whole command tree's typer app."""
    root = _root()
    for area in AREAS:
        root.add_typer(_area(area).app)
    for group, area in GROUPS.items():
        root.add_typer(_area(area).app, name=group)
    return root


@functools.cache
def whole() -> typer.Typer:
    """The whole tree's typer app, assembled once (what the module attribute ``cli`` is)."""
    return assemble()


def __getattr__(name: str) -> Any:
    """``cli``: :func:`whole`, assembled on first use (tests invoke it)."""
    if name == "cli":
        return whole()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def command() -> Group:
    """The assembled command tree (what ``heapjudge`` runs; tests walk it)."""
    root = typer.main.get_command(whole())
    assert isinstance(root, Group)
    return root


def alone(name: str) -> Group:
    """A tree of the one command ``name`` of :data:`ALONE`: what ``heapjudge <name> ...``
    runs (the same command, help and errors as in the whole tree)."""
    root = _root()
    root.add_typer(_area(ALONE[name]).app)
    group = typer.main.get_command(root)
    assert isinstance(group, Group)
    return group


def main() -> None:
    """Console-script entry point."""
    first = sys.argv[1] if len(sys.argv) > 1 else None
    if first == TREC_EVAL:
        # trec_eval's own command line (getopt-style flags such as -mP.5 or -M100 that
        # click would not read): handed over whole, without assembling any typer tree (the
        # drop-in's entry point sets the BLAS threads and starts the join itself)
        from ranking.trec_eval.launch import main as trec_eval_main

        trec_eval_main(sys.argv[2:])
    if first in ALONE:
        # Their metrics use no BLAS; OpenBLAS's worker threads, started with numpy, spin
        # for a while all the same: 0.1-0.2 s of CPU on a 2-core machine (set before numpy
        # loads; a value the caller set is kept).
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    root = alone(first) if first in ALONE else command()
    root.main(prog_name="heapjudge")
