"""The Alembic migrations build exactly the schema the models describe, on SQLite and
PostgreSQL, so `serve` on a fresh database gets the tables the code expects."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from server.db import migrate
from server.models import Base
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
    assert {"users", "api_tokens", "problems", "submissions", "runs"} <= tables
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
