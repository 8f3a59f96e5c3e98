"""The grading report: what a person reads and what the server stores (JSON-safe)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
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
    # The benchmark cases' public inputs, each case's output checked, then its calls
    # profiled; never timed for a ranking.
    PROFILE = "profile"


class CaseKind(StrEnum):
    """Which of a problem's cases a case result is: test mode grades the test cases, every
    other mode the benchmark cases."""

    TEST = "test"
    BENCHMARK = "benchmark"


# The name of profile mode's Nsight Compute report among a report's files.
PROFILE_FILE = "profile.ncu-rep"

TERMINAL_STATUSES = frozenset(
    {Status.PASSED, Status.FAILED, Status.ERROR, Status.TIMEOUT, Status.REJECTED}
)


def plain_dict(record: Any) -> dict[str, Any]:
    """A dataclass as `dataclasses.asdict` gives it, with each enum member in its fields as
    its plain string: what JSON, YAML or a log's repr shows of a report is what it always
    was."""
    return asdict(
        record,
        dict_factory=lambda fields: {
            name: str(value) if isinstance(value, StrEnum) else value for name, value in fields
        },
    )


def tail(text: str, lines: int = 12) -> str:
    """The last lines of a traceback or an output: where its author should look."""
    return "\n".join(text.strip().splitlines()[-lines:])


class Stop(Exception):
    """Ends grading with a verdict (error, timeout, rejected) for a person to read."""

    def __init__(self, status: Status, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class CaseResult:
    kind: CaseKind
    params: dict[str, Any]
    status: Status
    message: str = ""
    # The case's timed calls: median_s (its ranked figure), mean_s, min_s, p10_s .. p90_s,
    # cv, iqr_over_median, samples, sm_clock_mhz; and the harness's own clock beside them:
    # harness_per_call_s, harness_floor_s, calls_per_batch, batches, harness_clock,
    # window_cost_s (windows: what a window's calibrated cost took off the fastest round),
    # ranked_by ("runner", or "grader": on a GPU's windows their figure is median_s and the
    # rounds its distribution; with batches the floor raised the runner's samples). None
    # when untimed.
    time: dict[str, Any] | None = None
    # Where the grader's clock ranks: the runner's own figures as it reported them
    # (median_s, min_s, cv, iqr_over_median, samples, sm_clock_mhz), for reading only.
    runner_time: dict[str, Any] | None = None
    roofline: dict[str, float] | None = None
    # Profile mode: what took the time in the case's profiled calls (grader/profiling.py).
    profile: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return plain_dict(self)


@dataclass
class Report:
    status: Status
    problem: str
    mode: Mode
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
    # Seconds its cases took once the submission had loaded: what test mode's short limit
    # (Problem.test_cases_timeout) bounds; 0 where the submission never loaded.
    cases_wall_s: float = 0.0
    # Where the grading's time went, in seconds per phase (see PhaseClock).
    phases: dict[str, float] = field(default_factory=dict)
    # Files the grading hands its author beside the report, by name (profile mode's Nsight
    # Compute report, PROFILE_FILE). Not part of to_dict(), which names each with its size:
    # a worker sends their bytes on their own.
    files: dict[str, bytes] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        files = self.files
        self.files = {}
        try:
            out = plain_dict(self)
        finally:
            self.files = files
        out["cases"] = [case.to_dict() for case in self.cases]
        out["files"] = {name: {"bytes": len(data)} for name, data in sorted(files.items())}
        return out


class PhaseClock:
    """Seconds spent in each phase of a grading, exclusive: time in a phase entered inside
    another counts for the inner one only, so the phases add up to the time measured."""

    def __init__(self, totals: dict[str, float]) -> None:
        self.totals = totals
        self._stack: list[str] = []
        self._since = time.monotonic()

    def _charge(self) -> None:
        now = time.monotonic()
        if self._stack:
            name = self._stack[-1]
            self.totals[name] = self.totals.get(name, 0.0) + now - self._since
        self._since = now

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self._charge()
        self._stack.append(name)
        try:
            yield
        finally:
            self._charge()
            self._stack.pop()
