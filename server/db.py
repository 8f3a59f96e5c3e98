"""Database engine, sessions and migrations (Alembic, applied on start)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from server.settings import get_settings

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
            # WAL lets the API read while the results step writes; foreign keys are off by default.
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

        return engine
    # A database that is down or restarting answers quickly with an error (a 503 for the
    # client) instead of holding requests; a connection it dropped is noticed before use.
    timeout = get_settings().database_connect_timeout_s
    return create_engine(
        url,
        pool_pre_ping=True,
        # As many connections as the API's thread pool runs requests (40 by default), so a
        # burst waits for the database, not for a connection.
        pool_size=10,
        max_overflow=30,
        pool_timeout=timeout,
        connect_args={"connect_timeout": timeout},
    )


@lru_cache
def get_engine() -> Engine:
    return make_engine(get_settings().resolved_database_url)


@lru_cache
def get_sessionmaker() -> sessionmaker[Session]:
    return sessionmaker(bind=get_engine(), expire_on_commit=False)


@contextmanager
def session_scope() -> Iterator[Session]:
    """A unit of work: commits on success, rolls back on error."""
    session = get_sessionmaker()()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def migrate(url: str | None = None) -> None:
    """Bring the database to the newest schema."""
    command.upgrade(alembic_config(url or get_settings().resolved_database_url), "head")
