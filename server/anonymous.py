"""Short-lived copies of what anonymous readers are sent (a leaderboard, a problem page), so a
crowd reading the same board is answered from memory on the event loop, without a thread
hand-off or a database query. A copy lives ``TTL_S``, and is made from a problem read at
most ``leaderboards.service.PROBLEM_TTL_S`` before: a change recorded by another process
(a report, by the results worker) shows within a second (a change this process makes
shows at once, see ``forget``). A signed-in reader, or any request with a token, always
takes the full path."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from fastapi import Request, Response
from starlette.concurrency import run_in_threadpool

TTL_S = 0.5
MAX_COPIES = 512
# Headers a copy keeps; anything per-visitor (a cookie) makes a response unfit to share.
KEPT_HEADERS = ("content-type", "etag", "cache-control", "vary")


@dataclass(frozen=True)
class Copy:
    status_code: int
    body: bytes
    headers: dict[str, str]
    until: float

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

    def fresh(self, key: Hashable) -> Copy | None:
        with self._lock:
            held = self._copies.get(key)
        return held if held is not None and held.until > time.monotonic() else None

    def keep(self, key: Hashable, response: Response) -> None:
        headers = {k.lower(): v for k, v in response.headers.items()}
        if response.status_code != 200 or "set-cookie" in headers:
            return
        copy = Copy(
            200,
            bytes(response.body),
            {k: v for k, v in headers.items() if k in KEPT_HEADERS},
            time.monotonic() + TTL_S,
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


def is_anonymous(request: Request) -> bool:
    """No token and no signed-in session: the same response is right for every such reader."""
    if "authorization" in request.headers:
        return False
    session = request.scope.get("session")
    return not (isinstance(session, dict) and "user_id" in session)


async def serve(request: Request, make: Callable[[], Response]) -> Response:
    """An anonymous reader's fresh copy of this URL, else ``make()`` in the thread pool (and
    its answer kept for the next anonymous reader)."""
    anonymous = is_anonymous(request)
    key = (request.url.path, request.url.query, request.headers.get("accept", ""))
    if anonymous and (held := copies.fresh(key)) is not None:
        return held.response(request.headers.get("if-none-match"))
    response = await run_in_threadpool(make)
    if anonymous:
        copies.keep(key, response)
    return response


def tag_matches(if_none_match: str, tag: str) -> bool:
    """RFC 9110's weak comparison, as If-None-Match asks: any listed tag, or ``*``."""
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == tag:
            return True
    return False
