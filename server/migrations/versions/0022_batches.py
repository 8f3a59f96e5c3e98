"""batches: submissions sent together by one token (`batches`), each item a submission
with `submissions.batch_id` and the client's `batch_key` for it.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-07 04:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "batches",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("token_id", sa.Integer(), nullable=True),
        sa.Column("tier", sa.String(16), nullable=False),
        sa.Column("idempotency_key", sa.String(200), nullable=True),
        sa.Column("request_sha256", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_batches_user_id_users"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["token_id"],
            ["api_tokens.id"],
            name=op.f("fk_batches_token_id_api_tokens"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_batches")),
        sa.UniqueConstraint("user_id", "idempotency_key", name=op.f("uq_batches_user_id")),
    )
    op.create_index(op.f("ix_batches_user_id"), "batches", ["user_id"])
    op.create_index(op.f("ix_batches_token_id"), "batches", ["token_id"])
    # Columns added in place, with no constraint SQLite would need a table copy for (other
    # tables' rows refer to submissions): `batch_id` names a batch as `judging_id` names a
    # judging, and the key's uniqueness within a batch is a unique index.
    op.add_column("submissions", sa.Column("batch_id", sa.Integer(), nullable=True))
    op.add_column("submissions", sa.Column("batch_key", sa.String(200), nullable=True))
    op.create_index(op.f("ix_submissions_batch_id"), "submissions", ["batch_id"])
    op.create_index(
        "uq_submissions_batch_id_batch_key", "submissions", ["batch_id", "batch_key"], unique=True
    )


def downgrade() -> None:
    op.drop_index("uq_submissions_batch_id_batch_key", table_name="submissions")
    op.drop_index(op.f("ix_submissions_batch_id"), table_name="submissions")
    op.drop_column("submissions", "batch_key")
    op.drop_column("submissions", "batch_id")
    op.drop_index(op.f("ix_batches_token_id"), table_name="batches")
    op.drop_index(op.f("ix_batches_user_id"), table_name="batches")
    op.drop_table("batches")
