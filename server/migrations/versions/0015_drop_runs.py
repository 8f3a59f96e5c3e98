"""drop `runs`: a copy of each report's cases that no code read; every report stays whole in
`submissions.report`, where it was always written with them. A downgrade gives the table back
empty, as the code before this revision wrote it only when recording a report.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06 18:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_table("runs")  # its index and constraints go with it


def downgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("median_s", sa.Float(), nullable=True),
        sa.Column("mean_s", sa.Float(), nullable=True),
        sa.Column("min_s", sa.Float(), nullable=True),
        sa.Column("cv", sa.Float(), nullable=True),
        sa.Column("samples", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_runs_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
        sa.UniqueConstraint("submission_id", "index", name=op.f("uq_runs_submission_id")),
    )
    with op.batch_alter_table("runs") as runs:
        runs.create_index(runs.f("ix_runs_submission_id"), ["submission_id"], unique=False)
