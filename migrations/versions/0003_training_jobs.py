"""Training runs become queued jobs: cancel, progress, attempts, heartbeat, time limit, options.

A run is executed by a separate worker process (``heapjudge worker``, :mod:`app.training.jobs`). The
new columns carry what the web process and the worker share: ``options`` (truth source, folds,
k), ``progress``, ``attempts`` (executions started, for retry after a killed worker),
``cancel_requested``, ``heartbeat_at`` (the worker's last sign of life) and
``time_limit_seconds``; status ``cancelled`` is new. Reversible: the downgrade turns cancelled
runs into failed ones (the old status set has no ``cancelled``) and drops the columns.

Revision ID: 0003_training_jobs
Revises: 0001_initial
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0003_training_jobs"
down_revision = "0001_initial"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
OLD_STATUSES = "status IN ('queued', 'running', 'done', 'failed')"
NEW_STATUSES = "status IN ('queued', 'running', 'done', 'failed', 'cancelled')"


def upgrade() -> None:
    with op.batch_alter_table("training_run") as batch:
        batch.add_column(sa.Column("options", JSON, nullable=True))
        batch.add_column(sa.Column("progress", JSON, nullable=True))
        batch.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(
            sa.Column("cancel_requested", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch.add_column(sa.Column("heartbeat_at", TS, nullable=True))
        batch.add_column(sa.Column("time_limit_seconds", sa.Integer(), nullable=True))
        batch.drop_constraint(op.f("ck_training_run_status"), type_="check")
        batch.create_check_constraint(op.f("ck_training_run_status"), NEW_STATUSES)


def downgrade() -> None:
    op.execute("UPDATE training_run SET status = 'failed' WHERE status = 'cancelled'")
    with op.batch_alter_table("training_run") as batch:
        batch.drop_constraint(op.f("ck_training_run_status"), type_="check")
        batch.create_check_constraint(op.f("ck_training_run_status"), OLD_STATUSES)
        batch.drop_column("time_limit_seconds")
        batch.drop_column("heartbeat_at")
        batch.drop_column("cancel_requested")
        batch.drop_column("attempts")
        batch.drop_column("progress")
        batch.drop_column("options")
