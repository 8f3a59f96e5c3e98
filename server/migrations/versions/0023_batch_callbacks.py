"""batch callbacks: a batch's `callback_url` and `callback_secret`, and each item's verdict
on its way there (`callback_deliveries`).

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-07 07:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("batches", sa.Column("callback_url", sa.String(2048), nullable=True))
    op.add_column("batches", sa.Column("callback_secret", sa.String(64), nullable=True))
    op.create_table(
        "callback_deliveries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("batch_id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.String(500), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("failed_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["batch_id"],
            ["batches.id"],
            name=op.f("fk_callback_deliveries_batch_id_batches"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_callback_deliveries")),
    )
    op.create_index(op.f("ix_callback_deliveries_batch_id"), "callback_deliveries", ["batch_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_callback_deliveries_batch_id"), table_name="callback_deliveries")
    op.drop_table("callback_deliveries")
    op.drop_column("batches", "callback_secret")
    op.drop_column("batches", "callback_url")
