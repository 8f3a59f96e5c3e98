"""What the broker holds: the ids of the jobs waiting in its queues and, on Redis, of those a
worker has taken and not yet acknowledged, and the subjects whose report is on its way to
be recorded. The outbox's sweeper sends a job again only when the broker holds neither
(Redis restarted without its data, say)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import redis
from sqlalchemy import create_engine, text

from server.outbox import embedded, task_names
from server.outbox.app import RESULTS_QUEUE
from server.settings import Settings

# kombu's Redis transport: a queue's messages are lists named after it (one per priority
# step but the first, with this separator), and taken but unacknowledged ones a hash.
PRIORITY_SEPARATOR = "\x06\x16"
PRIORITY_STEPS = (3, 6, 9)
UNACKED_KEY = "unacked"


@dataclass(frozen=True)
class Held:
    task_ids: frozenset[str]
    # (job, subject id) of the reports waiting to be recorded or being recorded: a job
    # whose report is here is finished, not lost, though the broker holds no copy of it.
    reports: frozenset[tuple[str, int]]
    # Whether jobs a worker has taken are among them. Where not (the embedded broker), a
    # job that is not waiting may still be running, and only its time limit says it is lost.
    includes_taken: bool


def held(settings: Settings, queues: Iterable[str]) -> Held:
    """Raises the client's error when the broker cannot be reached."""
    if settings.broker_is_embedded:
        messages = _embedded_waiting(settings)
        includes_taken = False
    else:
        messages = _redis_messages(settings.broker_url, {*queues, RESULTS_QUEUE})
        includes_taken = True
    task_ids = frozenset(task_id for m in messages if (task_id := _task_id(m)))
    reports = frozenset(subject for m in messages if (subject := _report_subject(m)))
    return Held(task_ids, reports, includes_taken)


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


def _message(raw: str | bytes) -> dict[str, Any] | None:
    try:
        decoded = json.loads(raw)
    except (TypeError, ValueError):
        return None
    if isinstance(decoded, list) and decoded:  # the unacked hash: [message, exchange, key]
        decoded = decoded[0]
    return decoded if isinstance(decoded, dict) else None


def _task_id(raw: str | bytes) -> str | None:
    message = _message(raw)
    headers = message.get("headers") if message else None
    task_id = headers.get("id") if isinstance(headers, dict) else None
    return str(task_id) if task_id else None


def _report_subject(raw: str | bytes) -> tuple[str, int] | None:
    """(job, subject id) when the message is a report for the results step."""
    message = _message(raw)
    headers = message.get("headers") if message else None
    if (
        not message
        or not isinstance(headers, dict)
        or headers.get("task") not in task_names.REPORTS
    ):
        return None
    job, key = task_names.REPORTS[headers["task"]]
    try:
        body = message.get("body", "")
        if message.get("properties", {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
        return job, int(args[0][key])
    except (TypeError, ValueError, KeyError, IndexError):
        return None


def _redis_messages(url: str, queues: set[str]) -> list[bytes | str]:
    """Every message in the queues' lists and in the unacked hash, read in one transaction:
    a message moving from one to the other (taken, or acknowledged after its report went
    out) is seen in exactly one place."""
    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5)
    try:
        keys = [*queues] + [
            f"{q}{PRIORITY_SEPARATOR}{step}" for q in queues for step in PRIORITY_STEPS
        ]
        pipe = client.pipeline(transaction=True)
        for key in keys:
            pipe.lrange(key, 0, -1)
        pipe.hvals(UNACKED_KEY)
        found: list[list[bytes | str]] = pipe.execute()
    finally:
        client.close()
    return [message for messages in found for message in messages]


def _embedded_waiting(settings: Settings) -> list[bytes | str]:
    """kombu's SQLAlchemy transport keeps each message as a row, visible until taken."""
    url = embedded.database_url(settings.resolved_broker_url)
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            tables = connection.execute(
                text("SELECT name FROM sqlite_master WHERE type = 'table' AND name = :name"),
                {"name": "kombu_message"},
            ).all()
            if not tables:
                return []
            rows = connection.execute(
                text("SELECT payload FROM kombu_message WHERE visible = 1")
            ).scalars()
            return [str(payload) for payload in rows]
    finally:
        engine.dispose()
