"""rejudges: a review set (table judgings) is a competition's final judging or an
organizer's rejudge of selected submissions: ``kind`` (final for those already there),
``selection`` (a rejudge's filters), a competition and a run's team only for a final one.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07 04:10:00
"""

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


@contextmanager
def quiet_reflection() -> Iterator[None]:
    """SQLite's batch mode copies a table after reflecting it and the tables its keys name;
    SQLAlchemy cannot reflect users' expression index (lower(name)) and says so, which is
    harmless here: the copies keep the keys, not the users table's indexes."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Skipped unsupported reflection", sa.exc.SAWarning)
        yield


def upgrade() -> None:
    with quiet_reflection():
        alter()


def alter() -> None:
    with op.batch_alter_table("judgings", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("kind", sa.String(16), nullable=False, server_default="final")
        )
        batch_op.add_column(sa.Column("selection", sa.JSON(), nullable=True))
        batch_op.alter_column("competition_id", existing_type=sa.Integer(), nullable=True)
    with op.batch_alter_table("judging_runs", schema=None) as batch_op:
        batch_op.alter_column("team_id", existing_type=sa.Integer(), nullable=True)


def downgrade() -> None:
    # A rejudge has no competition and its runs no team: they go with the revision.
    op.execute(
        "DELETE FROM judging_runs WHERE judging_id IN "
        "(SELECT id FROM judgings WHERE kind = 'rejudge')"
    )
    op.execute("DELETE FROM judgings WHERE kind = 'rejudge'")
    with quiet_reflection():
        restore()


def restore() -> None:
    with op.batch_alter_table("judging_runs", schema=None) as batch_op:
        batch_op.alter_column("team_id", existing_type=sa.Integer(), nullable=False)
    with op.batch_alter_table("judgings", schema=None) as batch_op:
        batch_op.alter_column("competition_id", existing_type=sa.Integer(), nullable=False)
        batch_op.drop_column("selection")
        batch_op.drop_column("kind")
