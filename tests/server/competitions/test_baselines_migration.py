"""Revision 0019 on SQLite and PostgreSQL: a database with problems and ranked submissions
gains the ``baselines`` table (no problem has one yet: leaderboards show none and every
speedup is null); a downgrade takes it away and leaves the rest."""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, text
from sqlalchemy.orm import Session

from server.models import Baseline, Submission
from tests.server.migrating import add_ada_and_vectoradd, at_revision, insert_passed_submission


def test_the_baselines_table_comes_and_goes_with_its_revision(url: str) -> None:
    with at_revision(url, "0018") as (config, engine):
        add_ada_and_vectoradd(engine)
        insert_passed_submission(engine, mode="leaderboard", gpu="h200", score=0.001)
        command.upgrade(config, "head")
        with Session(engine) as db:
            assert db.query(Baseline).count() == 0
            db.add(
                Baseline(
                    problem_id=1, problem_version=1, gpu_type="h200", status="timed",
                    machine="m" * 32, eager_s=2e-3, compile_error="no C++ compiler",
                )
            )  # fmt: skip
            db.commit()
            # One machine's baselines of a version on a device type are one row.
            db.add(Baseline(problem_id=1, problem_version=1, gpu_type="h200", machine="m" * 32))
            try:
                db.commit()
            except Exception:
                db.rollback()
            else:
                raise AssertionError("a second row for the same machine was accepted")
            assert db.get(Submission, 1) is not None
        command.downgrade(config, "0018")
        with engine.connect() as connection:
            assert "baselines" not in inspect(connection).get_table_names()
            assert connection.execute(text("SELECT count(*) FROM submissions")).scalar() == 1
        command.upgrade(config, "head")
