"""submission_verdicts: a submission's earlier verdicts, kept when an organizer's re-run
grades it again (until this revision a re-run overwrote them: submissions re-run before it
have no history).

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07 03:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "submission_verdicts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("problem_version", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("sol_fraction", sa.Float(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("flags", sa.JSON(), nullable=False),
        sa.Column("report", sa.JSON(), nullable=True),
        sa.Column("worker", sa.String(200), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("replaced_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_submission_verdicts_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_submission_verdicts")),
    )
    op.create_index(
        op.f("ix_submission_verdicts_submission_id"), "submission_verdicts", ["submission_id"]
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_submission_verdicts_submission_id"), table_name="submission_verdicts")
    op.drop_table("submission_verdicts")
