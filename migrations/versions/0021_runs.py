"""Runs stored on a collection (docs/campaigns.md#runs-on-a-collection).

``run``: one row per uploaded TREC run (collection, name unique per collection, the file's run
tag and name, who uploaded it and when, its query and entry counts). ``run_query``: one row per
(run, query) holding the query's entries in file order as three parallel JSON lists (document
external ids, ranks, scores). A run is only ever read whole (a leaderboard, a pool), so this
compact form reads a 50-query run of depth 1000 as 50 rows, not 50,000; JSON keeps a float
score exactly (its shortest round-trip text). Reversible: the downgrade drops both tables.

Revision ID: 0021_runs
Revises: 0020_username_case
Create Date: 2027-03-15
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0021_runs"
down_revision = "0020_username_case"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "run",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("collection_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("tag", sa.String(200), nullable=False, server_default=""),
        sa.Column("file_name", sa.String(255), nullable=False, server_default=""),
        sa.Column("uploaded_by", sa.Integer(), nullable=True),
        sa.Column("uploaded_at", TS, nullable=False),
        sa.Column("n_queries", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("n_entries", sa.Integer(), nullable=False, server_default="0"),
        sa.ForeignKeyConstraint(
            ["collection_id"],
            ["collection.id"],
            name=op.f("fk_run_collection_id_collection"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["uploaded_by"], ["user.id"], name=op.f("fk_run_uploaded_by_user"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run")),
        sa.UniqueConstraint("collection_id", "name", name=op.f("uq_run_collection_id_name")),
    )
    op.create_index(op.f("ix_run_collection_id"), "run", ["collection_id"])
    op.create_table(
        "run_query",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("query_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("doc_ids", JSON, nullable=False),
        sa.Column("ranks", JSON, nullable=False),
        sa.Column("scores", JSON, nullable=False),
        sa.CheckConstraint("position >= 0", name=op.f("ck_run_query_position")),
        sa.ForeignKeyConstraint(
            ["run_id"], ["run.id"], name=op.f("fk_run_query_run_id_run"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["query_id"],
            ["query.id"],
            name=op.f("fk_run_query_query_id_query"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_query")),
        sa.UniqueConstraint("run_id", "query_id", name=op.f("uq_run_query_run_id_query_id")),
    )
    op.create_index(op.f("ix_run_query_query_id"), "run_query", ["query_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_run_query_query_id"), table_name="run_query")
    op.drop_table("run_query")
    op.drop_index(op.f("ix_run_collection_id"), table_name="run")
    op.drop_table("run")
