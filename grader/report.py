"""The grading report: what a person reads and what the server stores (JSON-safe)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    """A submission's status: queued and running while in the service, then its verdict."""

    QUEUED = "queued"
    RUNNING = "running"
    PASSED = "passed"  # right on every case (and timed, outside test mode)
    FAILED = "failed"  # a wrong output
    ERROR = "error"  # a crash, a compile error, a bad submission
    TIMEOUT = "timeout"
    REJECTED = "rejected"  # cheating or forbidden behaviour detected


class Mode(StrEnum):
    TEST = "test"  # correctness on the test cases
    BENCHMARK = "benchmark"  # also timed on the benchmark cases
    LEADERBOARD = "leaderboard"  # the ranked run: secret-seeded inputs, every call checked


TERMINAL_STATUSES = frozenset(
    {Status.PASSED, Status.FAILED, Status.ERROR, Status.TIMEOUT, Status.REJECTED}
)


class Stop(Exception):
    """Ends grading with a verdict (error, timeout, rejected) for a person to read."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class CaseResult:
    kind: str  # "test" | "benchmark"
    params: dict[str, Any]
    status: str
    message: str = ""
    # median_s, mean_s, min_s, p10_s, p90_s, cv, samples, sm_clock_mhz; None when untimed.
    time: dict[str, Any] | None = None
    roofline: dict[str, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Report:
    status: str
    problem: str
    mode: str
    device: str
    device_name: str = ""
    device_type: str = ""
    # The device's measured copy bandwidth and matrix rate the floors were computed from.
    device_peaks: dict[str, Any] | None = None
    score: float | None = None
    message: str = ""
    flags: list[str] = field(default_factory=list)
    cases: list[CaseResult] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["cases"] = [case.to_dict() for case in self.cases]
        return out
