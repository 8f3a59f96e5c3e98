"""The service's errors. Every error a request can cause is a ``KernelJudgeError``:

    KernelJudgeError            base; carries an HTTP status and a machine-readable code
    ├── BadRequest              422  malformed or invalid input ("invalid_request")
    ├── PayloadTooLarge         413  code or body over the size limit ("too_large")
    ├── NotAuthenticated        401  missing, malformed, unknown or revoked token
    ├── Forbidden               403  authenticated but not allowed (e.g. not an admin)
    ├── NotFound                404  unknown problem, submission, ...
    ├── Conflict                409  the request clashes with existing state
    ├── TooManyRequests         429  too many failed log-ins or submissions in a short time;
    │                                ``retry_after_s`` becomes a ``Retry-After`` header
    └── Unavailable             503  the database cannot be reached right now (a restart, a
                                     failover); nothing was done, try again after
                                     ``Retry-After`` seconds

A database error that means "unreachable" (a refused or dropped connection, a pool timeout)
becomes ``Unavailable`` in the app's handler; any other unexpected error is a 500.

One handler turns each into ``{"error": code, "detail": message}``; request validation
errors and unknown routes get the same shape, so clients parse one format.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel


class ErrorBody(BaseModel):
    error: str
    detail: str


class KernelJudgeError(Exception):
    status_code = 400
    code = "bad_request"

    def __init_subclass__(
        cls, *, status_code: int | None = None, code: str | None = None, **kwargs: Any
    ) -> None:
        """``class NotFound(KernelJudgeError, status_code=404, code="not_found")``; a
        subclass naming neither keeps its parent's."""
        super().__init_subclass__(**kwargs)
        cls.status_code = status_code or cls.status_code
        cls.code = code or cls.code

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail

    @property
    def headers(self) -> dict[str, str]:
        """HTTP headers the response carries besides the JSON body."""
        return {}


class BadRequest(KernelJudgeError, status_code=422, code="invalid_request"):
    """The request is malformed or names something invalid."""


class PayloadTooLarge(KernelJudgeError, status_code=413, code="too_large"):
    """The code or the request body is over its size limit."""


class NotAuthenticated(KernelJudgeError, status_code=401, code="not_authenticated"):
    """No valid bearer token was given."""


class Forbidden(KernelJudgeError, status_code=403, code="forbidden"):
    """The token is valid but its user may not do this."""


class NotFound(KernelJudgeError, status_code=404, code="not_found"):
    """No such problem, submission or leaderboard."""


class Conflict(KernelJudgeError, status_code=409, code="conflict"):
    """The request clashes with existing state."""


class TooManyRequests(KernelJudgeError, status_code=429, code="too_many_requests"):
    """Too many attempts in a short time; wait and try again."""

    def __init__(self, detail: str, retry_after_s: int | None = None) -> None:
        super().__init__(detail)
        self.retry_after_s = retry_after_s

    @property
    def headers(self) -> dict[str, str]:
        if self.retry_after_s is None:
            return {}
        return {"Retry-After": str(self.retry_after_s)}


class Unavailable(KernelJudgeError, status_code=503, code="unavailable"):
    """The database cannot be reached right now; nothing was done. Try again after the
    Retry-After header's seconds (a submission sent again with the same Idempotency-Key is
    made at most once)."""

    retry_after_s = 5

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after_s)}


Thing = TypeVar("Thing")


def existing(thing: Thing | None, missing: str) -> Thing:
    """What a lookup found, or ``NotFound(missing)`` where it found nothing."""
    if thing is None:
        raise NotFound(missing)
    return thing


def responses(*errors: type[KernelJudgeError]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` for a route, so the schema shows its error bodies."""
    return {
        error.status_code: {"model": ErrorBody, "description": error.__doc__ or error.code}
        for error in errors
    }
