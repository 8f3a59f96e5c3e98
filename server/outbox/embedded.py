"""The embedded broker: kombu's SQLAlchemy transport on a SQLite file in the data folder, a
real Celery broker that needs no server. Its consumers look for messages ten times a second
rather than once: on one machine each hop of a submission (to the worker, and its report
back) otherwise waited up to a second."""

from __future__ import annotations

from pathlib import Path

from kombu.transport import TRANSPORT_ALIASES
from kombu.transport.sqlalchemy import Transport as SQLAlchemyTransport

SCHEME = "kjsqla"
POLLING_INTERVAL_S = 0.1


class Transport(SQLAlchemyTransport):
    polling_interval = POLLING_INTERVAL_S


TRANSPORT_ALIASES[SCHEME] = f"{__name__}:Transport"


def broker_url(database: Path) -> str:
    return f"{SCHEME}+sqlite:///{database.resolve()}"


def database_url(url: str) -> str:
    """The SQLAlchemy URL of the broker's own database."""
    return url.removeprefix(f"{SCHEME}+")
