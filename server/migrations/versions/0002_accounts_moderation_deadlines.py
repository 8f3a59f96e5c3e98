"""accounts, moderation and deadlines: banned users, hidden and hacked submissions,
problem deadlines, failed log-ins

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 21:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("is_banned", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    with op.batch_alter_table("problems", schema=None) as batch_op:
        batch_op.add_column(sa.Column("deadline", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(
            sa.Column(
                "code_public_after_deadline",
                sa.Boolean(),
                nullable=False,
                server_default=sa.false(),
            )
        )
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("is_hidden", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.add_column(
            sa.Column("is_hacked", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    op.create_table(
        "login_attempts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_name", sa.String(length=64), nullable=False),
        sa.Column("address", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_attempts")),
    )
    with op.batch_alter_table("login_attempts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_login_attempts_address"), ["address"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_login_attempts_created_at"), ["created_at"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_login_attempts_user_name"), ["user_name"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("login_attempts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_login_attempts_user_name"))
        batch_op.drop_index(batch_op.f("ix_login_attempts_created_at"))
        batch_op.drop_index(batch_op.f("ix_login_attempts_address"))
    op.drop_table("login_attempts")
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_column("is_hacked")
        batch_op.drop_column("is_hidden")
    with op.batch_alter_table("problems", schema=None) as batch_op:
        batch_op.drop_column("code_public_after_deadline")
        batch_op.drop_column("deadline")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("is_banned")
