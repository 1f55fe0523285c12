"""The machine's gold set (docs/machine-judges.md#the-gold-set): ``machine_gold``, pairs of
one query's documents whose right answer an admin stated, evidence of the machine's error
rate beside people's answers.

Reversible: the downgrade drops the table (the marked pairs are lost).

Revision ID: 0032_machine_gold
Revises: 0031_machine_alarms
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0032_machine_gold"
down_revision = "0031_machine_alarms"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "machine_gold",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("collection_id", sa.Integer(), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("better_doc", sa.String(200), nullable=False),
        sa.Column("worse_doc", sa.String(200), nullable=False),
        sa.Column("created_by", sa.String(150), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["collection_id"],
            ["collection.id"],
            name=op.f("fk_machine_gold_collection_id_collection"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["query_id"],
            ["query.id"],
            name=op.f("fk_machine_gold_query_id_query"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_machine_gold")),
        sa.UniqueConstraint(
            "query_id",
            "better_doc",
            "worse_doc",
            name=op.f("uq_machine_gold_query_id_better_doc_worse_doc"),
        ),
    )
    op.create_index(op.f("ix_machine_gold_collection_id"), "machine_gold", ["collection_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_machine_gold_collection_id"), table_name="machine_gold")
    op.drop_table("machine_gold")
