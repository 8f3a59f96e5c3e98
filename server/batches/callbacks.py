"""A batch's callbacks: each item's verdict, as the batch's body shows it, is written with a
callback job to the outbox in the transaction that records the verdict (so a callback
exists exactly when its verdict does, and sending it never holds that transaction); the
callbacks worker tries it (`server.worker.callbacks`), and each try is recorded here, with
when to try again: after a failure that may pass (no connection, no answer, a 5xx or 429),
`KJ_CALLBACK_BACKOFF_S` doubling after each try, up to `KJ_CALLBACK_ATTEMPTS` tries in all.
A receiver may see an item twice (a try whose answer was lost); its submission id tells."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass

from sqlalchemy.orm import Session

from server.batches import items, repository
from server.batches.delivery import Outcome
from server.batches.schemas import CallbackCounts
from server.models import Batch, CallbackDelivery, Submission, utcnow
from server.outbox import jobs
from server.outbox.app import CALLBACKS_QUEUE
from server.settings import Settings

# The longest pause between two tries, however many came before.
BACKOFF_MAX_S = 600.0


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def verdict_recorded(session: Session, submission: Submission) -> None:
    """A submission's verdict was recorded (in the caller's transaction): if it is an item of
    a batch with a callback URL, its callback goes once that commits."""
    if submission.batch_id is None:
        return
    batch = session.get(Batch, submission.batch_id)
    if batch is None or batch.callback_url is None:
        return
    item = items.item_out(session, submission, {})
    delivery = CallbackDelivery(
        batch_id=batch.id,
        submission_id=submission.id,
        body={"batch_id": batch.id, **item.model_dump(mode="json")},
    )
    session.add(delivery)
    session.flush()
    jobs.enqueue(session, jobs.Job.CALLBACK, delivery.id, queue=CALLBACKS_QUEUE)


def settled(delivery: CallbackDelivery) -> bool:
    return delivery.delivered_at is not None or delivery.failed_at is not None


def backoff_s(attempts: int, settings: Settings) -> float:
    """The pause after the `attempts`-th try."""
    return float(min(BACKOFF_MAX_S, settings.callback_backoff_s * 2 ** (attempts - 1)))


def schedule_s(settings: Settings) -> float:
    """The longest a callback takes from its first try to its last."""
    pauses = sum(backoff_s(n, settings) for n in range(1, settings.callback_attempts))
    return pauses + settings.callback_attempts * settings.callback_timeout_s


def _args(session: Session, delivery_id: int, settings: Settings) -> list[int] | None:
    delivery = session.get(CallbackDelivery, delivery_id)
    return None if delivery is None or settled(delivery) else [delivery_id]


jobs.register(
    jobs.Job.CALLBACK,
    jobs.Messages(args=_args, time_limit_s=lambda session, _, settings: schedule_s(settings)),
)


@dataclass(frozen=True)
class Attempt:
    url: str
    secret: str
    body: bytes


def next_attempt(session: Session, delivery_id: int) -> Attempt | None:
    """What the next try sends, or None when the callback is delivered or given up."""
    delivery = session.get(CallbackDelivery, delivery_id)
    if delivery is None or settled(delivery):
        return None
    batch = session.get(Batch, delivery.batch_id)
    if batch is None or not batch.callback_url or not batch.callback_secret:
        return None
    body = json.dumps(delivery.body, separators=(",", ":"), sort_keys=True).encode()
    return Attempt(batch.callback_url, batch.callback_secret, body)


def record_attempt(
    session: Session, delivery_id: int, outcome: Outcome, settings: Settings
) -> float | None:
    """Record a try; the seconds until the next one, or None when there is none (delivered,
    or given up: a failure no later try can mend, or the last try failed)."""
    # Locked: a callback sent again by the sweeper may have two tries at once.
    delivery = session.get(CallbackDelivery, delivery_id, with_for_update=True)
    if delivery is None or settled(delivery):
        return None
    delivery.attempts += 1
    if outcome.delivered:
        delivery.delivered_at = utcnow()
        delivery.last_error = None
    else:
        delivery.last_error = outcome.reason
        if outcome.transient and delivery.attempts < settings.callback_attempts:
            return backoff_s(delivery.attempts, settings)
        delivery.failed_at = utcnow()
    jobs.done(session, jobs.Job.CALLBACK, delivery_id)
    return None


def counts(session: Session, batch: Batch) -> CallbackCounts | None:
    if batch.callback_url is None:
        return None
    delivered, failed, every = repository.callback_counts(session, batch.id)
    return CallbackCounts(delivered=delivered, failed=failed, pending=every - delivered - failed)
