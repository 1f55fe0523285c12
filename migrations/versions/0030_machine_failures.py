"""The machine's failures, visible: counters and the last error per study (``llm_usage``) and
per task (``task_machine``), and ``machine_failure_alarm``, alarms about a collection's machine (a
task's opinion job whose every call failed; other checks add their own kinds)
(docs/machine-judges.md#when-the-machine-fails).

Reversible: the downgrade drops the table and the columns (the alarms and counters are lost;
nothing else depends on them).

Revision ID: 0030_machine_failures
Revises: 0029_unpooled_grades
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030_machine_failures"
down_revision = "0029_unpooled_grades"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
#: SQLite's batch mode copies a table, reflecting it first; by default the reflection follows
#: its foreign keys to the referred tables, among them ``user``, whose expression index
#: SQLAlchemy cannot reflect (an SAWarning on every upgrade). The copy needs only the table's
#: own columns and constraints (as in 0023).
NO_REFERENTS = {"resolve_fks": False}


def upgrade() -> None:
    with op.batch_alter_table("llm_usage", reflect_kwargs=NO_REFERENTS) as batch:
        batch.add_column(sa.Column("timeouts", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("last_error", sa.String(300), nullable=True))
        batch.add_column(sa.Column("last_error_at", TS, nullable=True))
    with op.batch_alter_table("task_machine", reflect_kwargs=NO_REFERENTS) as batch:
        for name in ("calls", "calls_failed", "calls_timed_out"):
            batch.add_column(sa.Column(name, sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("last_error", sa.String(300), nullable=True))
        batch.add_column(sa.Column("last_error_at", TS, nullable=True))
    op.create_table(
        "machine_failure_alarm",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("collection_id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=True),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("evidence", sa.Text(), nullable=False),
        sa.Column("raised_at", TS, nullable=False),
        sa.Column("seen_at", TS, nullable=False),
        sa.Column("cleared_at", TS, nullable=True),
        sa.ForeignKeyConstraint(
            ["collection_id"],
            ["collection.id"],
            name=op.f("fk_machine_failure_alarm_collection_id_collection"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["task_id"],
            ["task.id"],
            name=op.f("fk_machine_failure_alarm_task_id_task"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_machine_failure_alarm")),
    )
    op.create_index(
        "ix_machine_failure_alarm_collection_open",
        "machine_failure_alarm",
        ["collection_id", "cleared_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_machine_failure_alarm_collection_open", table_name="machine_failure_alarm")
    op.drop_table("machine_failure_alarm")
    with op.batch_alter_table("task_machine", reflect_kwargs=NO_REFERENTS) as batch:
        for name in ("last_error_at", "last_error", "calls_timed_out", "calls_failed", "calls"):
            batch.drop_column(name)
    with op.batch_alter_table("llm_usage", reflect_kwargs=NO_REFERENTS) as batch:
        for name in ("last_error_at", "last_error", "timeouts"):
            batch.drop_column(name)
