"""Revision 0025 on SQLite and PostgreSQL: a database with a problem gains `difficulty` on
problems (the problem kept, not rated); a downgrade takes it away and keeps the problem."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text
from sqlalchemy.orm import Session

from server.models import Problem
from tests.server.competitions.conftest import url as url
from tests.server.migrating import add_ada_and_vectoradd, at_revision, column_names


def test_difficulty_comes_and_goes_with_its_revision(url: str) -> None:
    with at_revision(url, "0024") as (config, engine):
        add_ada_and_vectoradd(engine)
        command.upgrade(config, "0025")
        with Session(engine) as db:
            kept = db.get(Problem, 1)
            assert kept is not None and kept.name == "vectoradd" and kept.difficulty is None
            kept.difficulty = "easy"
            db.commit()
        command.downgrade(config, "0024")
        with engine.connect() as connection:
            assert "difficulty" not in column_names(connection, "problems")
            assert connection.execute(text("SELECT name FROM problems")).scalar() == "vectoradd"
        command.upgrade(config, "0025")
