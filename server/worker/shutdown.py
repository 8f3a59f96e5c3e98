"""A worker's shutdown always ends. Celery's warm shutdown waits for the job in hand, which
is what draining a worker needs; but when its pool process dies first (a service manager's
SIGTERM reaches every process of the worker at once) the shutdown can wait for that process
for good, and a stopped install leaves a worker behind. Once a shutdown has begun, this
ends the process when it has had no job in hand for a few seconds, or at the latest after
the longest grading; a job it still held is handed out again (it was never acknowledged)."""

from __future__ import annotations

import logging
import os
import threading
import time

from celery.signals import worker_shutting_down
from celery.worker import state

from server.settings import get_settings

log = logging.getLogger(__name__)
# How long a worker with nothing in hand may take to finish shutting down.
IDLE_GRACE_S = 10.0
# Beyond the longest grading, for its report to be handed over.
REPORT_GRACE_S = 60.0
POLL_S = 0.5


@worker_shutting_down.connect
def _end_even_if_the_shutdown_hangs(exitcode: int | None = None, **_: object) -> None:
    limit_s = get_settings().grading_timeout_s + REPORT_GRACE_S
    threading.Thread(
        target=_watch, args=(limit_s, exitcode or 0), name="kj-shutdown-watch", daemon=True
    ).start()


def _watch(limit_s: float, exitcode: int) -> None:
    started = time.monotonic()
    idle_since: float | None = None
    while True:
        time.sleep(POLL_S)
        now = time.monotonic()
        if state.active_requests:
            idle_since = None
        elif idle_since is None:
            idle_since = now
        if idle_since is not None and now - idle_since >= IDLE_GRACE_S:
            reason = f"it had no job in hand for {IDLE_GRACE_S:g} s"
        elif now - started >= limit_s:
            reason = f"{limit_s:g} s passed"
        else:
            continue
        log.warning("the worker's shutdown had not ended after %s: exiting now", reason)
        logging.shutdown()
        os._exit(exitcode)
