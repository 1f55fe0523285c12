"""Pools may spread one budget over the campaign: ``pool.allocation`` is ``query`` (a budget
per query, every pool so far) or ``campaign`` (one total over the collection's queries;
continuous active learning only, docs/campaigns.md#pools-in-the-service).

Reversible: the downgrade refuses while a pool has a campaign allocation (its budget would read
as per query; delete those pools first), then drops the column.

Revision ID: 0028_pool_allocation
Revises: 0027_pool_cal
Create Date: 2027-04-12
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from alembic.util import CommandError

revision = "0028_pool_allocation"
down_revision = "0027_pool_cal"
branch_labels = None
depends_on = None

ALLOCATIONS = "allocation IN ('query', 'campaign')"


def upgrade() -> None:
    with op.batch_alter_table("pool") as batch:
        batch.add_column(
            sa.Column("allocation", sa.String(16), nullable=False, server_default="query")
        )
        batch.create_check_constraint(op.f("ck_pool_allocation"), ALLOCATIONS)


def downgrade() -> None:
    found = op.get_bind().execute(
        sa.text("SELECT count(*) FROM pool WHERE allocation = 'campaign'")
    )
    if found.scalar():
        raise CommandError("some pools spread one budget over the campaign; delete them first")
    with op.batch_alter_table("pool") as batch:
        batch.drop_constraint(op.f("ck_pool_allocation"), type_="check")
        batch.drop_column("allocation")
