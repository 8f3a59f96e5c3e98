"""A grading's progress on its way to the results step. The harness says where it stands as
often as it moves; a thread of the pool process sends the latest, at most once a second and
only when it changed, so that a slow or absent broker never holds a grading up: a progress
message lost only leaves the page a step behind until the next one, or the verdict."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from grader.report import Progress

log = logging.getLogger(__name__)

# At most one message a second for each grading.
EVERY_S = 1.0
# How long the end of a grading waits for a message on its way (a send to an absent broker
# gives up after Celery's broker_connection_timeout); one still going is recorded as late,
# which the results step ignores once the verdict is in.
STOP_WAIT_S = 3.0


class ProgressSender:
    """The harness's `on_progress` for one grading, used as a context manager around it;
    ``send`` gets each message's one argument (``{"submission_id", "progress"}``) in the
    sender's thread and may raise: the failure is logged, never the grading's."""

    def __init__(
        self, submission_id: int, send: Callable[[dict[str, Any]], None], every_s: float = EVERY_S
    ) -> None:
        self.submission_id = submission_id
        self.send = send
        self.every_s = every_s
        self._latest: Progress | None = None
        self._lock = threading.Lock()
        self._moved = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"kj-progress-{submission_id}", daemon=True
        )

    def __call__(self, progress: Progress) -> None:
        with self._lock:
            self._latest = progress
        self._moved.set()

    def __enter__(self) -> ProgressSender:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stopped.set()
        self._moved.set()
        self._thread.join(STOP_WAIT_S)

    def _run(self) -> None:
        sent: Progress | None = None
        while True:
            self._moved.wait()
            if self._stopped.is_set():
                return
            with self._lock:
                latest = self._latest
                self._moved.clear()
            if latest is None or latest == sent:
                continue
            began = time.monotonic()
            try:
                self.send({"submission_id": self.submission_id, "progress": latest.to_dict()})
            except Exception:
                log.info("progress of submission %s not sent", self.submission_id, exc_info=True)
            sent = latest
            # The pause counts from the send's start: a slow send is not followed by another.
            if self._stopped.wait(max(0.0, self.every_s - (time.monotonic() - began))):
                return
