"""grading slots and device types being validated: each worker's pool processes say they
are there (`grading_slots`), so the dispatcher counts a queue's workers before they have
graded anything; a live problem's newly chosen device types wait in
`problems.gpu_types_pending` until their validation passes

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 16:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "grading_slots",
        sa.Column("worker", sa.String(200), nullable=False),
        sa.Column("queue", sa.String(32), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("worker", "queue", name=op.f("pk_grading_slots")),
    )
    with op.batch_alter_table("problems") as problems:
        problems.add_column(sa.Column("gpu_types_pending", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("problems") as problems:
        problems.drop_column("gpu_types_pending")
    op.drop_table("grading_slots")
