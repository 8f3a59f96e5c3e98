"""What the broker holds: the ids of the jobs waiting in its queues and, on Redis, of those a
worker has taken and not yet acknowledged. The outbox's sweeper sends a job again when the
broker holds no copy of it (Redis restarted without its data, say)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

import redis
from sqlalchemy import create_engine, text

from server.settings import Settings

# kombu's Redis transport: a queue's messages are lists named after it (one per priority
# step but the first, with this separator), and taken but unacknowledged ones a hash.
PRIORITY_SEPARATOR = "\x06\x16"
PRIORITY_STEPS = (3, 6, 9)
UNACKED_KEY = "unacked"


@dataclass(frozen=True)
class Held:
    task_ids: frozenset[str]
    # Whether jobs a worker has taken are among them. Where not (the embedded broker), a
    # job that is not waiting may still be running, and only its time limit says it is lost.
    includes_taken: bool


def held(settings: Settings, queues: Iterable[str]) -> Held:
    """Raises the client's error when the broker cannot be reached."""
    if settings.broker_is_embedded:
        return Held(_embedded_waiting(settings), includes_taken=False)
    return Held(_redis_held(settings.broker_url, set(queues)), includes_taken=True)


def unreachable(settings: Settings) -> str:
    """'' when the broker answers, else why not (in a few seconds at most)."""
    try:
        if settings.broker_is_embedded:
            _embedded_waiting(settings)
        else:
            client = redis.Redis.from_url(
                settings.broker_url, socket_connect_timeout=2, socket_timeout=2
            )
            try:
                client.ping()
            finally:
                client.close()
    except Exception as exc:
        return type(exc).__name__
    return ""


def _task_id(message: str | bytes) -> str | None:
    try:
        decoded = json.loads(message)
    except (TypeError, ValueError):
        return None
    if isinstance(decoded, list) and decoded:  # the unacked hash: [message, exchange, key]
        decoded = decoded[0]
    headers = decoded.get("headers") if isinstance(decoded, dict) else None
    task_id = headers.get("id") if isinstance(headers, dict) else None
    return str(task_id) if task_id else None


def _redis_held(url: str, queues: set[str]) -> frozenset[str]:
    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5)
    try:
        keys = [q for q in queues] + [
            f"{q}{PRIORITY_SEPARATOR}{step}" for q in queues for step in PRIORITY_STEPS
        ]
        messages: list[bytes | str] = []
        for key in keys:
            messages += client.lrange(key, 0, -1)
        messages += list(client.hvals(UNACKED_KEY))
    finally:
        client.close()
    return frozenset(task_id for m in messages if (task_id := _task_id(m)))


def _embedded_waiting(settings: Settings) -> frozenset[str]:
    """kombu's SQLAlchemy transport keeps each message as a row, visible until taken."""
    url = settings.resolved_broker_url.removeprefix("sqla+")
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            tables = connection.execute(
                text("SELECT name FROM sqlite_master WHERE type = 'table' AND name = :name"),
                {"name": "kombu_message"},
            ).all()
            if not tables:
                return frozenset()
            rows = connection.execute(
                text("SELECT payload FROM kombu_message WHERE visible = 1")
            ).scalars()
            return frozenset(task_id for payload in rows if (task_id := _task_id(payload)))
    finally:
        engine.dispose()
