"""Revision 0030 on SQLite and PostgreSQL: a database with a user and a problem gains
`is_author` on users (false) and `owner_id` on problems (none: an organizer's, its reference
trusted as before); a downgrade takes both away and keeps the rows."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text

from tests.server.competitions.conftest import url as url
from tests.server.migrating import add_ada_and_vectoradd, at_revision, column_names


def test_authors_come_and_go_with_their_revision(url: str) -> None:
    with at_revision(url, "0029") as (config, engine):
        add_ada_and_vectoradd(engine)
        command.upgrade(config, "0030")
        with engine.begin() as connection:
            user = connection.execute(text("SELECT name, is_author FROM users")).one()
            assert (user[0], bool(user[1])) == ("ada", False)
            problem = connection.execute(text("SELECT name, owner_id FROM problems")).one()
            assert tuple(problem) == ("vectoradd", None)
        command.downgrade(config, "0029")
        with engine.connect() as connection:
            assert "is_author" not in column_names(connection, "users")
            assert "owner_id" not in column_names(connection, "problems")
            assert connection.execute(text("SELECT name FROM problems")).scalar() == "vectoradd"
        command.upgrade(config, "0030")
