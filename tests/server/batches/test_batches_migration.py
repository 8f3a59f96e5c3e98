"""Revision 0022 on SQLite and PostgreSQL: a database with submissions gains `batches` and
each submission's `batch_id` and `batch_key` (null: sent alone); a downgrade takes them
away and leaves the submissions."""

from __future__ import annotations

from alembic import command
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.orm import Session

from server.db import alembic_config
from server.models import Batch, Problem, Submission, User
from tests.server.competitions.conftest import url as url


def test_batches_come_and_go_with_their_revision(url: str) -> None:
    config = alembic_config(url)
    command.upgrade(config, "0021")
    engine = create_engine(url)
    try:
        with Session(engine) as db:
            problem = Problem(name="vectoradd", files={}, files_sha256="0" * 64, secret_seed=1)
            db.add_all([User(name="ada"), problem])
            db.commit()
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO submissions (user_id, problem_id, problem_version, code, "
                    "code_sha256, mode, gpu_type, status, score, message, flags, is_hidden, "
                    "is_hacked, short_calls, created_at) VALUES (1, 1, 1, 'x', :sha, "
                    "'test', 'cpu', 'passed', NULL, '', '[]', :no, :no, :no, "
                    "CURRENT_TIMESTAMP)"
                ),
                {"sha": "0" * 64, "no": False},
            )
        command.upgrade(config, "0022")
        with Session(engine) as db:
            kept = db.get(Submission, 1)
            assert kept is not None and (kept.batch_id, kept.batch_key) == (None, None)
            batch = Batch(user_id=1, tier="quick", request_sha256="0" * 64)
            db.add(batch)
            db.flush()
            kept.batch_id, kept.batch_key = batch.id, "a.py"
            db.commit()
            # A key names one item of its batch.
            twin = Submission(
                user_id=1, problem_id=1, problem_version=1, code="x", code_sha256="0" * 64,
                mode="test", gpu_type="cpu", batch_id=batch.id, batch_key="a.py",
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
    finally:
        engine.dispose()
