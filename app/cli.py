"""The ``heapjudge`` command line.

Commands live in :mod:`app.commands`, one module per area, each with ``register(app)``;
this module only assembles them.
"""

from __future__ import annotations

import typer

from app.commands import admin, analysis, evaluate, service, simulate, training

cli = typer.Typer(
    name="heapjudge",
    help="Top-k relevance labeling service and learning-to-rank toolkit.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _module in (service, simulate, evaluate, training, analysis, admin):
    _module.register(cli)


def main() -> None:
    """Console-script entry point."""
    cli()


if __name__ == "__main__":
    main()
