"""Revision 0029 on SQLite and PostgreSQL: a passed submission recorded before it whose
flags say it was graded on fewer ranks than its problem asks for is marked ``ranks_scaled``,
and so is its leaderboard entry; the rest read false; a downgrade takes the columns away and
keeps the rows."""

from __future__ import annotations

import json

from alembic import command
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from server.models import LeaderboardEntry, Submission
from tests.server.competitions.conftest import url as url
from tests.server.migrating import (
    add_ada_and_vectoradd,
    at_revision,
    column_names,
    insert_passed_submission,
)

SCALED = "ranks: graded at 2 where a case asks for 4 (this worker offers world sizes 1, 2)"


def flag_and_rank(engine: Engine, submission_id: int, flags: list[str], *, status: str) -> None:
    """The submission's flags and status as stored, and its leaderboard entry where it passed."""
    with engine.begin() as connection:
        connection.execute(
            text("UPDATE submissions SET flags = :flags, status = :status WHERE id = :id"),
            {"flags": json.dumps(flags), "status": status, "id": submission_id},
        )
        if status == "passed":
            connection.execute(
                text(
                    "INSERT INTO leaderboard_entries (problem_id, gpu_type, problem_version, "
                    "user_id, submission_id, score, short_calls, submitted_at) VALUES "
                    "(1, :gpu, 1, 1, :id, 0.002, :no, CURRENT_TIMESTAMP)"
                ),
                {"gpu": f"h100-{submission_id}", "id": submission_id, "no": False},
            )


def test_ranks_scaled_comes_from_stored_flags_and_goes_with_its_revision(url: str) -> None:
    with at_revision(url, "0028") as (config, engine):
        add_ada_and_vectoradd(engine)
        for submission_id in (1, 2, 3):  # each on a board of its own
            gpu = f"h100-{submission_id}"
            insert_passed_submission(engine, mode="leaderboard", gpu=gpu, score=0.002)
        flag_and_rank(engine, 1, ["screening: other", SCALED], status="passed")
        flag_and_rank(engine, 2, [], status="passed")
        flag_and_rank(engine, 3, [SCALED], status="failed")
        command.upgrade(config, "0029")
        with Session(engine) as db:
            marked = {s.id: s.ranks_scaled for s in db.query(Submission)}
            assert marked == {1: True, 2: False, 3: False}
            entries = {e.submission_id: e.ranks_scaled for e in db.query(LeaderboardEntry)}
            assert entries == {1: True, 2: False}
        command.downgrade(config, "0028")
        with engine.connect() as connection:
            for table in ("submissions", "leaderboard_entries"):
                assert "ranks_scaled" not in column_names(connection, table)
            assert connection.execute(text("SELECT count(*) FROM submissions")).scalar() == 3
        command.upgrade(config, "0029")
