"""ranks_scaled on submissions and leaderboard entries: a multi-rank score some of whose
cases ran on fewer ranks than the problem asks for, its worker host offering fewer
(KJ_WORLD_SIZES; grader/report.py's RANKS_SCALED_FLAG). A passed submission recorded before
this revision is marked from its stored flags, and so is its leaderboard entry.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-07 18:00:00
"""

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("submissions", "leaderboard_entries")
# The flag's start as the grader writes it at this revision (grader/report.py), and a passed
# submission's stored status (Status.PASSED): a migration keeps the values of its revision.
RANKS_SCALED_FLAG = "ranks: graded at "
PASSED = "passed"


# Plain ALTER TABLE on both databases (SQLite adds a NOT NULL column that has a default, and
# drops one, without copying the table).


def upgrade() -> None:
    for table in TABLES:
        op.add_column(
            table,
            sa.Column("ranks_scaled", sa.Boolean(), nullable=False, server_default=sa.false()),
        )
    submissions = sa.table(
        "submissions",
        sa.column("id", sa.Integer),
        sa.column("status", sa.String),
        sa.column("flags", sa.JSON),
        sa.column("ranks_scaled", sa.Boolean),
    )
    entries = sa.table(
        "leaderboard_entries",
        sa.column("submission_id", sa.Integer),
        sa.column("ranks_scaled", sa.Boolean),
    )
    # The flags are a JSON list: a match on its text only narrows the rows, each list is
    # then read whole.
    flags = sa.cast(submissions.c.flags, sa.Text)
    connection = op.get_bind()
    found = connection.execute(
        sa.select(submissions.c.id, flags).where(
            submissions.c.status == PASSED, flags.like(f"%{RANKS_SCALED_FLAG}%")
        )
    )
    scaled = [
        sid
        for sid, flags in found
        if any(flag.startswith(RANKS_SCALED_FLAG) for flag in json.loads(flags or "[]"))
    ]
    if scaled:
        connection.execute(
            submissions.update().where(submissions.c.id.in_(scaled)).values(ranks_scaled=True)
        )
        connection.execute(
            entries.update().where(entries.c.submission_id.in_(scaled)).values(ranks_scaled=True)
        )


def downgrade() -> None:
    for table in TABLES:
        op.drop_column(table, "ranks_scaled")
