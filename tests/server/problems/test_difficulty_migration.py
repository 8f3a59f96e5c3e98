"""Revision 0025 on SQLite and PostgreSQL: a database with a problem gains `difficulty` on
problems (the problem kept, not rated); a downgrade takes it away and keeps the problem."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text

from tests.server.competitions.conftest import url as url
from tests.server.migrating import add_ada_and_vectoradd, at_revision, column_names


def test_difficulty_comes_and_goes_with_its_revision(url: str) -> None:
    with at_revision(url, "0024") as (config, engine):
        add_ada_and_vectoradd(engine)
        command.upgrade(config, "0025")
        # In SQL: the model holds columns of later revisions.
        with engine.begin() as connection:
            kept = connection.execute(text("SELECT name, difficulty FROM problems")).one()
            assert tuple(kept) == ("vectoradd", None)
            connection.execute(text("UPDATE problems SET difficulty = 'easy'"))
        command.downgrade(config, "0024")
        with engine.connect() as connection:
            assert "difficulty" not in column_names(connection, "problems")
            assert connection.execute(text("SELECT name FROM problems")).scalar() == "vectoradd"
        command.upgrade(config, "0025")
