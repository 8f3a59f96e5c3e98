"""fair dispatch: a grading job waits in the outbox until a worker of its device's queue is
free, and goes there in fair order (test mode first, then users in turn), which needs the
job's user and priority and the moment its grading started beside it, and the workers a
queue has lately

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 20:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PRIORITY = "CASE submissions.mode WHEN 'test' THEN 0 WHEN 'benchmark' THEN 1 ELSE 2 END"


def upgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.add_column(sa.Column("user_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("priority", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("started_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index("ix_outbox_dispatch", "outbox", ["queue", "done_at", "sent_at"])
    # The workers a queue has: the grading slots that started a job on it lately.
    op.create_index("ix_submissions_started", "submissions", ["gpu_type", "started_at"])
    # Jobs already waiting keep their place: their user and priority from their submission.
    op.execute(
        "UPDATE outbox SET "
        "user_id = (SELECT submissions.user_id FROM submissions "
        "WHERE submissions.id = outbox.subject_id), "
        f"priority = (SELECT {PRIORITY} FROM submissions "
        "WHERE submissions.id = outbox.subject_id) "
        "WHERE job = 'grade' AND done_at IS NULL"
    )
    op.execute(
        "UPDATE outbox SET started_at = (SELECT submissions.started_at FROM submissions "
        "WHERE submissions.id = outbox.subject_id) "
        "WHERE job = 'grade' AND done_at IS NULL"
    )


def downgrade() -> None:
    op.drop_index("ix_submissions_started", table_name="submissions")
    op.drop_index("ix_outbox_dispatch", table_name="outbox")
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("started_at")
        batch.drop_column("priority")
        batch.drop_column("user_id")
