"""Accepting a batch (its items are ordinary submissions, in the same fair dispatch as
everyone's: server/outbox/dispatch.py takes turns between users, a batch's items counting
as its owner's), its cap on items in flight per token, its callback URL (checked here, sent
by `callbacks`), and reading it back."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from sqlalchemy.orm import Session

from grader.report import Mode, Status
from server.batches import callbacks, items, repository, targets
from server.batches.schemas import (
    BatchAccepted,
    BatchCreate,
    BatchItemAccepted,
    BatchOut,
    BatchStatus,
    Tier,
)
from server.errors import BadRequest, KernelJudgeError, NotFound, TooManyRequests
from server.models import Batch, User
from server.settings import Settings
from server.submissions import repository as submissions
from server.submissions import service as submission_service
from server.users import repository as users
from server.users.service import hash_token

# What a client over its cap is told to wait before sending again: items finish in seconds
# to minutes, so a short wait costs little and a client never needs to poll faster.
RETRY_AFTER_S = 10
STATUSES = tuple(status.value for status in Status)


def request_digest(body: BatchCreate) -> str:
    return hashlib.sha256(
        json.dumps(body.model_dump(mode="json"), sort_keys=True).encode()
    ).hexdigest()


def check_callback(body: BatchCreate, settings: Settings, own_hosts: Iterable[str]) -> None:
    """A callback URL must point where callbacks may go (server/batches/targets.py)."""
    if body.callback_url is None:
        return
    allowed = targets.networks(settings.callback_allow_networks)
    try:
        targets.check_url(body.callback_url, allowed, own_hosts)
    except targets.Refused as exc:
        raise BadRequest(f"callback_url: {exc}") from None


def check_items(body: BatchCreate, settings: Settings) -> None:
    """What a batch's body must be beyond its schema: few enough items, each key once, and
    test mode only in the quick tier."""
    if len(body.items) > settings.max_batch_items:
        raise BadRequest(
            f"a batch holds at most {settings.max_batch_items} items; this one has "
            f"{len(body.items)}: split it"
        )
    if len(body.items) > settings.batch_max_in_flight:
        raise BadRequest(
            f"a token may have at most {settings.batch_max_in_flight} batch items in flight; "
            f"this batch has {len(body.items)}: split it"
        )
    seen: set[str] = set()
    for index, item in enumerate(body.items):
        if item.key in seen:
            raise BadRequest(f"items[{index}].key: {item.key!r} is used twice in the batch")
        seen.add(item.key)
        if body.tier == Tier.QUICK and item.mode != Mode.TEST:
            raise BadRequest(
                f"items[{index}].mode: the quick tier grades test mode only, not {item.mode}"
            )


def create_batch(
    session: Session,
    settings: Settings,
    user: User,
    token: str,
    body: BatchCreate,
    idempotency_key: str | None = None,
    own_hosts: Iterable[str] = (),
) -> tuple[BatchAccepted, bool]:
    """Accept a batch and ask for each item's grading, in the caller's transaction; returns
    it and whether it was made earlier (a retry under the same Idempotency-Key). `own_hosts`:
    the names this service is reached by, where no callback may go."""
    check_items(body, settings)
    check_callback(body, settings, own_hosts)
    digest = request_digest(body)
    # Held until the commit: a retry racing the first request, or two batches racing for
    # the last places under the cap, wait for each other.
    submissions.lock_user(session, user.id)
    if idempotency_key is not None:
        earlier = submission_service.replay_of(
            repository.get_by_idempotency_key(session, user.id, idempotency_key), digest, "batch"
        )
        if earlier is not None:
            return accepted(session, earlier), True
    record = users.get_active_token(session, hash_token(token))
    token_id = record.id if record is not None else None
    if token_id is not None:
        flying = repository.in_flight_of_token(session, token_id)
        if flying + len(body.items) > settings.batch_max_in_flight:
            raise TooManyRequests(
                f"this token has {flying} batch items queued or running, and may have "
                f"{settings.batch_max_in_flight}: send these {len(body.items)} when some "
                "have finished",
                retry_after_s=RETRY_AFTER_S,
            )
    batch = Batch(
        user_id=user.id,
        token_id=token_id,
        tier=body.tier.value,
        idempotency_key=idempotency_key,
        request_sha256=digest,
        callback_url=body.callback_url,
        callback_secret=callbacks.new_secret() if body.callback_url is not None else None,
    )
    session.add(batch)
    session.flush()
    for index, item in enumerate(body.items):
        try:
            submission_service.create_submission(
                session,
                settings,
                user,
                problem_name=item.problem,
                code=item.code,
                mode=item.mode.value,
                gpu=item.gpu,
                batch_id=batch.id,
                batch_key=item.key,
            )
        except NotFound as exc:
            raise BadRequest(f"items[{index}] ({item.key!r}): {exc.detail}") from exc
        except KernelJudgeError as exc:
            exc.detail = f"items[{index}] ({item.key!r}): {exc.detail}"
            raise
    return accepted(session, batch), False


def accepted(session: Session, batch: Batch) -> BatchAccepted:
    return BatchAccepted(
        id=batch.id,
        items=[
            BatchItemAccepted(key=item.batch_key or "", submission_id=item.id)
            for item in repository.items(session, batch.id)
        ],
        callback_secret=batch.callback_secret,
    )


def get_batch_for(session: Session, batch_id: int, user: User) -> Batch:
    """The batch, to its owner or an admin; to anyone else it does not exist."""
    batch = repository.get_batch(session, batch_id)
    if batch is None or (batch.user_id != user.id and not user.is_admin):
        raise NotFound(f"no batch {batch_id}")
    return batch


def counts(found: dict[str, int]) -> dict[str, int]:
    """Items by status, every status named."""
    return {status: found.get(status, 0) for status in STATUSES}


def is_done(by_status: dict[str, int]) -> bool:
    return not any(by_status.get(status, 0) for status in repository.OPEN)


def status_counts(session: Session, batch_id: int) -> dict[str, int]:
    """Items by status: what a long poll compares to see whether anything changed."""
    return counts(repository.status_counts(session, batch_id))


def batch_out(session: Session, batch: Batch) -> BatchOut:
    by_status = counts(repository.status_counts(session, batch.id))
    newest: items.Newest = {}
    return BatchOut(
        id=batch.id,
        status=BatchStatus.DONE if is_done(by_status) else BatchStatus.RUNNING,
        tier=Tier(batch.tier),
        created_at=batch.created_at,
        counts=by_status,
        items=[
            items.item_out(session, item, newest) for item in repository.items(session, batch.id)
        ],
        callbacks=callbacks.counts(session, batch),
    )
