"""A small bounded in-process cache shared by the request threads: read leaderboards (their
keys carry the problem's ``leaderboard_revision``, so a change to a board makes new keys and
old values simply age out), what the pages render from them, and problems read as the
grader reads them (keyed by their files' digest); and memos kept for a few seconds (a
queue's order and figures, polled by every waiting submission)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Lru(Generic[V]):
    """At most ``size`` values, the least recently used dropped first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._values: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            value = self._values.get(key)
            if value is not None:
                self._values.move_to_end(key)
            return value

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > self.size:
                self._values.popitem(last=False)

    def get_or_make(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value kept under ``key``, made (outside the lock) when there is none; two
        threads missing at once both make it, and the second one's is kept."""
        value = self.get(key)
        if value is None:
            value = make()
            self.put(key, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._values.clear()


class Memo:
    """Values kept for a while, so that polling stays cheap. A value past its time is made
    again by one thread while the others read the old one: under load, a long queue is then
    read once when its memo expires, not by every request that asks in that moment."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[Hashable, tuple[float, object]] = {}
        self._making: set[Hashable] = set()

    def get(self, key: Hashable, ttl_s: float, make: Callable[[], V]) -> V:
        now = time.monotonic()
        with self._lock:
            held = self._held.get(key)
            if held is not None and now - held[0] < ttl_s:
                return held[1]  # type: ignore[return-value]
            if held is not None and key in self._making:
                return held[1]  # type: ignore[return-value]
            self._making.add(key)
        try:
            value = make()
        except BaseException:
            with self._lock:
                self._making.discard(key)
            raise
        with self._lock:
            self._making.discard(key)
            self._held[key] = (now, value)
        return value

    def drop(self, key: Hashable) -> None:
        with self._lock:
            self._held.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._making.clear()
