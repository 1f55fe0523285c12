"""The LLM judge's response cache and its spending per study.

``llm_response``: one cached reply per cache key (SHA-256 of the model, the template key and
hash, the full prompt and the request's parameters) with its token counts, so asking the same
prompt again sends nothing. ``llm_usage``: requests, cache hits, tokens, malformed and failed
replies and prompts refused over the budget, per study: a collection's plan, or the collection
itself for tasks without a plan (``plan = ''``). docs/machine-judges.md#the-llm-client.
No API key is stored. Reversible: the downgrade drops both tables (the cache is rebuilt by
asking again, at the tokens' cost).

Revision ID: 0024_llm_cache
Revises: 0023_machine_answers
Create Date: 2027-03-15
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024_llm_cache"
down_revision = "0023_machine_answers"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
COUNTS = (
    "requests >= 0 AND cached >= 0 AND prompt_tokens >= 0 AND completion_tokens >= 0"
    " AND malformed >= 0 AND failed >= 0 AND refused >= 0"
)


def upgrade() -> None:
    op.create_table(
        "llm_response",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cache_key", sa.String(64), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("template", sa.String(64), nullable=False),
        sa.Column("prompt_hash", sa.String(64), nullable=False),
        sa.Column("reply", sa.Text(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.CheckConstraint(
            "prompt_tokens >= 0 AND completion_tokens >= 0", name=op.f("ck_llm_response_tokens")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_llm_response")),
        sa.UniqueConstraint("cache_key", name=op.f("uq_llm_response_cache_key")),
    )
    op.create_table(
        "llm_usage",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("collection_id", sa.Integer(), nullable=False),
        sa.Column("plan", sa.String(100), nullable=False, server_default=""),
        sa.Column("requests", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("cached", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("prompt_tokens", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("completion_tokens", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("malformed", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("failed", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("refused", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("updated_at", TS, nullable=False),
        sa.CheckConstraint(COUNTS, name=op.f("ck_llm_usage_counts")),
        sa.ForeignKeyConstraint(
            ["collection_id"],
            ["collection.id"],
            name=op.f("fk_llm_usage_collection_id_collection"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_llm_usage")),
        sa.UniqueConstraint("collection_id", "plan", name=op.f("uq_llm_usage_collection_id_plan")),
    )


def downgrade() -> None:
    op.drop_table("llm_usage")
    op.drop_table("llm_response")
