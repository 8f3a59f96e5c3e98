"""Short-lived copies of what anonymous readers are sent (a leaderboard, a problem page), so a
crowd reading the same board is answered from memory on the event loop, before routing,
without a thread hand-off or a database query (``FreshCopiesFirst``). A copy is served as
it is for ``FRESH_S``; until ``STALE_S`` it is still served while one task makes the next in
the background, so no reader waits for the database even when a crowd keeps the process
busy and the new copy is slow to make; after that a reader waits for a new one (one request
makes it, the others wait for it). Copies are made from a problem read at most
``leaderboards.service.PROBLEM_TTL_S`` before: a change recorded by another process (a
report, by the results worker) shows within ``STALE_S`` plus that; a change this process
makes shows at once (see ``forget``). A signed-in reader, or any request with a token,
always takes the full path."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from fastapi import Request, Response
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger(__name__)

FRESH_S = 0.5
STALE_S = 2.0
MAX_COPIES = 512
# Headers a copy keeps; anything per-visitor (a cookie) makes a response unfit to share.
KEPT_HEADERS = ("content-type", "etag", "cache-control", "vary")


@dataclass(frozen=True)
class Copy:
    status_code: int
    body: bytes
    headers: dict[str, str]
    made: float
    remake: Callable[[], Response]  # makes the next copy (run in the thread pool)

    def age(self) -> float:
        return time.monotonic() - self.made

    def response(self, if_none_match: str | None) -> Response:
        tag = self.headers.get("etag")
        if tag is not None and if_none_match is not None and tag_matches(if_none_match, tag):
            kept = {k: v for k, v in self.headers.items() if k != "content-type"}
            return Response(status_code=304, headers=kept)
        return Response(self.body, status_code=self.status_code, headers=self.headers)


class Copies:
    def __init__(self) -> None:
        self._copies: OrderedDict[Hashable, Copy] = OrderedDict()
        self._lock = threading.Lock()

    def usable(self, key: Hashable) -> Copy | None:
        """The copy under ``key`` if it is younger than STALE_S."""
        with self._lock:
            held = self._copies.get(key)
        return held if held is not None and held.age() < STALE_S else None

    def keep(self, key: Hashable, response: Response, remake: Callable[[], Response]) -> None:
        headers = {k.lower(): v for k, v in response.headers.items()}
        if response.status_code != 200 or "set-cookie" in headers:
            return
        copy = Copy(
            200,
            bytes(response.body),
            {k: v for k, v in headers.items() if k in KEPT_HEADERS},
            time.monotonic(),
            remake,
        )
        with self._lock:
            self._copies[key] = copy
            self._copies.move_to_end(key)
            while len(self._copies) > MAX_COPIES:
                self._copies.popitem(last=False)

    def forget(self) -> None:
        with self._lock:
            self._copies.clear()


copies = Copies()
# The copies being made now, on this process's event loop, by URL, and the tasks making them
# in the background (held so that they are not collected before they end).
_making: dict[Hashable, asyncio.Event] = {}
_background: set[asyncio.Task[None]] = set()


def is_anonymous(request: Request) -> bool:
    """No token and no signed-in session: the same response is right for every such reader."""
    if "authorization" in request.headers:
        return False
    session = request.scope.get("session")
    return not (isinstance(session, dict) and "user_id" in session)


async def serve(request: Request, make: Callable[[], Response]) -> Response:
    """An anonymous reader's copy of this URL, else ``make()`` in the thread pool (and its
    answer kept for the next anonymous reader). For an anonymous reader ``make`` must not
    depend on the request's conditional headers: the copy answers those itself."""
    if not is_anonymous(request):
        return await run_in_threadpool(make)
    key = copy_key(request.url.path, request.url.query, request.headers.get("accept", ""))
    if_none_match = request.headers.get("if-none-match")
    if (held := usable(key)) is not None:
        return held.response(if_none_match)
    making = _making.get(key)
    if making is not None:
        await making.wait()
        if (held := copies.usable(key)) is not None:
            return held.response(if_none_match)
        return await run_in_threadpool(make)
    return await _make_copy(key, make)


def copy_key(path: str, query: str, accept: str) -> Hashable:
    return (path, query, accept)


def usable(key: Hashable) -> Copy | None:
    """The copy to answer with, if one younger than STALE_S is held; a copy older than
    FRESH_S starts the making of the next one (once) on this event loop."""
    held = copies.usable(key)
    if held is not None and held.age() >= FRESH_S and key not in _making:
        task = asyncio.get_running_loop().create_task(_refresh(key, held.remake))
        _background.add(task)
        task.add_done_callback(_background.discard)
    return held


async def _refresh(key: Hashable, make: Callable[[], Response]) -> None:
    """A new copy while the old one is still served; a failure (the database away) leaves
    the old one to run out, and the next reader after that asks again."""
    try:
        await _make_copy(key, make)
    except Exception:
        log.info("a copy of %s was not made again", key, exc_info=True)


async def _make_copy(key: Hashable, make: Callable[[], Response]) -> Response:
    _making[key] = done = asyncio.Event()
    try:
        response = await run_in_threadpool(make)
        copies.keep(key, response, make)
        return response
    finally:
        del _making[key]
        done.set()


class FreshCopiesFirst:
    """Outermost, before routing and every other middleware: a GET by an anonymous reader
    (no Authorization header, no session cookie) for which a usable copy is held is
    answered from it here; anything else goes on to the app. A crowd on one board costs
    little more than the HTTP server's own work."""

    def __init__(self, app: ASGIApp, session_cookie: str) -> None:
        self.app = app
        self.session_cookie = session_cookie.encode("latin-1") + b"="

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            held, if_none_match = self._held(scope)
            if held is not None:
                await held.response(if_none_match)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _held(self, scope: Scope) -> tuple[Copy | None, str | None]:
        accept = ""
        if_none_match = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                return None, None
            if name == b"cookie" and self.session_cookie in value:
                return None, None
            if name == b"accept":
                accept = value.decode("latin-1")
            elif name == b"if-none-match":
                if_none_match = value.decode("latin-1")
        key = copy_key(scope["path"], scope["query_string"].decode("latin-1"), accept)
        return usable(key), if_none_match


def tag_matches(if_none_match: str, tag: str) -> bool:
    """RFC 9110's weak comparison, as If-None-Match asks: any listed tag, or ``*``."""
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == tag:
            return True
    return False
