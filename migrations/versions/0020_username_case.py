"""Usernames unique whatever their case: a unique index on ``lower(username)``
(docs/security.md#usernames).

Usernames are ASCII (``labeling.identifiers.USERNAME_PATTERN``), so SQLite's ``lower`` and
Postgres's fold them alike. A database that already holds names differing only by case
(``bob`` and ``BOB``) is not changed: the upgrade stops with an error naming every clash,
since renaming an account would change how someone logs in; rename one of each (for
instance ``UPDATE "user" SET username = 'bob-2' WHERE username = 'BOB'``) and upgrade
again. Reversible: the downgrade drops the index.

Revision ID: 0020_username_case
Revises: 0019_second_opinions
Create Date: 2027-03-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from alembic.util import CommandError

revision = "0020_username_case"
down_revision = "0019_second_opinions"
branch_labels = None
depends_on = None

INDEX = "uq_user_username_lower"


def clashes(conn: sa.Connection) -> list[list[str]]:
    """The groups of usernames that differ only by case, each sorted, in name order."""
    rows = conn.execute(
        sa.text(
            'SELECT username FROM "user" WHERE lower(username) IN (SELECT lower(username) '
            'FROM "user" GROUP BY lower(username) HAVING count(*) > 1)'
        )
    ).scalars()
    groups: dict[str, list[str]] = {}
    for name in rows:
        groups.setdefault(name.lower(), []).append(name)
    return [sorted(groups[key]) for key in sorted(groups)]


def upgrade() -> None:
    found = clashes(op.get_bind())
    if found:
        shown = "; ".join(" and ".join(repr(name) for name in group) for group in found)
        raise CommandError(
            "usernames must be unique whatever their case, and these differ only by case: "
            f'{shown}. Rename one of each (UPDATE "user" SET username = ... WHERE '
            "username = ...) and upgrade again (docs/security.md#usernames)."
        )
    op.create_index(INDEX, "user", [sa.text("lower(username)")], unique=True)


def downgrade() -> None:
    op.drop_index(INDEX, table_name="user")
