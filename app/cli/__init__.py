"""The ``heapjudge`` command line: one typer app per area, joined here with ``add_typer``.

The areas' apps without a name (service, exports, simulate, evaluate, training, analysis)
contribute top-level commands (``heapjudge serve``, ``heapjudge evaluate``, ...); ``db``,
``admin`` and ``analysis`` are command groups. Every command follows one convention (help,
errors, exit codes, opening the database): :mod:`app.cli.conventions`,
:mod:`app.cli.database`, docs/cli.md.
"""

from __future__ import annotations

import typer

from app.cli import (
    admin,
    analysis,
    calibration,
    compare,
    database,
    evaluate,
    exports,
    service,
    simulate,
    training,
)
from app.cli.conventions import Group

cli = typer.Typer(
    cls=Group,
    name="heapjudge",
    help="Top-k relevance labeling service and learning-to-rank toolkit.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
for area in (service.app, exports.app, simulate.app, evaluate.app, training.app, analysis.app):
    cli.add_typer(area)
cli.add_typer(compare.app)
cli.add_typer(database.app, name="db")
cli.add_typer(admin.app, name="admin")
cli.add_typer(calibration.app, name="analysis")


def command() -> Group:
    """The assembled command tree (what ``heapjudge`` runs; tests walk it)."""
    root = typer.main.get_command(cli)
    assert isinstance(root, Group)
    return root


def main() -> None:
    """Console-script entry point."""
    command().main(prog_name="heapjudge")
