"""Second opinions: a strategy's repeat of a pair routed to a second assessor.

``second_opinion``: one row per routed question (task, seq, the pair as shown, who was asked,
status, deadline, the answer's outcome and time, and the judgment that recorded it);
docs/noise.md#routing-re-asks-to-a-second-assessor. A partial unique index allows at most one
undecided row (open, reclaimed, expired) per (task, seq). ``judgment.answered_by``: who gave a
judgment when it was not the task's assessor (NULL: the assessor).

The ``grade`` view reads ``judgment``; SQLite rebuilds the table to add a foreign key, so the
view is dropped first and created again (same definition) afterwards. Reversible: the
downgrade drops the table and the column (the judgments second assessors gave stay in their
tasks' logs, no longer marked as theirs).

Revision ID: 0019_second_opinions
Revises: 0018_assessor_tools
Create Date: 2027-02-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0019_second_opinions"
down_revision = "0018_assessor_tools"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
GRADE_VIEW = (
    "CREATE VIEW grade AS SELECT j.id AS judgment_id, j.task_id, t.query_id, t.assessor_id, "
    "j.doc_id, j.grade, j.active_ms, j.created_at FROM judgment j "
    "JOIN task t ON t.id = j.task_id WHERE j.grade IS NOT NULL AND NOT j.undone"
)
UNDECIDED = "status IN ('open', 'reclaimed', 'expired')"


def upgrade() -> None:
    op.execute("DROP VIEW grade")
    with op.batch_alter_table("judgment") as batch:
        batch.add_column(sa.Column("answered_by", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            op.f("fk_judgment_answered_by_user"),
            "user",
            ["answered_by"],
            ["id"],
            ondelete="RESTRICT",
        )
    op.execute(GRADE_VIEW)
    op.create_table(
        "second_opinion",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("left_doc", sa.String(200), nullable=False),
        sa.Column("right_doc", sa.String(200), nullable=False),
        sa.Column("allowed", JSON, nullable=False),
        sa.Column("assignee_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("deadline_at", TS, nullable=False),
        sa.Column("decided_at", TS, nullable=True),
        sa.Column("outcome", sa.String(16), nullable=True),
        sa.Column("active_ms", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("judgment_id", sa.Integer(), nullable=True),
        sa.CheckConstraint(
            "status IN ('open', 'answered', 'reclaimed', 'expired', 'cancelled')",
            name=op.f("ck_second_opinion_status"),
        ),
        sa.CheckConstraint("seq >= 0", name=op.f("ck_second_opinion_seq")),
        sa.CheckConstraint("active_ms >= 0", name=op.f("ck_second_opinion_active_ms")),
        sa.CheckConstraint(
            "outcome IS NULL OR outcome IN ('left', 'right', 'tie', 'not_relevant')",
            name=op.f("ck_second_opinion_outcome"),
        ),
        sa.ForeignKeyConstraint(
            ["task_id"],
            ["task.id"],
            name=op.f("fk_second_opinion_task_id_task"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["assignee_id"],
            ["user.id"],
            name=op.f("fk_second_opinion_assignee_id_user"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["judgment_id"],
            ["judgment.id"],
            name=op.f("fk_second_opinion_judgment_id_judgment"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_second_opinion")),
    )
    op.create_index(
        "uq_second_opinion_task_id_seq_undecided",
        "second_opinion",
        ["task_id", "seq"],
        unique=True,
        sqlite_where=sa.text(UNDECIDED),
        postgresql_where=sa.text(UNDECIDED),
    )
    op.create_index(
        "ix_second_opinion_assignee_id_status", "second_opinion", ["assignee_id", "status"]
    )


def downgrade() -> None:
    op.drop_index("ix_second_opinion_assignee_id_status", table_name="second_opinion")
    op.drop_index("uq_second_opinion_task_id_seq_undecided", table_name="second_opinion")
    op.drop_table("second_opinion")
    op.execute("DROP VIEW grade")
    with op.batch_alter_table("judgment") as batch:
        batch.drop_constraint(op.f("fk_judgment_answered_by_user"), type_="foreignkey")
        batch.drop_column("answered_by")
    op.execute(GRADE_VIEW)
