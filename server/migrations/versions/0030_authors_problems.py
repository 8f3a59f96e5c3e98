"""Authors' own problems: users.is_author (an admin's grant: the user's tokens may have the
`author` scope) and problems.owner_id (the author a problem belongs to; none for an
organizer's). Every problem made before this revision is an organizer's.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-07 21:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE on both databases (SQLite adds a NOT NULL column that has a default, and
# a nullable one, without copying the table).


def upgrade() -> None:
    op.add_column(
        "users",
        sa.Column("is_author", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column("problems", sa.Column("owner_id", sa.Integer(), nullable=True))
    op.create_index("ix_problems_owner_id", "problems", ["owner_id"])


def downgrade() -> None:
    op.drop_index("ix_problems_owner_id", table_name="problems")
    op.drop_column("problems", "owner_id")
    op.drop_column("users", "is_author")
