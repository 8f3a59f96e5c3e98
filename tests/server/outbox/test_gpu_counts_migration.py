"""Revision 0031 on SQLite and PostgreSQL: a grading job waiting in the outbox and a grading
slot recorded before it are of one GPU (`gpus` 1); a downgrade takes both columns away and
keeps the rows."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text

from tests.server.competitions.conftest import url as url
from tests.server.migrating import at_revision, column_names


def test_gpu_counts_come_and_go_with_their_revision(url: str) -> None:
    with at_revision(url, "0030") as (config, engine):
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO outbox (job, subject_id, queue, user_id, priority, created_at, "
                    "sends) VALUES ('grade', 7, 'h100', 1, 0, CURRENT_TIMESTAMP, 0)"
                )
            )
            connection.execute(
                text(
                    "INSERT INTO grading_slots (worker, queue, seen_at) "
                    "VALUES ('host:1.0', 'h100', CURRENT_TIMESTAMP)"
                )
            )
        command.upgrade(config, "0031")
        with engine.begin() as connection:
            job = connection.execute(text("SELECT subject_id, gpus FROM outbox")).one()
            assert tuple(job) == (7, 1)
            slot = connection.execute(text("SELECT worker, gpus FROM grading_slots")).one()
            assert tuple(slot) == ("host:1.0", 1)
            # A job of four GPUs, as the service writes one now.
            connection.execute(
                text(
                    "INSERT INTO outbox (job, subject_id, queue, priority, created_at, sends, "
                    "gpus) VALUES ('grade', 8, 'h100', 0, CURRENT_TIMESTAMP, 0, 4)"
                )
            )
        command.downgrade(config, "0030")
        with engine.connect() as connection:
            assert "gpus" not in column_names(connection, "outbox")
            assert "gpus" not in column_names(connection, "grading_slots")
            assert connection.execute(text("SELECT count(*) FROM outbox")).scalar() == 2
            assert connection.execute(text("SELECT count(*) FROM grading_slots")).scalar() == 1
        command.upgrade(config, "0031")
