"""How a command opens the database, one rule for every command (docs/cli.md#database), and
the ``heapjudge db`` group (schema migrations).

* A database that exists is migrated to the newest revision first (as ``serve`` does), so a
  command never meets a schema older than its code.
* A SQLite file that does not exist is created only by the commands that put something into
  an empty database: ``import``, ``create-user``, ``admin import-*`` (and ``db upgrade`` and
  ``serve``). Every other command (``analyze``, ``export``, ``admin progress``, ...) refuses
  with exit 1 and creates no file: a mistyped path must not leave an empty database behind.
* A database that cannot be opened or migrated (a server that is down, a file that is not a
  database) is exit 1 with the URL and the reason, never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from app.cli.conventions import Command, Group, fail, report_service_error

if TYPE_CHECKING:
    from app.kernel.db import Database
    from app.kernel.settings import Settings

T = TypeVar("T")

#: ``--database-url``, the same declaration in every command that opens the database.
DB_OPTION = typer.Option(
    None, "--database-url", help="Overrides HEAPJUDGE_DATABASE_URL (docs/cli.md#database)."
)


def settings_for(database_url: str | None = None, **overrides: Any) -> Settings:
    """The settings of a command: ``--database-url`` over ``HEAPJUDGE_DATABASE_URL``; dev mode,
    since a command run by the operator needs no session secret."""
    from app.kernel.settings import Settings

    if database_url:
        overrides["database_url"] = database_url
    overrides.setdefault("dev", True)
    return Settings(**overrides)


def sqlite_file(database_url: str) -> Path | None:
    """The file of a SQLite URL (None for other databases and in-memory SQLite)."""
    from sqlalchemy.engine import make_url

    url = make_url(database_url)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database)


def require_existing(database_url: str) -> None:
    """Exit 1, creating nothing, when ``database_url`` names a SQLite file that is not there."""
    path = sqlite_file(database_url)
    if path is not None and not path.exists():
        fail(
            f"no database at {path} (from {database_url!r}); give --database-url or set "
            "HEAPJUDGE_DATABASE_URL, or create it with `heapjudge db upgrade`"
        )


def _unreachable(database_url: str, err: BaseException) -> str:
    reason = str(getattr(err, "orig", None) or err).strip().splitlines()[0]
    return f"cannot open the database {database_url!r}: {type(err).__name__}: {reason}"


def open_database(database_url: str | None, *, create: bool = False) -> Database:
    """The command's database, migrated to head (module doc). ``create``: a missing SQLite file
    is created (only for the commands that fill an empty database)."""
    from app.kernel.db import Database

    settings = settings_for(database_url)
    if not create:
        require_existing(settings.database_url)
    migrate(settings.database_url)
    return Database(settings)


def migrate(database_url: str, *, writable: bool = False) -> None:
    """Migrate ``database_url`` to head; ``writable``: and check that it takes writes (a
    server needs them; :func:`app.kernel.db.check_writable`). An unreachable or read-only
    database, or one a migration refuses (usernames that differ only by case), is exit 1
    with its reason on one ``error:`` line."""
    from alembic.util import CommandError
    from sqlalchemy.exc import SQLAlchemyError

    import migrations
    from app.kernel.db import check_writable

    try:
        migrations.upgrade(database_url)
        if writable:
            check_writable(database_url)
    except SQLAlchemyError as err:
        fail(_unreachable(database_url, err))
    except CommandError as err:  # a migration that refuses the data it found
        fail(f"cannot upgrade the database {database_url!r}: {err}")


@contextmanager
def database(database_url: str | None, *, create: bool = False) -> Iterator[Database]:
    """:func:`open_database` for a ``with`` block: disposed at the end, and a database error
    inside (connection lost, server gone) is exit 1 with its reason."""
    from sqlalchemy.exc import SQLAlchemyError

    db = open_database(database_url, create=create)
    try:
        yield db
    except SQLAlchemyError as err:
        fail(_unreachable(db.settings.database_url, err))
    finally:
        db.dispose()


def run_service(
    database_url: str | None, fn: Callable[[Database], T], *, create: bool = False
) -> T:
    """``fn(db)`` on the command's database (:func:`database`; ``create`` only for the imports);
    a service error (:class:`app.kernel.errors.DomainError`) is reported and exits 1."""
    from app.kernel.errors import DomainError

    with database(database_url, create=create) as db:
        try:
            return fn(db)
        except DomainError as exc:
            report_service_error(exc)


def collection_id(db: Database, ref: str, *, create: bool = False) -> int:
    """The id of the collection named (or numbered) ``ref``; ``create``: a missing one is
    created (otherwise :class:`app.kernel.errors.NotFound`)."""
    from app.collections import service as collections
    from app.kernel.errors import NotFound

    try:
        return collections.find_collection(db=db, ref=ref).id
    except NotFound:
        if not create:
            raise
        return collections.create_collection(db=db, name=ref).id


app = typer.Typer(cls=Group, help="Database schema migrations.", no_args_is_help=True)


def _migrate(database_url: str | None, step: str, revision: str) -> None:
    """``db upgrade`` (which creates a missing SQLite file) or ``db downgrade`` (which refuses
    one); an unknown revision or an unreachable database is exit 1."""
    from alembic.util import CommandError
    from sqlalchemy.exc import SQLAlchemyError

    import migrations

    url = settings_for(database_url).database_url
    if step == "downgrade":
        require_existing(url)
    try:
        getattr(migrations, step)(url, revision)
        now = migrations.current(url)
    except (CommandError, SQLAlchemyError) as exc:
        fail(f"cannot {step} {url!r} to {revision!r}: {exc}")
    typer.echo(f"database at {now or 'base'}")


@app.command("upgrade", cls=Command)
def db_upgrade(
    revision: str = typer.Argument("head", help="Target revision."),
    database_url: str | None = DB_OPTION,
) -> None:
    """Apply migrations up to REVISION (default: head); creates a missing SQLite file."""
    _migrate(database_url, "upgrade", revision)


@app.command("downgrade", cls=Command)
def db_downgrade(
    revision: str = typer.Argument(..., help="Target revision ('base' drops everything)."),
    database_url: str | None = DB_OPTION,
) -> None:
    """Revert migrations down to REVISION."""
    _migrate(database_url, "downgrade", revision)


@app.command("current", cls=Command)
def db_current(database_url: str | None = DB_OPTION) -> None:
    """Print the database's migration revision."""
    from sqlalchemy.exc import SQLAlchemyError

    import migrations

    url = settings_for(database_url).database_url
    require_existing(url)
    try:
        typer.echo(migrations.current(url) or "base")
    except SQLAlchemyError as exc:
        fail(f"cannot read the revision of {url!r}: {exc}")
