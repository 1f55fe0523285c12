"""Pools from many runs: ``pool`` (a pool's settings and runs) and ``pool_document`` (each
pooled document of a query with the runs that retrieved it, at which rank, its fused score, its
place in the fused order and in the method's judging order);
docs/campaigns.md#pools-in-the-service.

Reversible: the downgrade drops both tables (the tasks planned from a pool keep their own
snapshot of its documents).

Revision ID: 0022_pools
Revises: 0021_runs
Create Date: 2027-03-15
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0022_pools"
down_revision = "0021_runs"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "pool",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("collection_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("method", sa.String(16), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("budget", sa.Integer(), nullable=True),
        sa.Column("fusion", sa.String(32), nullable=False),
        sa.Column("runs", JSON, nullable=False),
        sa.Column("summary", JSON, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.CheckConstraint("method IN ('depth', 'mtf', 'maxmean')", name=op.f("ck_pool_method")),
        sa.CheckConstraint("depth >= 1", name=op.f("ck_pool_depth")),
        sa.CheckConstraint("budget IS NULL OR budget >= 1", name=op.f("ck_pool_budget")),
        sa.ForeignKeyConstraint(
            ["collection_id"],
            ["collection.id"],
            name=op.f("fk_pool_collection_id_collection"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pool")),
        sa.UniqueConstraint("collection_id", "name", name=op.f("uq_pool_collection_id_name")),
    )
    op.create_index(op.f("ix_pool_collection_id"), "pool", ["collection_id"])
    op.create_table(
        "pool_document",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("pool_id", sa.Integer(), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("doc_id", sa.String(200), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("pick", sa.Integer(), nullable=True),
        sa.Column("fused", sa.Float(), nullable=False),
        sa.Column("hits", JSON, nullable=False),
        sa.CheckConstraint("position >= 0", name=op.f("ck_pool_document_position")),
        sa.CheckConstraint("pick IS NULL OR pick >= 0", name=op.f("ck_pool_document_pick")),
        sa.ForeignKeyConstraint(
            ["pool_id"],
            ["pool.id"],
            name=op.f("fk_pool_document_pool_id_pool"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["query_id"],
            ["query.id"],
            name=op.f("fk_pool_document_query_id_query"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pool_document")),
        sa.UniqueConstraint(
            "pool_id", "query_id", "doc_id", name=op.f("uq_pool_document_pool_id_query_id_doc_id")
        ),
    )
    op.create_index(op.f("ix_pool_document_query_id"), "pool_document", ["query_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_pool_document_query_id"), table_name="pool_document")
    op.drop_table("pool_document")
    op.drop_index(op.f("ix_pool_collection_id"), table_name="pool")
    op.drop_table("pool")
