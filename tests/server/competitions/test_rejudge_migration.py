"""Revision 0021 on SQLite and PostgreSQL: a final judging already there becomes a review
set of kind ``final`` with its competition and teams kept; a rejudge (no competition, runs
without a team) can be stored; a downgrade takes the rejudges away and keeps the judging."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text
from sqlalchemy.orm import Session

from server.models import (
    Judging,
    JudgingRun,
    Submission,
    utcnow,
)
from tests.server.migrating import add_sprint, at_revision, column_names


def test_judgings_become_review_sets_of_either_kind(url: str) -> None:
    now = utcnow()
    with at_revision(url, "0020") as (config, engine):
        add_sprint(engine, now)
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO judgings (competition_id, runs, status, created_at) "
                    "VALUES (1, 5, 'running', :now)"
                ),
                {"now": now},
            )
        command.upgrade(config, "head")
        with Session(engine) as db:
            final = db.get(Judging, 1)
            assert final is not None
            assert (final.kind, final.competition_id, final.selection) == ("final", 1, None)
            rejudge = Judging(kind="rejudge", runs=1, status="running", selection={"user": "ada"})
            db.add(rejudge)
            db.flush()
            original = Submission(
                user_id=1, problem_id=1, problem_version=1, code="x", code_sha256="0" * 64,
                mode="test", gpu_type="cpu", status="passed",
            )  # fmt: skip
            db.add(original)
            db.flush()
            run = Submission(
                user_id=1, problem_id=1, problem_version=1, code="x", code_sha256="0" * 64,
                mode="test", gpu_type="cpu", judging_id=rejudge.id,
            )  # fmt: skip
            db.add(run)
            db.flush()
            db.add(JudgingRun(submission_id=run.id, judging_id=rejudge.id, entry_id=original.id))
            db.commit()
        command.downgrade(config, "0020")
        with engine.connect() as connection:
            columns = column_names(connection, "judgings")
            assert not {"kind", "selection"} & columns
            kept = connection.execute(text("SELECT id FROM judgings")).scalars().all()
            assert kept == [1]
            assert connection.execute(text("SELECT count(*) FROM judging_runs")).scalar() == 0
        command.upgrade(config, "head")
