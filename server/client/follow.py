"""Following a submission from queued to its verdict: its place in the queue and expected
wait while it waits, its grading's progress (the case being run of how many) and running
time while it runs, shown as they change."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.status import Status as Spinner
from rich.text import Text

from grader.report import TERMINAL_STATUSES, Status
from server.client.api import Api
from server.client.errors import Unreachable, span
from server.client.figures import progress_text

TERMINAL = frozenset(status.value for status in TERMINAL_STATUSES)
# How long the server may be away (restarting, say) before following gives up.
PATIENCE_S = 120.0


def poll_interval(elapsed_s: float) -> float:
    """Often at first, when most test-mode verdicts come; then less, to spare the server."""
    return min(0.5 + elapsed_s / 30.0, 3.0)


def describe(submission: dict[str, Any]) -> str:
    head = f"submission {submission.get('id')}"
    status = submission.get("status")
    if status == Status.QUEUED:
        position = submission.get("queue_position")
        if position is None:
            place = "queued"
        elif position == 0:
            place = "queued, next in line"
        else:
            place = f"queued, {position} ahead of it"
        text = f"{head}: {place} on {submission.get('gpu')}"
        wait = submission.get("expected_wait_s")
        if wait is not None:
            text += "; expected to start " + (f"in about {span(wait)}" if wait >= 1 else "now")
        if submission.get("message"):
            text += f": {submission['message']}"
        return text
    if status == Status.RUNNING:
        text = f"{head}: running"
        doing = progress_text(submission.get("progress"))
        if doing:
            text += f": {doing}"
        running_s = running_for(submission)
        if running_s is not None:
            text += f" · {span(running_s)}"
        return text
    return f"{head}: {status}"


def running_for(submission: dict[str, Any]) -> float | None:
    """Seconds since its grading started, by its `started_at` and this machine's clock."""
    try:
        started = datetime.fromisoformat(str(submission.get("started_at")))
    except ValueError:
        return None
    if started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    return max(0.0, (datetime.now(UTC) - started).total_seconds())


class Progress:
    """Where a submission is, on stderr: one line redrawn in place on a terminal; elsewhere
    (a log, a pipe, an agent reading it) one line each time it moves: a new status, a new
    place in the queue, a new step of its grading."""

    def __init__(self, out: Console) -> None:
        self.out = out
        self._spinner: Spinner | None = None
        self._last: tuple[Any, ...] | None = None

    def update(self, submission: dict[str, Any]) -> None:
        status = submission.get("status")
        text = describe(submission)
        if self.out.is_terminal and status not in TERMINAL:
            if self._spinner is None:
                self._spinner = self.out.status(Text(text))
                self._spinner.start()
            else:
                self._spinner.update(Text(text))
            return
        self.stop()
        moved = (status, submission.get("queue_position"), submission.get("progress"))
        if moved != self._last:
            self._last = moved
            self.out.print(Text(text))

    def note(self, message: str) -> None:
        self.out.print(Text(message, style="yellow"))

    def stop(self) -> None:
        if self._spinner is not None:
            self._spinner.stop()
            self._spinner = None


def follow(api: Api, submission_id: int, progress: Progress) -> dict[str, Any]:
    """Poll the submission until it has a verdict, and return it as the API last gave it.
    While the server cannot be reached (a restart), keep asking for ``PATIENCE_S``."""
    started = time.monotonic()
    away_since: float | None = None
    try:
        while True:
            try:
                submission = api.submission(submission_id)
            except Unreachable as exc:
                now = time.monotonic()
                away_since = away_since or now
                if now - away_since > PATIENCE_S:
                    raise
                wait = min(float(exc.retry_after_s or 2), 10.0)
                progress.note(f"{exc.message}; asking again in {span(wait)}")
                time.sleep(wait)
                continue
            away_since = None
            progress.update(submission)
            if submission.get("status") in TERMINAL:
                return submission
            time.sleep(poll_interval(time.monotonic() - started))
    finally:
        progress.stop()
