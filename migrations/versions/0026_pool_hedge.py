"""Pools may use Hedge: ``pool.method`` also allows ``hedge`` (docs/campaigns.md#pools).

Reversible: the downgrade refuses while a pool uses Hedge (delete those pools first), then
restores the check of three methods.

Revision ID: 0026_pool_hedge
Revises: 0025_text_features
Create Date: 2027-04-08
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from alembic.util import CommandError

revision = "0026_pool_hedge"
down_revision = "0025_text_features"
branch_labels = None
depends_on = None

FOUR = "method IN ('depth', 'mtf', 'maxmean', 'hedge')"
THREE = "method IN ('depth', 'mtf', 'maxmean')"


def upgrade() -> None:
    with op.batch_alter_table("pool") as batch:
        batch.drop_constraint(op.f("ck_pool_method"), type_="check")
        batch.create_check_constraint(op.f("ck_pool_method"), FOUR)


def downgrade() -> None:
    hedge = op.get_bind().execute(sa.text("SELECT count(*) FROM pool WHERE method = 'hedge'"))
    if hedge.scalar():
        raise CommandError("some pools use Hedge; delete them before downgrading")
    with op.batch_alter_table("pool") as batch:
        batch.drop_constraint(op.f("ck_pool_method"), type_="check")
        batch.create_check_constraint(op.f("ck_pool_method"), THREE)
