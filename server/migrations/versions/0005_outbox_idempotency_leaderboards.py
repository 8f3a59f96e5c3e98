"""outbox, idempotency keys and precomputed leaderboards: jobs written with the change
that needs them, a client's retry finding its submission, each user's best kept as reports
are recorded

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 06:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC_TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    # A validation's job now lives in the outbox, which knows when it was sent.
    with op.batch_alter_table("problem_validations", schema=None) as batch_op:
        batch_op.drop_column("sent_at")
    with op.batch_alter_table("problems", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("leaderboard_revision", sa.Integer(), nullable=False, server_default="0")
        )
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("sol_fraction", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("idempotency_key", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("request_sha256", sa.String(length=64), nullable=True))
        batch_op.create_unique_constraint("uq_submissions_user_id", ["user_id", "idempotency_key"])
    op.create_table(
        "outbox",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job", sa.String(length=32), nullable=False),
        sa.Column("subject_id", sa.Integer(), nullable=False),
        sa.Column("queue", sa.String(length=32), nullable=False),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("sent_at", UTC_TIME, nullable=True),
        sa.Column("task_id", sa.String(length=64), nullable=True),
        sa.Column("sends", sa.Integer(), nullable=False),
        sa.Column("done_at", UTC_TIME, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outbox")),
    )
    op.create_index("ix_outbox_job_subject", "outbox", ["job", "subject_id"])
    op.create_index(op.f("ix_outbox_done_at"), "outbox", ["done_at"])
    op.create_table(
        "leaderboard_entries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("problem_id", sa.Integer(), nullable=False),
        sa.Column("gpu_type", sa.String(length=32), nullable=False),
        sa.Column("problem_version", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("sol_fraction", sa.Float(), nullable=True),
        sa.Column("submitted_at", UTC_TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["problem_id"],
            ["problems.id"],
            name=op.f("fk_leaderboard_entries_problem_id_problems"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_leaderboard_entries_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_leaderboard_entries_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_leaderboard_entries")),
        sa.UniqueConstraint(
            "problem_id",
            "gpu_type",
            "problem_version",
            "user_id",
            name=op.f("uq_leaderboard_entries_problem_id"),
        ),
    )
    op.create_index(
        "ix_leaderboard_entries_rank",
        "leaderboard_entries",
        ["problem_id", "gpu_type", "problem_version", "score"],
    )
    op.create_index(op.f("ix_leaderboard_entries_user_id"), "leaderboard_entries", ["user_id"])
    op.create_index(
        op.f("ix_leaderboard_entries_submission_id"), "leaderboard_entries", ["submission_id"]
    )
    op.create_table(
        "leaderboard_records",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("problem_id", sa.Integer(), nullable=False),
        sa.Column("gpu_type", sa.String(length=32), nullable=False),
        sa.Column("problem_version", sa.Integer(), nullable=False),
        sa.Column("at", UTC_TIME, nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["problem_id"],
            ["problems.id"],
            name=op.f("fk_leaderboard_records_problem_id_problems"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_leaderboard_records_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_leaderboard_records_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_leaderboard_records")),
    )
    op.create_index(
        "ix_leaderboard_records_board",
        "leaderboard_records",
        ["problem_id", "gpu_type", "problem_version", "at"],
    )


def downgrade() -> None:
    op.drop_index("ix_leaderboard_records_board", table_name="leaderboard_records")
    op.drop_table("leaderboard_records")
    op.drop_index(op.f("ix_leaderboard_entries_submission_id"), table_name="leaderboard_entries")
    op.drop_index(op.f("ix_leaderboard_entries_user_id"), table_name="leaderboard_entries")
    op.drop_index("ix_leaderboard_entries_rank", table_name="leaderboard_entries")
    op.drop_table("leaderboard_entries")
    op.drop_index(op.f("ix_outbox_done_at"), table_name="outbox")
    op.drop_index("ix_outbox_job_subject", table_name="outbox")
    op.drop_table("outbox")
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_constraint("uq_submissions_user_id", type_="unique")
        batch_op.drop_column("request_sha256")
        batch_op.drop_column("idempotency_key")
        batch_op.drop_column("sol_fraction")
    with op.batch_alter_table("problems", schema=None) as batch_op:
        batch_op.drop_column("leaderboard_revision")
    with op.batch_alter_table("problem_validations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("sent_at", UTC_TIME, nullable=True))
