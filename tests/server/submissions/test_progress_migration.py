"""Revision 0026 on SQLite and PostgreSQL: a database with a running submission gains its
`progress` (null: nothing said yet), which a worker's progress then fills; a downgrade takes
the column away and leaves the submission."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text
from sqlalchemy.orm import Session, defer

from server.models import Submission
from tests.server.competitions.conftest import url as url
from tests.server.migrating import (
    add_ada_and_vectoradd,
    at_revision,
    column_names,
    insert_passed_submission,
)

# The model has columns later revisions added: left unread at this revision.
LATER = [defer(Submission.ranks_scaled)]


def test_progress_comes_and_goes_with_its_revision(url: str) -> None:
    with at_revision(url, "0025") as (config, engine):
        add_ada_and_vectoradd(engine)
        insert_passed_submission(engine, mode="benchmark", gpu="cpu", score=None)
        with engine.begin() as connection:
            connection.execute(text("UPDATE submissions SET status = 'running', score = NULL"))
        command.upgrade(config, "0026")
        with Session(engine) as db:
            kept = db.get(Submission, 1, options=LATER)
            assert kept is not None and kept.status == "running" and kept.progress is None
            kept.progress = {"phase": "benchmark", "case": 2, "cases": 4, "label": "size=512"}
            db.commit()
            db.expunge_all()  # read again from the database
            again = db.get(Submission, 1, options=LATER)
            assert again is not None and again.progress == {
                "phase": "benchmark",
                "case": 2,
                "cases": 4,
                "label": "size=512",
            }
        command.downgrade(config, "0025")
        with engine.connect() as connection:
            assert "progress" not in column_names(connection, "submissions")
            assert connection.execute(text("SELECT status FROM submissions")).scalar() == "running"
        command.upgrade(config, "0026")
