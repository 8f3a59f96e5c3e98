"""short_calls on submissions and leaderboard entries: a GPU score most of whose cases time
calls under 50 µs of device time, which cannot rank finer than a few percent (grader/report.py,
SHORT_CALL_S). A report recorded before this revision never said so: its submission reads
false, as it was graded.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06 22:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("submissions", "leaderboard_entries")


# Plain ALTER TABLE on both databases (SQLite adds a NOT NULL column that has a default, and
# drops one, without copying the table).


def upgrade() -> None:
    for table in TABLES:
        op.add_column(
            table, sa.Column("short_calls", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    for table in TABLES:
        op.drop_column(table, "short_calls")
