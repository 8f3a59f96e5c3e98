"""Revision 0018 on SQLite and PostgreSQL: a database with a competition and submissions
gains the judging tables and ``submissions.judging_id`` (none for the submissions already
there); a downgrade takes them away and leaves the rest."""

from __future__ import annotations

from alembic import command
from sqlalchemy import MetaData, Table, inspect, text
from sqlalchemy.orm import Session

from server.models import (
    Judging,
    JudgingRun,
    Submission,
    utcnow,
)
from tests.server.migrating import add_sprint, at_revision

TABLES = {"judgings", "judging_runs"}


def test_the_judging_tables_come_and_go_with_their_revision(url: str) -> None:
    now = utcnow()
    with at_revision(url, "0017") as (config, engine):
        add_sprint(engine, now, teams=["ada"])
        # A submission made before the revision, written as that revision's table holds it.
        submissions = Table("submissions", MetaData(), autoload_with=engine, resolve_fks=False)
        with engine.begin() as connection:
            connection.execute(
                submissions.insert().values(
                    user_id=1, problem_id=1, problem_version=1, code="x",
                    code_sha256="0" * 64, mode="leaderboard", gpu_type="cpu", status="passed",
                    score=1e-3, message="", flags=[], is_hidden=False, is_hacked=False,
                    created_at=now,
                )
            )  # fmt: skip
        command.upgrade(config, "head")
        with engine.connect() as connection:
            assert set(inspect(connection).get_table_names()) >= TABLES
        with Session(engine) as db:
            entry = db.get(Submission, 1)
            assert entry is not None and entry.judging_id is None
            judging = Judging(competition_id=1, runs=1, status="running")
            db.add(judging)
            db.flush()
            run = Submission(
                user_id=1,
                problem_id=1,
                problem_version=1,
                code="x",
                code_sha256="0" * 64,
                mode="leaderboard",
                gpu_type="cpu",
                judging_id=judging.id,
            )
            db.add(run)
            db.flush()
            db.add(
                JudgingRun(
                    submission_id=run.id, judging_id=judging.id, team_id=1, entry_id=entry.id
                )
            )
            db.commit()
        command.downgrade(config, "0017")
        with engine.connect() as connection:
            found = inspect(connection)
            assert not TABLES & set(found.get_table_names())
            columns = {column["name"] for column in found.get_columns("submissions")}
            assert "judging_id" not in columns
            assert connection.execute(text("SELECT count(*) FROM submissions")).scalar() == 2
        command.upgrade(config, "head")
