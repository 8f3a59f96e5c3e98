"""GPU counts: outbox.gpus (the GPUs a grading holds at once) and grading_slots.gpus (the
GPUs the slot's worker owns: the largest grading it takes). Every job and every slot made
before this revision is of one GPU.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-08 00:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE on both databases (SQLite adds a NOT NULL column that has a default
# without copying the table); the default fills the rows already there.


def upgrade() -> None:
    op.add_column("outbox", sa.Column("gpus", sa.Integer(), nullable=False, server_default="1"))
    op.add_column(
        "grading_slots",
        sa.Column("gpus", sa.Integer(), nullable=False, server_default="1"),
    )


def downgrade() -> None:
    op.drop_column("grading_slots", "gpus")
    op.drop_column("outbox", "gpus")
