"""The Alembic migrations build exactly the schema the models describe, on SQLite and
PostgreSQL, so `serve` on a fresh database gets the tables the code expects; a database
made before a migration keeps every report it holds, and a downgrade gives back the schema
that was."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, MetaData, Table, create_engine, inspect
from sqlalchemy.orm import Session

from server.db import alembic_config, migrate
from server.models import Base, Submission, utcnow
from server.submissions import disclosure, reports
from tests.server.conftest import PASSED_REPORT as REPORT
from tests.server.migrating import add_ada_and_vectoradd
from tests.server.rows import submission_row
from tests.services import fresh_postgres_database


def schema_drift(url: str) -> list[object]:
    migrate(url)
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection)
            diffs = compare_metadata(context, Base.metadata)
            tables = set(inspect(connection).get_table_names())
    finally:
        engine.dispose()
    assert {"users", "api_tokens", "problems", "submissions"} <= tables
    assert "runs" not in tables
    return list(diffs)


# SQLite's reflection cannot read back the index on lower(name); PostgreSQL's compares it.
@pytest.mark.filterwarnings("ignore:Skipped unsupported reflection of expression-based index")
@pytest.mark.filterwarnings("ignore:autogenerate skipping metadata-specified expression-based")
def test_sqlite_schema_matches_models(tmp_path: Path) -> None:
    assert schema_drift(f"sqlite:///{tmp_path / 'm.sqlite3'}") == []


@pytest.mark.integration
def test_postgres_schema_matches_models() -> None:
    with fresh_postgres_database() as url:
        assert schema_drift(url) == []
        migrate(url)  # a second start finds nothing to do


@contextmanager
def database(kind: str, folder: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{folder / 'm.sqlite3'}"
    else:
        with fresh_postgres_database() as url:
            yield url


def runs_table(connection: Connection) -> dict[str, Any]:
    found = inspect(connection)
    return {
        "columns": [(c["name"], str(c["type"]), c["nullable"]) for c in found.get_columns("runs")],
        "primary_key": found.get_pk_constraint("runs"),
        "foreign_keys": found.get_foreign_keys("runs"),
        "unique": found.get_unique_constraints("runs"),
        "indexes": found.get_indexes("runs"),
    }


def graded_before_runs_went(url: str) -> int:
    """A submission recorded as the code before revision 0015 recorded it: its report on
    the submission, each case again as a `runs` row. Its id."""
    engine = create_engine(url)
    try:
        add_ada_and_vectoradd(engine)
        user_id, problem_id = 1, 1
        with engine.begin() as connection:
            # Through the table as it stands at that revision: today's model has columns more.
            submissions = Table(
                "submissions", MetaData(), autoload_with=connection, resolve_fks=False
            )
            row = submission_row(
                user_id,
                problem_id,
                mode="benchmark",
                status="passed",
                score=0.002,
                message="all cases passed",
                report=REPORT,
                is_hidden=False,
                is_hacked=False,
                created_at=utcnow(),
            )
            values = {
                column.name: getattr(row, column.name)
                for column in submissions.columns
                if getattr(row, column.name, None) is not None
            }
            inserted = connection.execute(submissions.insert().values(values))
            sid = inserted.inserted_primary_key[0]
        with engine.begin() as connection:
            runs = Table("runs", MetaData(), autoload_with=connection, resolve_fks=False)
            connection.execute(
                runs.insert().values(
                    submission_id=sid,
                    index=0,
                    kind="benchmark",
                    params={"size": 1024, "seed": 1},
                    status="passed",
                    message="",
                    median_s=0.002,
                    mean_s=0.0021,
                    min_s=0.0019,
                    cv=0.01,
                    samples=12,
                )
            )
    finally:
        engine.dispose()
    return sid


@pytest.mark.parametrize(
    "kind", ["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)]
)
def test_dropping_runs_keeps_every_report_and_a_downgrade_gives_the_table_back(
    kind: str, tmp_path: Path
) -> None:
    with database(kind, tmp_path) as url:
        config = alembic_config(url)
        command.upgrade(config, "0014")
        sid = graded_before_runs_went(url)
        engine = create_engine(url)
        try:
            with engine.connect() as connection:
                before = runs_table(connection)

            command.upgrade(config, "head")
            with Session(engine) as db:
                stored = db.get(Submission, sid)
                assert stored is not None
                shown = disclosure.disclose(stored.user, stored, reports.stored(stored))
                assert (stored.status, stored.score, shown.message) == (
                    "passed",
                    0.002,
                    "all cases passed",
                )
                assert shown.cases == reports.parse(REPORT).cases
            with engine.connect() as connection:
                assert "runs" not in inspect(connection).get_table_names()

            command.downgrade(config, "0014")
            with engine.connect() as connection:
                assert runs_table(connection) == before
                runs = Table("runs", MetaData(), autoload_with=connection, resolve_fks=False)
                assert connection.execute(runs.select()).all() == []
            command.upgrade(config, "head")
        finally:
            engine.dispose()
