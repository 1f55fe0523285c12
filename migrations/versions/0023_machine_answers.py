"""Machine answers in the judgment log, with their provenance, and what a task's machine reads.

``judgment``: ``source`` ('person' | 'machine', default 'person'), and for a machine's answer
``machine_version`` (judge and calibration), ``prompt_hash`` (an LLM prompt template's) and
``probability`` (its calibrated probability of being right, in [1/2, 1]); a CHECK that a
machine's row carries its version and probability and answers a pair left or right, and a
person's carries none of them (docs/machine-judges.md#the-service).

``task_machine``: a task's judge version and the study calibration frozen when it starts.
``machine_score``: a judge's raw score per (task, document), computed when the task is
created (BM25, a trained model). ``machine_opinion``: a judge's raw P(first better) per
(task, ordered pair), prepared by a job (an LLM).

The ``grade`` view reads ``judgment``; SQLite rebuilds the table, so the view is dropped first
and created again (same definition). Reversible: the downgrade drops the tables and columns,
and first the machine's judgments (a log without them would not be a person's log).

Revision ID: 0023_machine_answers
Revises: 0022_pools
Create Date: 2027-04-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from alembic.util import CommandError
from sqlalchemy.dialects import postgresql

revision = "0023_machine_answers"
down_revision = "0022_pools"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
GRADE_VIEW = (
    "CREATE VIEW grade AS SELECT j.id AS judgment_id, j.task_id, t.query_id, t.assessor_id, "
    "j.doc_id, j.grade, j.active_ms, j.created_at FROM judgment j "
    "JOIN task t ON t.id = j.task_id WHERE j.grade IS NOT NULL AND NOT j.undone"
)
# Written out as in app.kernel.models (a migration does not import the models).
PROVENANCE = (
    "(source = 'person' AND machine_version IS NULL AND probability IS NULL"
    " AND prompt_hash IS NULL) OR "
    "(source = 'machine' AND machine_version IS NOT NULL AND probability IS NOT NULL"
    " AND probability >= 0.5 AND probability <= 1 AND left_doc IS NOT NULL"
    " AND right_doc IS NOT NULL AND outcome IN ('left', 'right'))"
)


#: SQLite's batch mode copies the judgment table, reflecting it first. By default the
#: reflection follows its foreign keys and reflects the referred tables too, among them
#: ``user`` whose expression index ``uq_user_username_lower`` SQLAlchemy cannot reflect (an
#: SAWarning printed by every upgrade). The copy needs only the judgment table's own columns
#: and constraints; its foreign keys keep naming their tables.
NO_REFERENTS = {"resolve_fks": False}


def _task_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["task_id"], ["task.id"], name=op.f(f"fk_{table}_task_id_task"), ondelete="CASCADE"
    )


def upgrade() -> None:
    op.execute("DROP VIEW grade")
    with op.batch_alter_table("judgment", reflect_kwargs=NO_REFERENTS) as batch:
        batch.add_column(
            sa.Column("source", sa.String(16), nullable=False, server_default="person")
        )
        batch.add_column(sa.Column("machine_version", sa.String(400), nullable=True))
        batch.add_column(sa.Column("prompt_hash", sa.String(64), nullable=True))
        batch.add_column(sa.Column("probability", sa.Float(), nullable=True))
        batch.create_check_constraint(op.f("ck_judgment_source"), "source IN ('person', 'machine')")
        batch.create_check_constraint(op.f("ck_judgment_provenance"), PROVENANCE)
    op.execute(GRADE_VIEW)
    op.create_table(
        "task_machine",
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(64), nullable=False),
        sa.Column("judge", sa.String(300), nullable=False),
        sa.Column("calibration", JSON, nullable=True),
        sa.Column("calibrated_at", TS, nullable=True),
        sa.Column("created_at", TS, nullable=False),
        _task_fk("task_machine"),
        sa.PrimaryKeyConstraint("task_id", name=op.f("pk_task_machine")),
    )
    op.create_table(
        "machine_score",
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("doc_id", sa.String(200), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        _task_fk("machine_score"),
        sa.PrimaryKeyConstraint("task_id", "doc_id", name=op.f("pk_machine_score")),
    )
    op.create_table(
        "machine_opinion",
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("first_doc", sa.String(200), nullable=False),
        sa.Column("second_doc", sa.String(200), nullable=False),
        sa.Column("probability", sa.Float(), nullable=False),
        sa.Column("prompt_hash", sa.String(64), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.CheckConstraint(
            "probability >= 0 AND probability <= 1",
            name=op.f("ck_machine_opinion_probability"),
        ),
        _task_fk("machine_opinion"),
        sa.PrimaryKeyConstraint(
            "task_id", "first_doc", "second_doc", name=op.f("pk_machine_opinion")
        ),
    )


def downgrade() -> None:
    machine = (
        op.get_bind()
        .execute(sa.text("SELECT count(*) FROM judgment WHERE source = 'machine'"))
        .scalar()
    )
    if machine:
        raise CommandError(
            f"{machine} judgments were given by a machine; the schema before machine answers "
            "cannot hold them. Delete the tasks that have them and downgrade again."
        )
    op.drop_table("machine_opinion")
    op.drop_table("machine_score")
    op.drop_table("task_machine")
    op.execute("DROP VIEW grade")
    with op.batch_alter_table("judgment", reflect_kwargs=NO_REFERENTS) as batch:
        batch.drop_constraint(op.f("ck_judgment_provenance"), type_="check")
        batch.drop_constraint(op.f("ck_judgment_source"), type_="check")
        batch.drop_column("probability")
        batch.drop_column("prompt_hash")
        batch.drop_column("machine_version")
        batch.drop_column("source")
    op.execute(GRADE_VIEW)
