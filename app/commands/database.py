"""How a command opens the database: one rule for every command (docs/cli.md#database).

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

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.commands.conventions import fail

if TYPE_CHECKING:
    from app.kernel.db import Database
    from app.kernel.settings import Settings


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
    from sqlalchemy.exc import SQLAlchemyError

    import migrations
    from app.kernel.db import Database

    settings = settings_for(database_url)
    if not create:
        require_existing(settings.database_url)
    try:
        migrations.upgrade(settings.database_url)
    except SQLAlchemyError as err:
        fail(_unreachable(settings.database_url, err))
    return Database(settings)


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
