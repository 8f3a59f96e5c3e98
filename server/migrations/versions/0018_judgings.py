"""judgings: a competition's final judging (`judgings`), its runs (`judging_runs`: one
submission per grading of a team's entry), and `submissions.judging_id`, which keeps those
runs off every board and count, and `competitions.pin` (the worker fingerprint its judging
expects). Submissions made before this revision belong to none; competitions pin none.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "judgings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("competition_id", sa.Integer(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("entries", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by_id", sa.Integer(), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("decided_by_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["competition_id"],
            ["competitions.id"],
            name=op.f("fk_judgings_competition_id_competitions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["created_by_id"],
            ["users.id"],
            name=op.f("fk_judgings_created_by_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["decided_by_id"],
            ["users.id"],
            name=op.f("fk_judgings_decided_by_id_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_judgings")),
    )
    op.create_index(op.f("ix_judgings_competition_id"), "judgings", ["competition_id"])
    op.create_table(
        "judging_runs",
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("judging_id", sa.Integer(), nullable=False),
        sa.Column("team_id", sa.Integer(), nullable=False),
        sa.Column("entry_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_judging_runs_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["judging_id"],
            ["judgings.id"],
            name=op.f("fk_judging_runs_judging_id_judgings"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_judging_runs_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["entry_id"],
            ["submissions.id"],
            name=op.f("fk_judging_runs_entry_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("submission_id", name=op.f("pk_judging_runs")),
    )
    op.create_index(op.f("ix_judging_runs_judging_id"), "judging_runs", ["judging_id"])
    # A plain column (no foreign key): SQLite adds it without copying the table.
    op.add_column("submissions", sa.Column("judging_id", sa.Integer(), nullable=True))
    op.create_index(op.f("ix_submissions_judging_id"), "submissions", ["judging_id"])
    op.add_column("competitions", sa.Column("pin", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("competitions", "pin")
    op.drop_index(op.f("ix_submissions_judging_id"), table_name="submissions")
    op.drop_column("submissions", "judging_id")
    op.drop_index(op.f("ix_judging_runs_judging_id"), table_name="judging_runs")
    op.drop_table("judging_runs")
    op.drop_index(op.f("ix_judgings_competition_id"), table_name="judgings")
    op.drop_table("judgings")
