"""One request at a time per API token, for the requests that a token's own others would
wait behind in the database anyway (a submission holds its user's row until it commits, for
the rate limit and the Idempotency-Key). They wait their turn here, on the event loop, before
they take a thread of the pool and a database connection: a script that sends many
submissions at once with one token then slows only itself, and its own reads (polling the
submissions it sent) and everyone else's requests keep their threads."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from server.users.service import hash_token


class Turns:
    """An asyncio lock per key, kept only while someone holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def turn(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._locks)


SUBMISSIONS = Turns()


def token_key(authorization: str | None) -> str | None:
    """Whose turn a request takes: its bearer token's digest (never the token itself), or
    None for a request without one (it is refused before it reaches the database)."""
    if not authorization:
        return None
    return hash_token(authorization)
