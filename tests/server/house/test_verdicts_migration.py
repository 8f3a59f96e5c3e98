"""Revision 0020 on SQLite and PostgreSQL: a database with a graded submission gains
`submission_verdicts` (an empty history for it), and a downgrade takes the table away and
keeps the submission."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import MetaData, Table, create_engine, inspect, text
from sqlalchemy.orm import Session

from server.db import alembic_config
from server.models import Submission, SubmissionVerdict, utcnow
from server.submissions import repository
from tests.server.house.test_migrations import database


# SQLite's reflection of `users` cannot read back its index on lower(name).
@pytest.mark.filterwarnings("ignore:Skipped unsupported reflection of expression-based index")
@pytest.mark.parametrize(
    "kind", ["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)]
)
def test_the_verdict_history_comes_and_goes_with_its_revision(kind: str, tmp_path: Path) -> None:
    with database(kind, tmp_path) as url:
        config = alembic_config(url)
        command.upgrade(config, "0019")
        engine = create_engine(url)
        try:
            # Rows as revision 0019's tables hold them.
            metadata = MetaData()
            tables = {
                name: Table(name, metadata, autoload_with=engine, resolve_fks=False)
                for name in ("users", "problems", "submissions")
            }
            now = utcnow()
            with engine.begin() as connection:
                connection.execute(
                    tables["users"]
                    .insert()
                    .values(name="ada", is_admin=False, is_banned=False, created_at=now)
                )
                connection.execute(
                    tables["problems"].insert().values(
                        name="p", description="", files={}, files_sha256="0" * 64, version=1,
                        gpu_types=[], secret_seed=1, is_public=True,
                        code_public_after_deadline=False, status="live", validation_attempt=0,
                        leaderboard_from_version=1, solutions={}, leaderboard_revision=0,
                        created_at=now, updated_at=now,
                    )
                )  # fmt: skip
                connection.execute(
                    tables["submissions"].insert().values(
                        user_id=1, problem_id=1, problem_version=1, code="x",
                        code_sha256="0" * 64, mode="test", gpu_type="cpu", status="passed",
                        message="", flags=[], is_hidden=False, is_hacked=False, created_at=now,
                    )
                )  # fmt: skip
            command.upgrade(config, "head")
            with Session(engine) as db:
                assert repository.earlier_verdicts(db, 1) == []
                db.add(
                    SubmissionVerdict(
                        submission_id=1, problem_version=1, status="passed", message="",
                        flags=[], finished_at=now, replaced_at=now,
                    )
                )  # fmt: skip
                db.commit()
                assert [v.status for v in repository.earlier_verdicts(db, 1)] == ["passed"]
            command.downgrade(config, "0019")
            with engine.connect() as connection:
                assert "submission_verdicts" not in inspect(connection).get_table_names()
                assert connection.execute(text("SELECT count(*) FROM submissions")).scalar() == 1
            command.upgrade(config, "head")
            with Session(engine) as db:
                assert db.get(Submission, 1) is not None
        finally:
            engine.dispose()
