"""Revision 0017 on SQLite and PostgreSQL: a database with users and problems gains the
competition tables, whose constraints hold one team per user and competition and one team
per name whatever its case; a downgrade takes them away and leaves the rest."""

from __future__ import annotations

from datetime import timedelta

import pytest
from alembic import command
from sqlalchemy import inspect, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from server.models import Competition, CompetitionProblem, Problem, Team, TeamMember, User, utcnow
from tests.server.migrating import add_users, add_vectoradd, at_revision

TABLES = {"competitions", "competition_problems", "teams", "team_members"}


def test_the_competition_tables_come_and_go_with_their_revision(url: str) -> None:
    with at_revision(url, "0016") as (config, engine):
        add_users(engine, "ada", "bob")
        add_vectoradd(engine)
        command.upgrade(config, "head")
        with engine.connect() as connection:
            assert set(inspect(connection).get_table_names()) >= TABLES
        with Session(engine) as db:
            ada, bob = db.scalars(select(User).order_by(User.name)).all()
            problem = db.scalars(select(Problem)).one()
            now = utcnow()
            entry = CompetitionProblem(problem=problem, position=0, weight=2.0, baseline_s=1e-3)
            competition = Competition(
                name="spring-sprint", title="Spring", gpu_type="h200", opens_at=now,
                closes_at=now + timedelta(days=1), scoring="rank_points", team_size=2,
                final_runs=5, problems=[entry],
            )  # fmt: skip
            db.add(competition)
            db.flush()
            red = Team(competition_id=competition.id, name="Red", invite_code="a" * 22)
            blue = Team(competition_id=competition.id, name="Blue", invite_code="b" * 22)
            db.add_all([red, blue])
            db.flush()
            db.add(TeamMember(team_id=red.id, user_id=ada.id, competition_id=competition.id))
            db.add(TeamMember(team_id=red.id, user_id=bob.id, competition_id=competition.id))
            db.commit()
            ids = (competition.id, blue.id, ada.id)
            assert [entry.problem.name for entry in competition.problems] == ["vectoradd"]

        competition_id, blue_id, ada_id = ids
        with Session(engine) as db, pytest.raises(IntegrityError):
            db.add(TeamMember(team_id=blue_id, user_id=ada_id, competition_id=competition_id))
            db.flush()
        with Session(engine) as db, pytest.raises(IntegrityError):
            db.add(Team(competition_id=competition_id, name="rED", invite_code="c" * 22))
            db.flush()

        command.downgrade(config, "0016")
        with engine.connect() as connection:
            tables = set(inspect(connection).get_table_names())
        assert not TABLES & tables and {"users", "problems"} <= tables
        with Session(engine) as db:
            assert db.scalars(select(User.name).order_by(User.name)).all() == ["ada", "bob"]
        command.upgrade(config, "head")
