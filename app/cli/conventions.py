"""The one convention every ``heapjudge`` command follows (docs/cli.md#conventions).

* Help: positional arguments by their UPPERCASE name (``COLLECTION FILE``), option values by
  an UPPERCASE type (``--port INTEGER``, ``--run FILE``), flags without a type, boolean
  options as ``--x/--no-x`` pairs. :class:`Command` and :class:`Group` render it; every command
  and group of the CLI is one of them (:class:`Group` refuses anything else when the CLI is
  assembled, so a new command cannot forget it).
* Errors: one line ``error: <what>`` on stderr, written by :func:`report_error` alone, also
  for the parser's own usage errors.
* Exit codes: :data:`USAGE` (2) when the command line itself is wrong (unknown option, missing
  argument, a flag value out of range or not among the choices, a named file that does not
  exist, options that do not go together): :func:`usage_error`. :data:`FAILURE` (1) when the
  command line is fine but doing it failed (a file that does not parse, an unknown collection
  or user, a database that is missing or unreachable, an import that does not validate):
  :func:`fail`.

Only typer's public API is used: typer hands the overridden methods below the context and help
formatter of the click it vendors (whose classes it does not export), so they take them as
``Any``; the parser's errors are caught as :class:`typer.TyperException` (their base class).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

if TYPE_CHECKING:
    from app.kernel.errors import DomainError

#: Exit status of a wrong command line (the parser's own errors use it too).
USAGE = 2
#: Exit status of a command that was given a valid command line but failed.
FAILURE = 1

#: The metavar of an option value, by the annotated Python type.
TYPE_METAVARS: dict[type, str] = {int: "INTEGER", float: "FLOAT", str: "TEXT", bool: "BOOLEAN"}
#: The metavar of a path value, by what it must be (``exists``/``file_okay``/``dir_okay``).
PATH_METAVARS = {"file": "FILE", "directory": "DIRECTORY", "path": "PATH"}


class UsageProblem(ValueError):
    """A bad option value or combination found while running a command: exit :data:`USAGE`."""


def report_error(message: str) -> None:
    """Write ``error: <message>`` on stderr: the only way a command reports an error."""
    typer.echo(f"error: {message}", err=True)


def fail(message: str) -> NoReturn:
    """Report an operational failure and exit with :data:`FAILURE`."""
    report_error(message)
    raise typer.Exit(FAILURE)


class CommandLineError(typer.BadParameter):
    """A wrong command line found by a command itself: a usage error (exit :data:`USAGE`) whose
    message is shown as given, not as one parameter's ``Invalid value: ...``."""

    def format_message(self) -> str:
        return self.message


def usage_error(message: str) -> NoReturn:
    """Report a wrong command line and exit with :data:`USAGE` (with the ``--help`` hint)."""
    raise CommandLineError(message)


def report_service_error(exc: DomainError) -> NoReturn:
    """A service error (:class:`app.kernel.errors.DomainError`): the problems of a file one per line
    (``file:line: what``), then the one ``error:`` line; exit :data:`FAILURE`."""
    detail = exc.detail
    if isinstance(detail, list):
        for item in detail:
            if not isinstance(item, dict):
                typer.echo(str(item), err=True)
            elif "line" in item and not item["line"] and not item.get("file"):
                typer.echo(str(item.get("msg", "")), err=True)  # a summary, not a place
            elif "line" in item:
                where = f"{item.get('file', '')}:{item['line']}"
                typer.echo(f"{where}: {item.get('msg', '')}", err=True)
            else:
                typer.echo(
                    f"[{item.get('severity', 'error')}] {item.get('message', item)}", err=True
                )
        fail(str(exc.extra.get("message", f"{len(detail)} error(s)")))
    fail(str(detail))


def given(ctx: typer.Context, name: str) -> bool:
    """True when option ``name`` was given on the command line (not left at its default)."""
    return getattr(ctx.get_parameter_source(name), "name", None) != "DEFAULT"


def option_metavar(param: TyperOption) -> str:
    """The UPPERCASE metavar of an option value ("" for a flag: a flag takes no value)."""
    if param.is_flag or param.count:
        return ""
    desc = param.type_descriptor
    if desc.is_path:
        return PATH_METAVARS.get(desc.path_type, "PATH")
    if desc.is_choice and desc.choices:
        return "[" + "|".join(str(c) for c in desc.choices) + "]"
    annotation = desc.annotation
    return TYPE_METAVARS.get(annotation, getattr(annotation, "__name__", "VALUE").upper())


def argument_metavar(param: TyperArgument) -> str:
    """A positional argument's UPPERCASE name, e.g. ``COLLECTION``."""
    return (param.name or "value").upper()


def _apply_metavars(params: Sequence[Any]) -> None:
    for param in params:
        if param.metavar is not None:
            continue
        if isinstance(param, TyperArgument):
            param.metavar = argument_metavar(param)
        elif isinstance(param, TyperOption):
            param.metavar = option_metavar(param)


class Command(TyperCommand):
    """A command with the convention's help: plain text, ``COLLECTION FILE`` in the usage line,
    UPPERCASE metavars, no type on flags."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["rich_markup_mode"] = None  # plain help: the same text on a terminal and in a pipe
        super().__init__(*args, **kwargs)
        _apply_metavars(self.params)

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        _apply_metavars(params)  # the --help option is made lazily
        return params

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = param.metavar or argument_metavar(param)
                name = name if param.required else f"[{name}]"
                pieces.append(name + ("..." if param.nargs != 1 else ""))
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if isinstance(param, TyperArgument):
                # typer's record names the argument with its type (``COLLECTION <str>``)
                arguments.append((param.metavar or argument_metavar(param), record[1]))
            else:
                options.append(record)
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl(arguments)
        if options:
            with formatter.section("Options"):
                formatter.write_dl(options)


class Group(TyperGroup):
    """A group of commands under the convention; the root group also owns the error output
    (:meth:`main`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["rich_markup_mode"] = None
        super().__init__(*args, **kwargs)
        _apply_metavars(self.params)
        for name, command in self.commands.items():
            self._check(name, command)

    @staticmethod
    def _check(name: str, command: Any) -> None:
        if not isinstance(command, Command | Group):
            raise TypeError(
                f"command {name!r} must be registered with cls=Command "
                "(app.cli.conventions) to follow the CLI convention"
            )

    def add_command(self, cmd: Any, name: str | None = None) -> None:
        self._check(name or cmd.name, cmd)
        super().add_command(cmd, name)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """A group called without a command shows its help on stderr and exits :data:`USAGE`
        (click's rule for ``no_args_is_help``)."""
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            typer.echo(ctx.get_help(), err=True, color=ctx.color)
            raise typer.Exit(USAGE)
        return super().parse_args(ctx, args)

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        _apply_metavars(params)
        return params

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the CLI; parser errors are reported like every other error (:func:`report_error`,
        then the ``--help`` hint) with exit :data:`USAGE`."""
        try:
            rv = super().main(
                args=args,
                prog_name=prog_name,
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
        except typer.TyperException as exc:  # the base of the parser's errors
            if not standalone_mode:
                raise
            report_error(exc.format_message())
            ctx = getattr(exc, "ctx", None)
            if ctx is not None:
                typer.echo(f"Try '{ctx.command_path} --help' for help.", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            if not standalone_mode:
                raise
            report_error("aborted")
            sys.exit(FAILURE)
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)
