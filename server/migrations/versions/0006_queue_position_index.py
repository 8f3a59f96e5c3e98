"""queue position index: a queued submission's place in its device type's queue is read at
every poll, and with a season of submissions behind it that was a scan of the whole table

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 07:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_submissions_queue", "submissions", ["gpu_type", "status", "id"])


def downgrade() -> None:
    op.drop_index("ix_submissions_queue", table_name="submissions")
