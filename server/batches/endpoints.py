"""Routes: send a batch of submissions, read it back (long-polling with ?wait=)."""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

from fastapi import APIRouter, Query, Request, Response
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from server.batches import service
from server.batches.schemas import BatchAccepted, BatchCreate, BatchOut, BatchStatus
from server.db import session_scope
from server.deps import RowId, SettingsDep, TokenCredentials, as_token_user
from server.errors import (
    BadRequest,
    Forbidden,
    NotAuthenticated,
    NotFound,
    PayloadTooLarge,
    TooManyRequests,
    responses,
)
from server.models import User
from server.submissions.endpoints import IdempotencyKey, accept_once

router = APIRouter(prefix="/api/v1/batches", tags=["batches"])

# The longest a GET may wait for a change, and how often it looks meanwhile (between looks
# it holds neither a thread nor a database connection).
MAX_WAIT_S = 60.0
LOOK_EVERY_S = (0.2, 0.5, 1.0)


@router.post(
    "",
    status_code=202,
    response_model=BatchAccepted,
    # callback_secret only where there is one.
    response_model_exclude_none=True,
    responses=responses(BadRequest, PayloadTooLarge, NotAuthenticated, Forbidden, TooManyRequests),
    summary="Send many submissions at once (a trainer's candidates)",
)
async def create_batch(
    body: BatchCreate,
    credentials: TokenCredentials,
    settings: SettingsDep,
    request: Request,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> BatchAccepted:
    own_hosts = (request.url.hostname or "", urlsplit(settings.public_url).hostname or "")

    def accept(session: Session, user: User) -> tuple[BatchAccepted, bool]:
        return service.create_batch(
            session, settings, user, credentials.credentials, body, idempotency_key, own_hosts
        )

    return await accept_once(credentials, response, accept)


def _counts(batch_id: int) -> dict[str, int]:
    with session_scope() as session:
        return service.status_counts(session, batch_id)


@router.get(
    "/{batch_id}",
    response_model=BatchOut,
    responses=responses(NotAuthenticated, NotFound),
    summary="A batch's counts and each item's verdict; ?wait= holds it until one changes",
)
async def read_batch(
    batch_id: RowId,
    credentials: TokenCredentials,
    wait: float = Query(
        default=0,
        ge=0,
        le=MAX_WAIT_S,
        description="seconds to wait for an item to change (start, or reach its verdict) "
        "before answering; the answer comes at once when the batch is done",
    ),
) -> BatchOut:
    def read(session: Session, user: User) -> BatchOut:
        return service.batch_out(session, service.get_batch_for(session, batch_id, user))

    found = await as_token_user(credentials, read)
    if wait <= 0 or found.status == BatchStatus.DONE:
        return found
    deadline = time.monotonic() + wait
    looks = iter(LOOK_EVERY_S)
    pause = LOOK_EVERY_S[0]
    while (left := deadline - time.monotonic()) > 0:
        pause = next(looks, pause)
        await asyncio.sleep(min(pause, left))
        if await run_in_threadpool(_counts, batch_id) != found.counts:
            break
    return await as_token_user(credentials, read)
