"""competitions: a competition over some problems on one device type (`competitions`), its
problems with their weights and baselines (`competition_problems`), its teams with their
invite codes and disqualifications (`teams`), and who is in which (`team_members`: one team
per user and competition)

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-07 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "competitions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("gpu_type", sa.String(32), nullable=False),
        sa.Column("opens_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closes_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("freeze_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("scoring", sa.String(32), nullable=False),
        sa.Column("points_table", sa.JSON(), nullable=True),
        sa.Column("team_size", sa.Integer(), nullable=False),
        sa.Column("final_runs", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_competitions")),
        sa.UniqueConstraint("name", name=op.f("uq_competitions_name")),
    )
    op.create_table(
        "competition_problems",
        sa.Column("competition_id", sa.Integer(), nullable=False),
        sa.Column("problem_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("weight", sa.Float(), nullable=False),
        sa.Column("baseline_s", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["competition_id"],
            ["competitions.id"],
            name=op.f("fk_competition_problems_competition_id_competitions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["problem_id"],
            ["problems.id"],
            name=op.f("fk_competition_problems_problem_id_problems"),
        ),
        sa.PrimaryKeyConstraint(
            "competition_id", "problem_id", name=op.f("pk_competition_problems")
        ),
    )
    op.create_index(
        op.f("ix_competition_problems_problem_id"), "competition_problems", ["problem_id"]
    )
    op.create_table(
        "teams",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("competition_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("invite_code", sa.String(32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("disqualified_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("disqualified_reason", sa.Text(), nullable=True),
        sa.Column("disqualified_by_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["competition_id"],
            ["competitions.id"],
            name=op.f("fk_teams_competition_id_competitions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["disqualified_by_id"],
            ["users.id"],
            name=op.f("fk_teams_disqualified_by_id_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_teams")),
        sa.UniqueConstraint("invite_code", name=op.f("uq_teams_invite_code")),
    )
    op.create_index(op.f("ix_teams_competition_id"), "teams", ["competition_id"])
    # One team per name in a competition whatever its case.
    op.create_index(
        "uq_teams_competition_id_name_lower",
        "teams",
        ["competition_id", sa.text("lower(name)")],
        unique=True,
    )
    op.create_table(
        "team_members",
        sa.Column("team_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("competition_id", sa.Integer(), nullable=False),
        sa.Column("registered_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["competition_id"],
            ["competitions.id"],
            name=op.f("fk_team_members_competition_id_competitions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_team_members_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_team_members_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("team_id", "user_id", name=op.f("pk_team_members")),
        # A user is in at most one team of a competition.
        sa.UniqueConstraint(
            "competition_id", "user_id", name=op.f("uq_team_members_competition_id")
        ),
    )
    op.create_index(op.f("ix_team_members_user_id"), "team_members", ["user_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_team_members_user_id"), table_name="team_members")
    op.drop_table("team_members")
    op.drop_index("uq_teams_competition_id_name_lower", table_name="teams")
    op.drop_index(op.f("ix_teams_competition_id"), table_name="teams")
    op.drop_table("teams")
    op.drop_index(op.f("ix_competition_problems_problem_id"), table_name="competition_problems")
    op.drop_table("competition_problems")
    op.drop_table("competitions")
