"""What the client's commands exit with, and what can go wrong talking to a server:

    ClientError         base: a one-line message for a person, and an exit code
    ├── NotLoggedIn     2  no server URL or token: ``kerneljudge login URL``, or KJ_URL/KJ_TOKEN
    ├── Refused         6  the server answered 4xx: the request was wrong or not allowed (an
    │                      unknown problem, a deadline passed, a rate limit with its
    │                      Retry-After, a bad token, ...); ``code`` and ``detail`` are the
    │                      server's ``{"error", "detail"}``
    └── Unreachable     7  no answer (refused connection, DNS, time-out), a 503 while the
                           server's database is away (``retry_after_s``), another 5xx, or an
                           answer that is not KernelJudge's

A verdict has an exit code of its own (``VERDICT_EXIT``): 0 passed, 1 failed, 3 error,
4 timeout, 5 rejected; 8 when ``status`` finds a submission still queued or running.
"""

from __future__ import annotations

import email.utils
import math
from datetime import datetime, timedelta
from enum import IntEnum
from typing import Any

import httpx


class ExitCode(IntEnum):
    PASSED = 0  # and every other command's success
    FAILED = 1
    USAGE = 2  # bad options (Click's own code), an unreadable file, not logged in
    ERROR = 3
    TIMEOUT = 4
    REJECTED = 5
    REFUSED = 6
    UNREACHABLE = 7
    UNFINISHED = 8
    INTERRUPTED = 130  # Ctrl-C while following: the submission goes on


VERDICT_EXIT = {
    "passed": ExitCode.PASSED,
    "failed": ExitCode.FAILED,
    "error": ExitCode.ERROR,
    "timeout": ExitCode.TIMEOUT,
    "rejected": ExitCode.REJECTED,
}


def verdict_exit(status: str) -> ExitCode:
    return VERDICT_EXIT.get(status, ExitCode.UNFINISHED)


class ClientError(Exception):
    exit_code = ExitCode.USAGE
    code = "usage"
    http_status: int | None = None
    retry_after_s: int | None = None

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def detail(self) -> str:
        return self.message

    def to_json(self) -> dict[str, Any]:
        """The one JSON document a ``--json`` command prints when it fails."""
        return {
            "error": self.code,
            "detail": self.detail,
            "http_status": self.http_status,
            "retry_after_s": self.retry_after_s,
            "message": self.message,
        }


class NotLoggedIn(ClientError):
    code = "not_logged_in"


class Refused(ClientError):
    exit_code = ExitCode.REFUSED

    def __init__(
        self,
        message: str,
        *,
        http_status: int,
        code: str,
        detail: str,
        retry_after_s: int | None = None,
    ) -> None:
        super().__init__(message)
        self.http_status = http_status
        self.code = code
        self.server_detail = detail
        self.retry_after_s = retry_after_s

    @property
    def detail(self) -> str:
        return self.server_detail


class Unreachable(ClientError):
    exit_code = ExitCode.UNREACHABLE
    code = "unreachable"

    def __init__(
        self,
        message: str,
        *,
        http_status: int | None = None,
        retry_after_s: int | None = None,
        sent: bool = True,
    ) -> None:
        super().__init__(message)
        self.http_status = http_status
        self.retry_after_s = retry_after_s
        # False when the request never left (the connection was refused): a retry of a
        # submission then cannot make a second one, and the server is simply not there.
        self.sent = sent
        if http_status is not None:
            self.code = "unavailable"


# How a refusal's message starts, by HTTP status; the server's detail follows.
REFUSALS = {
    403: "not allowed",
    404: "not found",
    409: "refused",
    413: "too large",
    422: "invalid request",
    429: "too many requests",
}


def from_transport(exc: httpx.TransportError, url: str) -> Unreachable:
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        reason = str(exc) or "the connection failed"
        return Unreachable(f"cannot reach the server at {url}: {reason}", sent=False)
    if isinstance(exc, httpx.TimeoutException):
        return Unreachable(f"the server at {url} did not answer in time")
    return Unreachable(f"lost the connection to the server at {url}: {exc or type(exc).__name__}")


def from_response(response: httpx.Response, url: str, *, hint_404: str = "") -> ClientError:
    """The error for a response of 400 or more: the server's own words, with what to do."""
    status = response.status_code
    retry_after_s = retry_after(response.headers.get("Retry-After"))
    body = error_body(response)
    if body is None:
        what = "an error" if status >= 500 else "an answer that is not KernelJudge's"
        return Unreachable(
            f"HTTP {status} from {url}: {what} (is KJ_URL, or the URL you logged in with, "
            "a KernelJudge server?)",
            http_status=status,
        )
    code, detail = body
    if status == 503:
        wait = f"; try again in {span(retry_after_s)}" if retry_after_s is not None else ""
        return Unreachable(
            f"the server is unavailable right now: {detail}{wait}",
            http_status=status,
            retry_after_s=retry_after_s,
        )
    if status >= 500:
        return Unreachable(f"the server failed (HTTP {status}): {detail}", http_status=status)
    if status == 401:
        message = (
            f"the server refused your token ({detail}); log in again with "
            f"`kerneljudge login {url}`, or set KJ_TOKEN"
        )
    elif status in REFUSALS:
        after = {404: hint_404, 429: retry_when(retry_after_s)}.get(status, "")
        message = f"{REFUSALS[status]}: {detail}{after}"
    else:
        message = f"the server refused the request (HTTP {status}): {detail}"
    return Refused(
        message, http_status=status, code=code, detail=detail, retry_after_s=retry_after_s
    )


def error_body(response: httpx.Response) -> tuple[str, str] | None:
    """The server's ``{"error", "detail"}``, or None for any other answer (a proxy's page)."""
    try:
        body = response.json()
    except ValueError:
        return None
    if not isinstance(body, dict) or not isinstance(body.get("error"), str):
        return None
    return body["error"], " ".join(str(body.get("detail", "")).split())


def retry_after(value: str | None) -> int | None:
    """Seconds from a Retry-After header: a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return int(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0, math.ceil((when - datetime.now(when.tzinfo)).total_seconds()))


def retry_when(seconds: int | None) -> str:
    if seconds is None:
        return ""
    at = (datetime.now() + timedelta(seconds=seconds)).strftime("%H:%M:%S")
    return f"; retry after {at} (in {span(seconds)})"


def span(seconds: float) -> str:
    """A wait as a person says it: 45 s, 4 min 12 s, 2 h 5 min."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"
