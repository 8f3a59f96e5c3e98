"""submission progress: where a running submission's grading stands, as its worker last
said (`submissions.progress`, null when it is not running).

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-07 08:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("submissions", sa.Column("progress", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("submissions", "progress")
