"""baselines: each problem version's reference, eager and under torch.compile, timed in
leaderboard mode per device type and worker machine (`baselines`). Problems added before
this revision have none until a worker times them.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07 13:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "baselines",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("problem_id", sa.Integer(), nullable=False),
        sa.Column("problem_version", sa.Integer(), nullable=False),
        sa.Column("gpu_type", sa.String(32), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("machine", sa.String(64), nullable=True),
        sa.Column("fingerprint", sa.JSON(), nullable=True),
        sa.Column("eager_s", sa.Float(), nullable=True),
        sa.Column("eager_error", sa.Text(), nullable=True),
        sa.Column("compile_s", sa.Float(), nullable=True),
        sa.Column("compile_error", sa.Text(), nullable=True),
        sa.Column("report", sa.JSON(), nullable=True),
        sa.Column("worker", sa.String(200), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["problem_id"],
            ["problems.id"],
            name=op.f("fk_baselines_problem_id_problems"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_baselines")),
        sa.UniqueConstraint(
            "problem_id",
            "problem_version",
            "gpu_type",
            "machine",
            name=op.f("uq_baselines_problem_id"),
        ),
    )
    op.create_index(op.f("ix_baselines_problem_id"), "baselines", ["problem_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_baselines_problem_id"), table_name="baselines")
    op.drop_table("baselines")
