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
* Deprecated spellings stay as hidden options that print a warning (:func:`warn_deprecated`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, NoReturn, TypeVar

import typer
from typer._click import Context, HelpFormatter
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

T = TypeVar("T")

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


def usage_error(message: str) -> NoReturn:
    """Report a wrong command line and exit with :data:`USAGE` (with the ``--help`` hint)."""
    raise UsageError(message)


def warn_deprecated(old: str, new: str) -> None:
    """Say on stderr that a hidden alias was used (it keeps working)."""
    typer.echo(f"warning: {old} is deprecated; use {new}", err=True)


def aliased(value: T, old_value: T | None, old: str, new: str) -> T:
    """The value of an option under its new name ``new``, or the one given under the hidden,
    deprecated name ``old`` (with a warning). ``old_value`` is None when ``old`` was not given."""
    if old_value is None:
        return value
    warn_deprecated(old, new)
    return old_value


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

    def get_params(self, ctx: Context) -> list[Any]:
        params = super().get_params(ctx)
        _apply_metavars(params)  # the --help option is made lazily
        return params

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = param.metavar or argument_metavar(param)
                name = name if param.required else f"[{name}]"
                pieces.append(name + ("..." if param.nargs != 1 else ""))
        return pieces

    def format_options(self, ctx: Context, formatter: HelpFormatter) -> None:
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
                "(app.commands.conventions) to follow the CLI convention"
            )

    def add_command(self, cmd: Any, name: str | None = None) -> None:
        self._check(name or cmd.name, cmd)
        super().add_command(cmd, name)

    def get_params(self, ctx: Context) -> list[Any]:
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
        except NoArgsIsHelpError as exc:  # the help itself, not an error
            if not standalone_mode:
                raise
            exc.show()
            sys.exit(exc.exit_code)
        except ClickException as exc:
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
