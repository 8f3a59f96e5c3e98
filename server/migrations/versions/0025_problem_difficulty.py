"""difficulty on problems: how hard the organizers rate one (easy, medium or hard), from its
task.yml or the admin page. A problem added before this revision is not rated (null).

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-07 07:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE on both databases (SQLite adds and drops a nullable column without
# copying the table).


def upgrade() -> None:
    op.add_column("problems", sa.Column("difficulty", sa.String(16), nullable=True))


def downgrade() -> None:
    op.drop_column("problems", "difficulty")
