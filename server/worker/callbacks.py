"""The callbacks step: a task on the ``callbacks`` queue, served next to the API, that makes
one try at a batch item's callback and records how it went, outside any transaction while
it waits for the receiver; a try that may do better later is sent again after its pause
(server/batches/callbacks.py says how long, and how many tries in all)."""

from __future__ import annotations

from typing import Any

from celery import Task

from server.batches import callbacks, delivery
from server.db import session_scope
from server.outbox import task_names
from server.outbox.app import celery_app
from server.settings import get_settings
from server.worker.recorders import RETRY


@celery_app.task(name=task_names.DELIVER_CALLBACK, bind=True, **RETRY)
def deliver_callback(self: Task[Any, Any], delivery_id: int) -> None:
    settings = get_settings()
    with session_scope() as session:
        attempt = callbacks.next_attempt(session, delivery_id)
    if attempt is None:
        return
    outcome = delivery.post(attempt.url, attempt.secret, attempt.body, settings)
    with session_scope() as session:
        pause_s = callbacks.record_attempt(session, delivery_id, outcome, settings)
    if pause_s is not None:
        raise self.retry(countdown=pause_s)
