"""test mode's short limit per device type: `problems.test_cases_timeouts`, what each
device type's validation derived from the reference's own test cases for the live version
(a staged version keeps its own in `problems.candidate`)

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("problems") as problems:
        problems.add_column(sa.Column("test_cases_timeouts", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("problems") as problems:
        problems.drop_column("test_cases_timeouts")
