"""problem validation, versions and start time: a problem's status and validation rounds,
its example solutions, where its live leaderboard starts, and when it opens

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 01:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Problems added before validation existed stay live, as they were.
    with op.batch_alter_table("problems", schema=None) as batch_op:
        batch_op.add_column(sa.Column("starts_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(
            sa.Column("status", sa.String(length=16), nullable=False, server_default="live")
        )
        batch_op.add_column(
            sa.Column("validation_attempt", sa.Integer(), nullable=False, server_default="0")
        )
        batch_op.add_column(
            sa.Column("leaderboard_from_version", sa.Integer(), nullable=False, server_default="1")
        )
        batch_op.add_column(
            sa.Column("solutions", sa.JSON(), nullable=False, server_default=sa.text("'{}'"))
        )
    op.create_table(
        "problem_validations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("problem_id", sa.Integer(), nullable=False),
        sa.Column("problem_version", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("gpu_type", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("report", sa.JSON(), nullable=True),
        sa.Column("worker", sa.String(length=200), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["problem_id"],
            ["problems.id"],
            name=op.f("fk_problem_validations_problem_id_problems"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_problem_validations")),
        sa.UniqueConstraint(
            "problem_id", "attempt", "gpu_type", name=op.f("uq_problem_validations_problem_id")
        ),
    )
    with op.batch_alter_table("problem_validations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_problem_validations_problem_id"), ["problem_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("problem_validations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_problem_validations_problem_id"))
    op.drop_table("problem_validations")
    with op.batch_alter_table("problems", schema=None) as batch_op:
        batch_op.drop_column("solutions")
        batch_op.drop_column("leaderboard_from_version")
        batch_op.drop_column("validation_attempt")
        batch_op.drop_column("status")
        batch_op.drop_column("starts_at")
