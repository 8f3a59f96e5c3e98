"""Revision 0022 on SQLite and PostgreSQL: a database with submissions gains `batches` and
each submission's `batch_id` and `batch_key` (null: sent alone); a downgrade takes them
away and leaves the submissions."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from tests.server.competitions.conftest import url as url
from tests.server.migrating import add_ada_and_vectoradd, at_revision, insert_passed_submission


def test_batches_come_and_go_with_their_revision(url: str) -> None:
    with at_revision(url, "0021") as (config, engine):
        add_ada_and_vectoradd(engine)
        insert_passed_submission(engine, mode="test", gpu="cpu", score=None)
        command.upgrade(config, "0022")
        with engine.begin() as connection:  # as the batches table was at 0022
            connection.execute(
                text(
                    "INSERT INTO batches (user_id, tier, request_sha256, created_at) "
                    "VALUES (1, 'quick', :sha, CURRENT_TIMESTAMP)"
                ),
                {"sha": "0" * 64},
            )
        # As the submissions table was at 0022: the model has moved on since.
        with engine.begin() as connection:
            kept = connection.execute(text("SELECT batch_id, batch_key FROM submissions")).one()
            assert tuple(kept) == (None, None)
            connection.execute(text("UPDATE submissions SET batch_id = 1, batch_key = 'a.py'"))
        # A key names one item of its batch.
        twin = text(
            "INSERT INTO submissions (user_id, problem_id, problem_version, code, code_sha256, "
            "mode, gpu_type, status, message, flags, is_hidden, is_hacked, short_calls, "
            "created_at, batch_id, batch_key) VALUES (1, 1, 1, 'x', :sha, 'test', 'cpu', "
            "'queued', '', '[]', :no, :no, :no, CURRENT_TIMESTAMP, 1, :key)"
        )
        with pytest.raises(IntegrityError), engine.begin() as connection:
            connection.execute(twin, {"sha": "0" * 64, "no": False, "key": "a.py"})
        with engine.begin() as connection:  # another key is another item
            connection.execute(twin, {"sha": "0" * 64, "no": False, "key": "b.py"})
        command.downgrade(config, "0021")
        with engine.connect() as connection:
            assert "batches" not in inspect(connection).get_table_names()
            columns = {c["name"] for c in inspect(connection).get_columns("submissions")}
            assert "batch_id" not in columns
            assert connection.execute(text("SELECT count(*) FROM submissions")).scalar() == 2
        command.upgrade(config, "0022")
