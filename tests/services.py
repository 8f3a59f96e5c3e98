"""Reaching the machine's real PostgreSQL and Redis from tests: each test gets a database
of its own; without CI a missing service skips the test, with CI=true it fails it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from server.db import make_engine, migrate

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
POSTGRES_URL = os.environ.get(
    "KJ_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("KJ_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def service_missing(what: str, exc: Exception) -> None:
    message = f"{what} is not reachable: {exc}"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


@contextmanager
def fresh_postgres_database() -> Iterator[str]:
    """A new, empty PostgreSQL database; dropped afterwards. Yields its URL."""
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    name = f"kj_test_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:
        admin.dispose()
        service_missing("PostgreSQL", exc)
    try:
        yield make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def migrated_database(kind: str, folder: Path) -> Iterator[Session]:
    """A session on a new database of `kind` ("sqlite", in `folder`, or "postgresql")
    brought to the latest migration; the database goes afterwards."""
    with ExitStack() as stack:
        if kind == "sqlite":
            url = f"sqlite:///{folder / 'migrated.sqlite3'}"
        else:
            url = stack.enter_context(fresh_postgres_database())
        migrate(url)
        engine = make_engine(url)
        stack.callback(engine.dispose)
        with Session(engine) as db:
            yield db


def fresh_redis_url() -> str:
    """Redis at the test URL, emptied first."""
    import redis

    try:
        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3)
        client.flushdb()
        client.close()
    except Exception as exc:
        service_missing("Redis", exc)
    return REDIS_URL
