"""Revision 0027 on SQLite and PostgreSQL: every account made before it counts as verified
and signed up with no invite; a downgrade takes invites, verification links and the two
columns away and keeps the users."""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, text

from tests.server.competitions.conftest import url as url
from tests.server.migrating import add_users, at_revision, column_names


def test_migration_0027_keeps_every_account_verified(url: str) -> None:
    with at_revision(url, "0026") as (config, engine):
        add_users(engine, "ada")
        command.upgrade(config, "0027")
        with engine.begin() as connection:
            assert tuple(
                connection.execute(text("SELECT is_verified, invite_id FROM users")).one()
            ) == (True, None)
            connection.execute(
                text(
                    "INSERT INTO invites (code, note, max_uses, uses, created_at) "
                    "VALUES ('ABCD-EFGH-JKLM', '', 1, 1, CURRENT_TIMESTAMP)"
                )
            )
            connection.execute(
                text(
                    "INSERT INTO users (name, is_admin, is_banned, created_at, is_verified, "
                    "invite_id) VALUES ('bob', :no, :no, CURRENT_TIMESTAMP, :no, 1)"
                ),
                {"no": False},
            )
        command.downgrade(config, "0026")
        with engine.connect() as connection:
            tables = set(inspect(connection).get_table_names())
            assert not {"invites", "email_verifications"} & tables
            columns = column_names(connection, "users")
            assert not {"is_verified", "invite_id"} & columns
            assert connection.execute(text("SELECT count(*) FROM users")).scalar() == 2
        command.upgrade(config, "0027")
