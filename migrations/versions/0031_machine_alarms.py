"""The assist rule's audits and alarms (docs/machine-judges.md#audits-that-act):
``machine_audit`` (a person's answer to a question the audit took from the machine: the
P(wrong) claimed, whether the person contradicted it) and ``machine_alarm`` (a judge stopped on
a collection because its audits showed it worse than claimed, with the evidence, until an
admin resumes it).

Reversible: the downgrade drops both tables (the alarms' history is lost).

Revision ID: 0031_machine_alarms
Revises: 0030_machine_failures
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0031_machine_alarms"
down_revision = "0030_machine_failures"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def _fk(table: str, column: str, target: str, ondelete: str = "CASCADE") -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=op.f(f"fk_{table}_{column}_{target}"), ondelete=ondelete
    )


def upgrade() -> None:
    op.create_table(
        "machine_audit",
        sa.Column("judgment_id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("collection_id", sa.Integer(), nullable=False),
        sa.Column("judge", sa.String(300), nullable=False),
        sa.Column("claimed", sa.Float(), nullable=False),
        sa.Column("wrong", sa.Boolean(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        _fk("machine_audit", "judgment_id", "judgment"),
        _fk("machine_audit", "task_id", "task"),
        _fk("machine_audit", "collection_id", "collection"),
        sa.PrimaryKeyConstraint("judgment_id", name=op.f("pk_machine_audit")),
    )
    op.create_index(
        "ix_machine_audit_study", "machine_audit", ["collection_id", "judge", "judgment_id"]
    )
    op.create_table(
        "machine_alarm",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("collection_id", sa.Integer(), nullable=False),
        sa.Column("judge", sa.String(300), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=True),
        sa.Column("audits", sa.Integer(), nullable=False),
        sa.Column("agree", sa.Integer(), nullable=False),
        sa.Column("claimed_wrong", sa.Float(), nullable=False),
        sa.Column("log_ratio", sa.Float(), nullable=False),
        sa.Column("last_judgment_id", sa.Integer(), nullable=False),
        sa.Column("raised_at", TS, nullable=False),
        sa.Column("resumed_at", TS, nullable=True),
        sa.Column("resumed_by", sa.String(150), nullable=True),
        _fk("machine_alarm", "collection_id", "collection"),
        _fk("machine_alarm", "task_id", "task", "SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_machine_alarm")),
    )
    op.create_index(op.f("ix_machine_alarm_collection_id"), "machine_alarm", ["collection_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_machine_alarm_collection_id"), table_name="machine_alarm")
    op.drop_table("machine_alarm")
    op.drop_index("ix_machine_audit_study", table_name="machine_audit")
    op.drop_table("machine_audit")
