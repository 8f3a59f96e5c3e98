"""user names whatever their case: `ada` and `ADA` were two accounts; a unique index on the
lowercased name makes them one name (an install that already holds such a pair is told
which, and keeps running on the revision before this one until an organizer renames one)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 21:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pairs = (
        op.get_bind()
        .execute(
            sa.text(
                "SELECT lower(name), count(*) FROM users GROUP BY lower(name) HAVING count(*) > 1"
            )
        )
        .all()
    )
    if pairs:
        names = ", ".join(name for name, _ in pairs[:10])
        raise RuntimeError(
            "user names that differ only in case must be one user: rename all but one of each "
            f"of these ({names}) and start again"
        )
    op.create_index("uq_users_name_lower", "users", [sa.text("lower(name)")], unique=True)


def downgrade() -> None:
    op.drop_index("uq_users_name_lower", table_name="users")
