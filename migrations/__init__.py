"""Alembic migrations (hand-written, reversible) and a programmatic entry point.

``heapjudge db upgrade`` / ``heapjudge serve`` call :func:`upgrade`; the ``alembic`` command
works too with the top-level ``alembic.ini`` (URL from ``HEAPJUDGE_DATABASE_URL``).
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parent


def alembic_config(database_url: str) -> Config:
    """An Alembic config for ``database_url`` that needs no alembic.ini."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    # Percent signs in URLs (escaped passwords) must be doubled for configparser.
    cfg.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    cfg.attributes["database_url"] = database_url
    return cfg


def upgrade(database_url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(database_url), revision)


def current(database_url: str) -> str | None:
    """The database's current revision (None when unversioned)."""
    from alembic.runtime.migration import MigrationContext

    from app.kernel.db import make_engine

    engine = make_engine(database_url, pool_size=1, max_overflow=0)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
