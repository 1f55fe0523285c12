"""CLI: ``heapjudge config show``, the effective settings (docs/cli.md#config)."""

from __future__ import annotations

import json
import os

import typer

from app.cli.conventions import Command, Group, fail

app = typer.Typer(cls=Group, help="The service's settings.", no_args_is_help=True)


@app.command("show", cls=Command)
def config_show(
    as_json: bool = typer.Option(
        False, "--json/--no-json", help="One JSON object instead of lines."
    ),
) -> None:
    """Print the settings this environment gives the server and the worker (every
    ``HEAPJUDGE_*`` setting with its value, secrets masked), and warn about unknown
    ``HEAPJUDGE_*`` variables (exit 0 either way)."""
    from pydantic import ValidationError

    from app.kernel.settings import Settings, unknown_variables

    try:
        settings = Settings()
    except ValidationError as exc:
        fail(f"the settings do not validate: {exc}")
    shown = settings.shown()
    if as_json:
        typer.echo(json.dumps(shown, indent=2, sort_keys=False))
    else:
        for name, value in shown.items():
            typer.echo(f"{name}={'' if value is None else value}")
    for name in unknown_variables(os.environ, settings):
        typer.echo(f"warning: unknown setting {name} is ignored", err=True)
