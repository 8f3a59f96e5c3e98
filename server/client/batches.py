"""Grading many candidates at once (a trainer's step): ``grade_many`` sends them through the
batch API, waits when the server says to (429 over the token's cap of items in flight, 503,
each with Retry-After), and yields each item's verdict as it finishes, following its batch
with long polls (``GET /api/v1/batches/{id}?wait=``)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

import httpx

from grader.report import TERMINAL_STATUSES
from server.client.api import CONNECT_TIMEOUT_S, user_agent
from server.client.config import Login
from server.client.errors import ClientError, from_response, from_transport

# Items per POST: under the server's KJ_MAX_BATCH_ITEMS (1000 by default).
BATCH_SIZE = 200
# Seconds one long poll may wait for a change (the server allows 60).
WAIT_S = 30.0
# A wait the server asked for with no Retry-After, and the longest wait taken.
DEFAULT_RETRY_S = 5
LONGEST_RETRY_S = 120


class _Later(Exception):
    """The server asked to be asked again later (429 or 503), or could not be reached."""

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.seconds = min(max(seconds, 0.0), LONGEST_RETRY_S)


async def grade_many(
    items: Iterable[Mapping[str, Any]],
    *,
    login: Login,
    tier: str = "standard",
    callback_url: str | None = None,
    on_batch: Callable[[dict[str, Any]], None] | None = None,
    batch_size: int = BATCH_SIZE,
    wait_s: float = WAIT_S,
    transport: httpx.AsyncBaseTransport | None = None,
) -> AsyncIterator[dict[str, Any]]:
    """Grade `items` (each ``{"key", "problem", "code", "mode"?, "gpu"?}``, keys unique)
    and yield each one's verdict as it finishes: the batch item's body (``key``,
    ``submission_id``, ``status``, ``score``, ``speedup``, ``error_class``, ``flags``,
    ``flag_codes``) plus ``batch_id``. Batches of `batch_size` are sent while the server
    takes them; one it refuses for now (429, 503) is sent again after its Retry-After,
    under the same Idempotency-Key, so that a retry never grades an item twice. A refusal
    that waiting cannot cure (422, 401, ...) raises ClientError. With `callback_url`, every
    batch asks the server to POST each verdict there too; `on_batch` is called with each
    batch's 202 body (``id``, ``items``, and ``callback_secret``, the key its callbacks are
    signed with, which no later answer shows)."""
    token = login.require_token()
    listed = [dict(item) for item in items]
    chunks = deque(
        (listed[start : start + batch_size], str(uuid.uuid4()))
        for start in range(0, len(listed), max(1, batch_size))
    )
    async with httpx.AsyncClient(
        base_url=login.url,
        headers={
            "User-Agent": user_agent(),
            "Accept": "application/json",
            "Authorization": f"Bearer {token}",
        },
        timeout=httpx.Timeout(wait_s + 30, connect=CONNECT_TIMEOUT_S),
        transport=transport,
    ) as http:
        unfinished: dict[int, set[str]] = {}
        polls: dict[int, asyncio.Task[dict[str, Any]]] = {}
        send_at = 0.0
        try:
            while chunks or unfinished:
                while chunks and time.monotonic() >= send_at:
                    chunk, key = chunks[0]
                    try:
                        made = await _post(http, login.url, tier, callback_url, chunk, key)
                    except _Later as later:
                        send_at = time.monotonic() + later.seconds
                        break
                    chunks.popleft()
                    if on_batch is not None:
                        on_batch(made)
                    unfinished[made["id"]] = {item["key"] for item in made["items"]}
                for batch_id in unfinished:
                    if batch_id not in polls:
                        polls[batch_id] = asyncio.create_task(
                            _follow(http, login.url, batch_id, wait_s)
                        )
                until_send = max(0.0, send_at - time.monotonic()) if chunks else None
                if not polls:
                    await asyncio.sleep(until_send or 0)
                    continue
                done, _ = await asyncio.wait(
                    polls.values(), timeout=until_send, return_when=asyncio.FIRST_COMPLETED
                )
                for batch_id, task in list(polls.items()):
                    if task not in done:
                        continue
                    del polls[batch_id]
                    body = task.result()
                    waiting = unfinished[batch_id]
                    for item in body["items"]:
                        if item["key"] in waiting and item["status"] in TERMINAL_STATUSES:
                            waiting.discard(item["key"])
                            yield {**item, "batch_id": batch_id}
                    if not waiting:
                        del unfinished[batch_id]
        finally:
            for task in polls.values():
                task.cancel()


async def _post(
    http: httpx.AsyncClient,
    url: str,
    tier: str,
    callback_url: str | None,
    chunk: list[dict[str, Any]],
    key: str,
) -> dict[str, Any]:
    body = {"items": chunk, "tier": tier, "callback_url": callback_url}
    try:
        response = await http.post("/api/v1/batches", json=body, headers={"Idempotency-Key": key})
    except httpx.TransportError as exc:
        raise _Later(DEFAULT_RETRY_S) from from_transport(exc, url)
    return dict(_answer(response, url))


async def _follow(
    http: httpx.AsyncClient, url: str, batch_id: int, wait_s: float
) -> dict[str, Any]:
    """The batch once something in it changed (or the wait ran out), asking again after any
    wait the server or the network imposed."""
    while True:
        try:
            response = await http.get(f"/api/v1/batches/{batch_id}", params={"wait": wait_s})
            return dict(_answer(response, url))
        except httpx.TransportError:
            await asyncio.sleep(DEFAULT_RETRY_S)
        except _Later as later:
            await asyncio.sleep(later.seconds)


def _answer(response: httpx.Response, url: str) -> Any:
    if response.status_code < 400:
        return response.json()
    error: ClientError = from_response(response, url)
    if response.status_code in (429, 503):
        raise _Later(error.retry_after_s or DEFAULT_RETRY_S)
    raise error
