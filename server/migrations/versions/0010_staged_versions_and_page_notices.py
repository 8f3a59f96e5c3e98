"""staged versions and page notices: a live problem's next version waits in
`problems.candidate` while the workers validate it (the live version keeps serving), and a
browser's session keeps the notice for the page after a form (`web_sessions.notice`), so a
new API token is shown once without sitting in the cookie

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("problems") as problems:
        problems.add_column(sa.Column("candidate", sa.JSON(), nullable=True))
    with op.batch_alter_table("web_sessions") as sessions:
        sessions.add_column(sa.Column("notice", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("web_sessions") as sessions:
        sessions.drop_column("notice")
    with op.batch_alter_table("problems") as problems:
        problems.drop_column("candidate")
