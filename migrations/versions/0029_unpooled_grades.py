"""Imported judgments of documents outside their query's pool: ``unpooled_grade`` holds the
qrels grades an import was given for documents its pairing (a run's or BM25's top n) did not
put in the pool (docs/data-formats.md#judgments-outside-the-pool). They are labels evaluation
uses (the ``qrels`` label set) but never documents shown to assessors.

Reversible: the downgrade drops the table (and with it those judgments).

Revision ID: 0029_unpooled_grades
Revises: 0028_pool_allocation
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029_unpooled_grades"
down_revision = "0028_pool_allocation"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "unpooled_grade",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("collection_id", sa.Integer(), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("doc_id", sa.String(200), nullable=False),
        sa.Column("grade", sa.Integer(), nullable=False),
        sa.CheckConstraint("grade >= 0 AND grade <= 4", name=op.f("ck_unpooled_grade_grade")),
        sa.ForeignKeyConstraint(
            ["collection_id"],
            ["collection.id"],
            name=op.f("fk_unpooled_grade_collection_id_collection"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["query_id"],
            ["query.id"],
            name=op.f("fk_unpooled_grade_query_id_query"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_unpooled_grade")),
        sa.UniqueConstraint("query_id", "doc_id", name=op.f("uq_unpooled_grade_query_id_doc_id")),
    )
    op.create_index(
        op.f("ix_unpooled_grade_collection_id"), "unpooled_grade", ["collection_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_unpooled_grade_collection_id"), table_name="unpooled_grade")
    op.drop_table("unpooled_grade")
