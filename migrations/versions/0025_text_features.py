"""Text features: ``collection.feature_set`` says which feature set the documents' vectors
are (docs/features.md#stored-features).

NULL: the vectors, if any, were imported (LETOR files) or the collection has none. A JSON
object ``{"name": "heapjudge-text", "version": ..., "names": [...], "normalization": ...}``:
heapjudge computed them from the texts, with these column names. ``collection.feature_job``:
the state of the last features job on the queue (``queued``, ``running``, ``done``, ``failed``
with times, error and report). Reversible: the downgrade drops both columns (the vectors stay;
they then read as imported).

Revision ID: 0025_text_features
Revises: 0024_llm_cache
Create Date: 2027-04-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0025_text_features"
down_revision = "0024_llm_cache"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("collection") as batch:
        batch.add_column(sa.Column("feature_set", JSON, nullable=True))
        batch.add_column(sa.Column("feature_job", JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("collection") as batch:
        batch.drop_column("feature_job")
        batch.drop_column("feature_set")
