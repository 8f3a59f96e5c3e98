"""Revision 0022 on SQLite and PostgreSQL: a database with submissions gains `batches` and
each submission's `batch_id` and `batch_key` (null: sent alone); a downgrade takes them
away and leaves the submissions."""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, text
from sqlalchemy.orm import Session

from server.models import Submission
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
        with Session(engine) as db:
            kept = db.get(Submission, 1)
            assert kept is not None and (kept.batch_id, kept.batch_key) == (None, None)
            kept.batch_id, kept.batch_key = 1, "a.py"
            db.commit()
            # A key names one item of its batch.
            twin = Submission(
                user_id=1, problem_id=1, problem_version=1, code="x", code_sha256="0" * 64,
                mode="test", gpu_type="cpu", batch_id=1, batch_key="a.py",
            )  # fmt: skip
            db.add(twin)
            try:
                db.commit()
            except Exception:
                db.rollback()
            else:
                raise AssertionError("a second item with the same key was accepted")
        command.downgrade(config, "0021")
        with engine.connect() as connection:
            assert "batches" not in inspect(connection).get_table_names()
            columns = {c["name"] for c in inspect(connection).get_columns("submissions")}
            assert "batch_id" not in columns
            assert connection.execute(text("SELECT count(*) FROM submissions")).scalar() == 1
        command.upgrade(config, "0022")
