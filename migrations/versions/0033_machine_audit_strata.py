"""The assist rule's evidence per stratum (docs/machine-judges.md#the-rule): ``machine_audit``
gains ``stratum`` (the question's confidence bin × stake class, NULL on rows stored before)
and ``tested`` (the row is an audit the sequential test counts; false for a person's answer
that is evidence of its stratum only, stored with ``claimed`` 1: no claim).

Reversible: the downgrade drops both columns and the evidence rows that were not audits.

Revision ID: 0033_machine_audit_strata
Revises: 0032_machine_gold
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0033_machine_audit_strata"
down_revision = "0032_machine_gold"
branch_labels = None
depends_on = None

#: The batch copy must not reflect the tables the foreign keys point to (``user``'s
#: expression index cannot be reflected).
NO_REFERENTS = {"resolve_fks": False}


def upgrade() -> None:
    with op.batch_alter_table("machine_audit", reflect_kwargs=NO_REFERENTS) as batch:
        batch.add_column(sa.Column("stratum", sa.Integer(), nullable=True))
        batch.add_column(
            sa.Column("tested", sa.Boolean(), nullable=False, server_default=sa.true())
        )


def downgrade() -> None:
    op.execute("DELETE FROM machine_audit WHERE NOT tested")
    with op.batch_alter_table("machine_audit", reflect_kwargs=NO_REFERENTS) as batch:
        batch.drop_column("tested")
        batch.drop_column("stratum")
