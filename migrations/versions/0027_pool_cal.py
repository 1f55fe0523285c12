"""Pools may use continuous active learning: ``pool.method`` also allows ``cal``
(docs/campaigns.md#continuous-active-learning).

Reversible: the downgrade refuses while a pool uses it (delete those pools first), then
restores the check of four methods.

Revision ID: 0027_pool_cal
Revises: 0026_pool_hedge
Create Date: 2027-04-09
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from alembic.util import CommandError

revision = "0027_pool_cal"
down_revision = "0026_pool_hedge"
branch_labels = None
depends_on = None

FIVE = "method IN ('depth', 'mtf', 'maxmean', 'hedge', 'cal')"
FOUR = "method IN ('depth', 'mtf', 'maxmean', 'hedge')"


def upgrade() -> None:
    with op.batch_alter_table("pool") as batch:
        batch.drop_constraint(op.f("ck_pool_method"), type_="check")
        batch.create_check_constraint(op.f("ck_pool_method"), FIVE)


def downgrade() -> None:
    cal = op.get_bind().execute(sa.text("SELECT count(*) FROM pool WHERE method = 'cal'"))
    if cal.scalar():
        raise CommandError("some pools use continuous active learning; delete them first")
    with op.batch_alter_table("pool") as batch:
        batch.drop_constraint(op.f("ck_pool_method"), type_="check")
        batch.create_check_constraint(op.f("ck_pool_method"), FOUR)
