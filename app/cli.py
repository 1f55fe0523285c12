"""The ``heapjudge`` command line.

Commands live in :mod:`app.commands`, one module per area, each with ``register(app)``;
this module only assembles them. Every command follows one convention (help, errors, exit
codes, opening the database): :mod:`app.commands.conventions`, docs/cli.md.
"""

from __future__ import annotations

import typer

from app.commands import admin, analysis, evaluate, service, simulate, training
from app.commands.conventions import Group

cli = typer.Typer(
    cls=Group,
    name="heapjudge",
    help="Top-k relevance labeling service and learning-to-rank toolkit.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _module in (service, simulate, evaluate, training, analysis, admin):
    _module.register(cli)


def command() -> Group:
    """The assembled click command tree (what ``heapjudge`` runs; tests walk it)."""
    root = typer.main.get_command(cli)
    assert isinstance(root, Group)
    return root


def main() -> None:
    """Console-script entry point."""
    command().main(prog_name="heapjudge")


if __name__ == "__main__":
    main()
