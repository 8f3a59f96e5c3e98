"""Revision 0024 on SQLite and PostgreSQL: tokens made before it keep what they could do
(read and submit; admin too where their user is an admin) and never expire; a downgrade
takes the columns away and keeps the tokens."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text

from tests.server.competitions.conftest import url as url
from tests.server.migrating import add_users, at_revision, column_names


def test_tokens_keep_what_they_could_do(url: str) -> None:
    with at_revision(url, "0023") as (config, engine):
        add_users(engine, "ada", "bob", admins={"ada"})
        with engine.begin() as connection:
            for user_id, prefix in ((1, "kj_ada"), (2, "kj_bob")):
                connection.execute(
                    text(
                        "INSERT INTO api_tokens (user_id, token_hash, prefix, label, created_at) "
                        "VALUES (:user, :hash, :prefix, '', CURRENT_TIMESTAMP)"
                    ),
                    {"user": user_id, "hash": prefix.ljust(64, "0"), "prefix": prefix},
                )
        command.upgrade(config, "0024")
        with engine.connect() as connection:
            rows = connection.execute(
                text("SELECT prefix, scopes, expires_at FROM api_tokens ORDER BY prefix")
            ).all()
        assert [tuple(row) for row in rows] == [
            ("kj_ada", "read submit admin", None),
            ("kj_bob", "read submit", None),
        ]
        command.downgrade(config, "0023")
        with engine.connect() as connection:
            columns = column_names(connection, "api_tokens")
            assert not {"scopes", "expires_at"} & columns
            assert connection.execute(text("SELECT count(*) FROM api_tokens")).scalar() == 2
        command.upgrade(config, "0024")
