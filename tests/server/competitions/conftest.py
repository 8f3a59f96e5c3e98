"""The competitions' migration tests run on both databases."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services import fresh_postgres_database


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database, SQLite or PostgreSQL, to migrate."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'm.sqlite3'}"
    else:
        with fresh_postgres_database() as found:
            yield found
