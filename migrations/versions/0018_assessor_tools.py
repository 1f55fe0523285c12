"""Assessor tools: a comment on any judgment, broken documents, collection guidelines.

``judgment.comment``: the assessor's optional note. ``judgment.reason`` and the outcome
``broken``: an answer that names a broken document (``doc_id``) with a reason; for a topk task
the row keeps the pair it was shown in (docs/protocols.md#broken-documents), so the shape
constraint gains a third shape. ``collection.guidelines``: Markdown shown on the judging page.

The ``grade`` view reads ``judgment``; SQLite rebuilds the table to change its constraints,
so the view is dropped first and created again (same definition) afterwards. Reversible: the
downgrade deletes broken-document rows (the old schema has no shape for them) and drops the
columns.

Revision ID: 0018_assessor_tools
Revises: 0003_training_jobs
Create Date: 2027-01-15
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018_assessor_tools"
down_revision = "0003_training_jobs"
branch_labels = None
depends_on = None

GRADE_VIEW = (
    "CREATE VIEW grade AS SELECT j.id AS judgment_id, j.task_id, t.query_id, t.assessor_id, "
    "j.doc_id, j.grade, j.active_ms, j.created_at FROM judgment j "
    "JOIN task t ON t.id = j.task_id WHERE j.grade IS NOT NULL AND NOT j.undone"
)
OLD_OUTCOMES = "outcome IS NULL OR outcome IN ('left', 'right', 'tie', 'not_relevant')"
NEW_OUTCOMES = "outcome IS NULL OR outcome IN ('left', 'right', 'tie', 'not_relevant', 'broken')"
OLD_SHAPE = (
    "(left_doc IS NOT NULL AND right_doc IS NOT NULL AND outcome IS NOT NULL"
    " AND doc_id IS NULL AND grade IS NULL) OR "
    "(left_doc IS NULL AND right_doc IS NULL AND outcome IS NULL"
    " AND doc_id IS NOT NULL AND grade IS NOT NULL)"
)
# The same text as app.kernel.models.JUDGMENT_SHAPE (a migration never imports the models).
NEW_SHAPE = (
    "(outcome IS NOT NULL AND outcome <> 'broken' AND left_doc IS NOT NULL"
    " AND right_doc IS NOT NULL AND doc_id IS NULL AND grade IS NULL AND reason IS NULL) OR "
    "(left_doc IS NULL AND right_doc IS NULL AND outcome IS NULL"
    " AND doc_id IS NOT NULL AND grade IS NOT NULL AND reason IS NULL) OR "
    "(outcome = 'broken' AND doc_id IS NOT NULL AND grade IS NULL AND reason IS NOT NULL"
    " AND ((left_doc IS NULL AND right_doc IS NULL)"
    " OR (left_doc IS NOT NULL AND right_doc IS NOT NULL)))"
)


def upgrade() -> None:
    op.execute("DROP VIEW grade")
    with op.batch_alter_table("judgment") as batch:
        batch.add_column(sa.Column("comment", sa.Text(), nullable=True))
        batch.add_column(sa.Column("reason", sa.Text(), nullable=True))
        batch.drop_constraint(op.f("ck_judgment_outcome"), type_="check")
        batch.drop_constraint(op.f("ck_judgment_shape"), type_="check")
        batch.create_check_constraint(op.f("ck_judgment_outcome"), NEW_OUTCOMES)
        batch.create_check_constraint(op.f("ck_judgment_shape"), NEW_SHAPE)
    op.execute(GRADE_VIEW)
    with op.batch_alter_table("collection") as batch:
        batch.add_column(sa.Column("guidelines", sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("collection") as batch:
        batch.drop_column("guidelines")
    op.execute("DROP VIEW grade")
    # The old schema has no shape for a broken document: those rows go (the log loses them).
    op.execute("DELETE FROM judgment WHERE outcome = 'broken'")
    with op.batch_alter_table("judgment") as batch:
        batch.drop_constraint(op.f("ck_judgment_shape"), type_="check")
        batch.drop_constraint(op.f("ck_judgment_outcome"), type_="check")
        batch.create_check_constraint(op.f("ck_judgment_outcome"), OLD_OUTCOMES)
        batch.create_check_constraint(op.f("ck_judgment_shape"), OLD_SHAPE)
        batch.drop_column("reason")
        batch.drop_column("comment")
    op.execute(GRADE_VIEW)
