"""Pools are written in batches (docs/performance.md#pool-builds): ``pool.status`` is
``building`` while a build writes its documents, one short transaction per batch, and
``ready`` once the last batch is in; no reader lists, shows or plans from a building pool.
Every pool stored so far was written whole: ``ready``.

Reversible: the downgrade deletes the building pools (half-written, never used), then drops
the column.

Revision ID: 0034_pool_status
Revises: 0033_machine_audit_strata
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0034_pool_status"
down_revision = "0033_machine_audit_strata"
branch_labels = None
depends_on = None

STATUSES = "status IN ('building', 'ready')"
#: The batch copy must not reflect the tables the foreign keys point to (``user``'s
#: expression index cannot be reflected).
NO_REFERENTS = {"resolve_fks": False}


def upgrade() -> None:
    with op.batch_alter_table("pool", reflect_kwargs=NO_REFERENTS) as batch:
        batch.add_column(sa.Column("status", sa.String(16), nullable=False, server_default="ready"))
        batch.create_check_constraint(op.f("ck_pool_status"), STATUSES)


def downgrade() -> None:
    op.execute(
        "DELETE FROM pool_document WHERE pool_id IN (SELECT id FROM pool WHERE status = 'building')"
    )
    op.execute("DELETE FROM pool WHERE status = 'building'")
    with op.batch_alter_table("pool", reflect_kwargs=NO_REFERENTS) as batch:
        batch.drop_constraint(op.f("ck_pool_status"), type_="check")
        batch.drop_column("status")
