"""judging_queue on competitions: the queue a competition's final judging sends its runs to,
which the workers of its pinned machines take. A competition added before this revision
names none (null): its runs go to its GPU type's queue, as they did.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-07 11:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE on both databases (SQLite adds and drops a nullable column without
# copying the table).


def upgrade() -> None:
    op.add_column("competitions", sa.Column("judging_queue", sa.String(32), nullable=True))


def downgrade() -> None:
    op.drop_column("competitions", "judging_queue")
