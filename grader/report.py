"""The grading report: what a person reads and what the server stores (JSON-safe)."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, is_dataclass
from enum import StrEnum
from typing import Any, Literal

from grader.screen import REASON_CODES


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


class ProgressPhase(StrEnum):
    """What a running grading is doing, as its progress says."""

    LOAD = "load"  # the runner starting and importing submission.py, compilation included
    TEST = "test"  # the test cases, one by one
    BENCHMARK = "benchmark"  # the benchmark cases, one by one (checked, then timed or profiled)
    PROFILE = "profile"  # Nsight Compute's report of the profiled cases, collected


@dataclass(frozen=True)
class Progress:
    """Where a running grading stands (`grade(on_progress=...)`): its phase and, among the
    cases, the one being run (counted from 1) of how many, with its parameters as a label.
    Two are equal exactly when a reader would see no change."""

    phase: ProgressPhase
    case: int = 0
    cases: int = 0
    label: str = ""

    def __str__(self) -> str:
        if not self.cases:
            return str(self.phase)
        return f"{self.phase}: case {self.case}/{self.cases} {self.label}".rstrip()

    def to_dict(self) -> dict[str, Any]:
        return plain_dict(self)


# On a GPU, a call shorter than this (its device time) is short: the same code's figure
# moves by a few percent from one process to the next, outside the grader too (an H100: a
# launch-bound module's score CV 2.7-3.3% over ten gradings, 0.3-0.4% between placements
# of its tensors within one process; docs/benchmarks.md).
SHORT_CALL_S = 50e-6

# The name of profile mode's Nsight Compute report among a report's files.
PROFILE_FILE = "profile.ncu-rep"

TERMINAL_STATUSES = frozenset(
    {Status.PASSED, Status.FAILED, Status.ERROR, Status.TIMEOUT, Status.REJECTED}
)


class ErrorClass(StrEnum):
    """Why a verdict is not a pass, in the classes a program (a trainer's reward) maps:
    `error_class` below is the one rule that derives it from a report."""

    COMPILE = "compile"  # submission.py did not load: a syntax error, a failed build
    RUNTIME = "runtime"  # it loaded, then crashed, returned no tensor or ran out of memory
    WRONG = "wrong"  # an output did not match the reference
    TIMEOUT = "timeout"
    REJECTED = "rejected"  # screening or a plausibility check caught forbidden behaviour
    INFRASTRUCTURE = "infrastructure"  # never the candidate's fault: grading it again may pass


# The start of an error message for a submission that did not load (grader/session.py).
LOAD_FAILED = "submission.py failed to load"
# Flags the service or a worker sets on a verdict it had to make without a grading.
GRADER_FAILURE = "grader_failure"
INVALID_REPORT = "invalid_report"
# Error messages that start so are about the problem or the worker, never the submission
# (grader/expected.py, grader/requirements.py's shortfall, server/submissions/reports.py).
# Only a message's start is read: what a submission prints comes after a fixed start.
NOT_THE_CANDIDATES = (
    "the problem's ",
    "the problem has no ",
    "this problem ",
    "this worker ",
    "needs a GPU of compute capability",
    "the grader failed on this worker",
    "this submission's stored report could not be read",
)


def error_class(status: Status | str, message: str, flags: list[str]) -> ErrorClass | None:
    """A verdict's error class: None while queued or running and for a pass; `error` splits
    into infrastructure (a flag or a message start above says the harness, the problem or
    the worker failed), compile (submission.py did not load) and runtime (the rest)."""
    match Status(status):
        case Status.FAILED:
            return ErrorClass.WRONG
        case Status.TIMEOUT:
            return ErrorClass.TIMEOUT
        case Status.REJECTED:
            return ErrorClass.REJECTED
        case Status.ERROR:
            if GRADER_FAILURE in flags or INVALID_REPORT in flags:
                return ErrorClass.INFRASTRUCTURE
            if message.startswith(NOT_THE_CANDIDATES):
                return ErrorClass.INFRASTRUCTURE
            if message.startswith(LOAD_FAILED):
                return ErrorClass.COMPILE
            return ErrorClass.RUNTIME
    return None


# The finding of a flag the harness sets when a runner's own clock claims less than the
# grader's clock allows (grader/harness.py); its text reads "case ...: " then this.
RUNNER_CLOCK_FINDING = "the runner's own median of "
# The flag of a multi-rank grading whose cases ran on fewer ranks than they ask for, as its
# worker host offers (KJ_WORLD_SIZES, grader/rankharness.py).
RANKS_SCALED_FLAG = "ranks: graded at "
RANKS_SCALED_CODE = "ranks.scaled"
SCREENING_FLAG = "screening: "


def flag_code(flag: str) -> str:
    """A flag's stable code, for programs: `screening.<reason>` for a screening finding
    (grader/screen.py's REASON_CODES), `timing.runner_clock` for a runner's clock under
    the grader's, `ranks.scaled` for cases graded on fewer ranks than they ask for, the
    service's own flags as they are, and `other` for any other text.
    Read from the fixed parts of the text only (a finding's reason is its last part)."""
    if flag in (GRADER_FAILURE, INVALID_REPORT):
        return flag
    if flag.startswith(SCREENING_FLAG):
        for reason, code in REASON_CODES.items():
            if flag.endswith(": " + reason):
                return f"screening.{code}"
        return "screening.other"
    if flag.startswith("case ") and RUNNER_CLOCK_FINDING in flag:
        return "timing.runner_clock"
    if flag.startswith(RANKS_SCALED_FLAG):
        return RANKS_SCALED_CODE
    return "other"


def flag_codes(flags: list[str]) -> list[str]:
    """Each flag's code (flag_code), in the flags' order."""
    return [flag_code(flag) for flag in flags]


# A field that the report's JSON leaves out while it is None: a figure only some gradings
# make (a window's cost on a GPU's windows, a floor where peaks were measured), absent from
# the JSON where it was never made, as it always was.
SOMETIMES = {"omitted_when_none": True}


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {
            item.name: _plain(getattr(value, item.name))
            for item in fields(value)
            if not (item.metadata.get("omitted_when_none") and getattr(value, item.name) is None)
        }
    if isinstance(value, StrEnum):
        return str(value)
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def plain_dict(record: Any) -> dict[str, Any]:
    """A dataclass as JSON-safe dicts and lists, with each enum member in its fields as its
    plain string and each figure only some gradings make left out where it is None: what
    JSON, YAML or a log's repr shows of a report is what it always was."""
    out = _plain(record)
    assert isinstance(out, dict)
    return out


def tail(text: str, lines: int = 12) -> str:
    """The last lines of a traceback or an output: where its author should look."""
    return "\n".join(text.strip().splitlines()[-lines:])


class Stop(Exception):
    """Ends grading with a verdict (error, timeout, rejected) for a person to read."""

    def __init__(self, status: Status, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _finite(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


@dataclass(frozen=True)
class DevicePeaks:
    """A device's measured ceilings (grader/calibrate.py measures them), from which each
    case's physical floor and speed-of-light fraction come."""

    copy_bytes_per_s: float  # bytes read plus bytes written per second, device to device
    matmul_flops_per_s: float  # dense matrix product: bf16 on CUDA, float32 on the CPU
    matmul_dtype: str = ""
    # The last-level cache (L2 on a GPU): what a kernel writes can still sit there when it
    # ends, so that much of a case's bytes need not have reached memory.
    cache_bytes: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return plain_dict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> DevicePeaks:
        return cls(
            copy_bytes_per_s=float(raw["copy_bytes_per_s"]),
            matmul_flops_per_s=float(raw["matmul_flops_per_s"]),
            matmul_dtype=str(raw.get("matmul_dtype", "")),
            cache_bytes=float(raw.get("cache_bytes", 0.0)),
        )

    def floor_s(self, bytes_moved: float, flops: float) -> float:
        """The least time a case can take here: its bytes at full bandwidth or its flops at
        the full matrix rate, whichever is longer."""
        return max(bytes_moved / self.copy_bytes_per_s, flops / self.matmul_flops_per_s)

    def cached_floor_s(self, bytes_moved: float, flops: float) -> float:
        """The floor less what the cache can absorb: the bytes a kernel's writes may leave in
        the cache when it ends are not counted, up to the cache's size and half the bytes
        (a kernel still reads its inputs from memory after a flush)."""
        return self.floor_s(max(bytes_moved - self.cache_bytes, bytes_moved / 2), flops)


@dataclass
class CaseTime:
    """A case's timed calls (grader/timing.py's summarize), and the harness's own clock
    beside them (grader/clock.py). Figures a report from before they were recorded lacks
    read as None."""

    median_s: float  # the case's ranked figure
    mean_s: float | None = None
    min_s: float | None = None
    p10_s: float | None = None
    p25_s: float | None = None
    p75_s: float | None = None
    p90_s: float | None = None
    cv: float | None = None
    # The robust spread: one outlier sample moves the CV but not the interquartile range.
    iqr_over_median: float | None = None
    samples: int | None = None
    sm_clock_mhz: float | None = None
    # The harness's clock, outside test mode: "windows" (each call between its own events
    # on a GPU) or "batches" of calls on fresh inputs.
    harness_per_call_s: float | None = field(default=None, metadata=SOMETIMES)
    harness_floor_s: float | None = field(default=None, metadata=SOMETIMES)
    calls_per_batch: int | None = field(default=None, metadata=SOMETIMES)
    batches: int | None = field(default=None, metadata=SOMETIMES)
    harness_clock: str | None = field(default=None, metadata=SOMETIMES)
    # Windows: what a window's calibrated cost took off the fastest round.
    window_cost_s: float | None = field(default=None, metadata=SOMETIMES)
    # "runner", or "grader": on a GPU's windows their figure is median_s and the rounds its
    # distribution; with batches the floor raised the runner's samples.
    ranked_by: str | None = field(default=None, metadata=SOMETIMES)

    @property
    def spread(self) -> float | None:
        """The robust spread, IQR over median; for a report from before it was recorded,
        the coefficient of variation (which one slow sample can inflate)."""
        robust = _finite(self.iqr_over_median)
        return robust if robust is not None else _finite(self.cv)


@dataclass
class RunnerTime:
    """Where the grader's clock ranks: the runner's own figures as it reported them, for
    reading only."""

    median_s: float
    min_s: float | None = None
    cv: float | None = None
    iqr_over_median: float | None = None
    samples: int | None = None
    sm_clock_mhz: float | None = None

    @classmethod
    def of(cls, time: CaseTime) -> RunnerTime:
        """The case's figures of the same names."""
        return cls(**{figure.name: getattr(time, figure.name) for figure in fields(cls)})


@dataclass
class RankTime:
    """One rank's figures in a multi-rank case (grader/rankharness.py): the harness's clock
    around each of its timed calls, and what the rank said of itself, for reading only. A
    call's ranked figure is the slowest rank's, so each rank's own is shown beside it."""

    rank: int
    median_s: float
    min_s: float
    max_s: float
    samples: int
    # The rank's own clock (inside the sandbox, so never ranked): its median, if it sent one.
    runner_median_s: float | None = None


@dataclass
class Roofline:
    """The least a case's call must move and compute, and the floor that makes at the
    device's measured peaks."""

    bytes: float = 0.0
    flops: float = 0.0
    # True where the reference's own call was measured (the problem declares no roofline).
    measured: bool | None = field(default=None, metadata=SOMETIMES)
    floor_s: float | None = field(default=None, metadata=SOMETIMES)
    # floor_s over the case's median: 1 is the speed of light.
    sol_fraction: float | None = field(default=None, metadata=SOMETIMES)


@dataclass
class Profile:
    """Profile mode: what took the time in a case's profiled calls (grader/profiling.py),
    Nsight Compute's kernels where it ran (grader/nsight.py), else torch.profiler's
    operations and why there is no Nsight Compute profile. In a multi-rank case
    (grader/rankharness.py) each rank's calls have a profile of their own, naming the rank."""

    tool: str
    version: str | None = field(default=None, metadata=SOMETIMES)  # Nsight Compute's
    why_not_ncu: str | None = field(default=None, metadata=SOMETIMES)  # torch.profiler's
    calls: int = 1
    wall_us_per_call: float | None = field(default=None, metadata=SOMETIMES)
    # Nsight Compute: one row per kernel (grader/nsight.py's figures by name).
    kernels: list[dict[str, Any]] | None = field(default=None, metadata=SOMETIMES)
    # torch.profiler: one row per operation (grader/profiling.py's figures by name).
    rows: list[dict[str, Any]] | None = field(default=None, metadata=SOMETIMES)
    # The rank whose calls these are, in a multi-rank case's `rank_profiles`.
    rank: int | None = field(default=None, metadata=SOMETIMES)


@dataclass
class CaseResult:
    kind: CaseKind
    # The case's parameters as the problem states them (none in a report of old that
    # left them out).
    params: dict[str, Any] = field(default_factory=dict)
    status: Status = field(kw_only=True)
    message: str = ""
    # The case's timed calls; None when untimed.
    time: CaseTime | None = None
    # Where the grader's clock ranks: the runner's own figures.
    runner_time: RunnerTime | None = None
    roofline: Roofline | None = None
    profile: Profile | None = None
    # A multi-rank case's ranks, and the median over its calls of the gap between the
    # fastest and the slowest rank (the skew); absent for single-device cases.
    ranks: list[RankTime] | None = field(default=None, metadata=SOMETIMES)
    rank_skew_s: float | None = field(default=None, metadata=SOMETIMES)
    # Profile mode on a multi-rank case: one profile per rank, in rank order (`profile`
    # stays None: no rank's calls stand for the others').
    rank_profiles: list[Profile] | None = field(default=None, metadata=SOMETIMES)

    def to_dict(self) -> dict[str, Any]:
        return plain_dict(self)

    @property
    def profiles(self) -> list[Profile]:
        """Every profile of the case: its own, or one per rank; none outside profile mode."""
        return ([self.profile] if self.profile is not None else []) + (self.rank_profiles or [])

    @property
    def passed(self) -> bool:
        return self.status == Status.PASSED

    @property
    def sol_fraction(self) -> float | None:
        """The case's speed-of-light fraction: its floor over its median (1 is the fastest
        the device allows); None where it has none."""
        return _finite(self.roofline.sol_fraction) if self.roofline is not None else None


@dataclass
class ReportFile:
    """A file a grading left beside its report, as the report names it."""

    bytes: int  # its size


@dataclass(frozen=True)
class Fingerprint:
    """The machine a report was graded on, as far as its timings depend on it: the GPU (its
    name and UUID), the NVIDIA driver, CUDA, torch and Triton versions; on the CPU its model
    and torch's version. A figure the worker could not read is None. The SM clock range a
    grading saw is read from its cases (``Report.sm_clock_range``)."""

    device_name: str
    torch: str
    gpu_uuid: str | None = None
    driver: str | None = None
    cuda: str | None = None
    triton: str | None = None


@dataclass
class Report:
    status: Status
    problem: str
    mode: Mode
    device: str
    device_name: str = ""
    device_type: str = ""
    # The device's measured copy bandwidth and matrix rate the floors were computed from.
    device_peaks: DevicePeaks | None = None
    score: float | None = None
    # A GPU score most of whose cases time calls shorter than SHORT_CALL_S: such a call's
    # device time moves by a few percent from one process to the next, so the score cannot
    # rank finer than that (the message says so; leaderboards mark it).
    short_calls: bool = False
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
    # Compute report, PROFILE_FILE), with their size. Their bytes are in `contents` on the
    # side that made them, never in the JSON: a worker sends them on their own.
    files: dict[str, ReportFile] = field(default_factory=dict)
    # The worker's machine; reports recorded before it was kept have none.
    fingerprint: Fingerprint | None = field(default=None, metadata=SOMETIMES)

    def __post_init__(self) -> None:
        self.contents: dict[str, bytes] = {}

    def add_file(self, name: str, content: bytes) -> None:
        self.files[name] = ReportFile(bytes=len(content))
        self.contents[name] = content

    def to_dict(self) -> dict[str, Any]:
        out = plain_dict(self)
        out["files"] = dict(sorted(out["files"].items()))
        return out

    @property
    def sm_clock_range(self) -> tuple[float, float] | None:
        """The lowest and highest SM clock (MHz) its timed cases recorded, if any did."""
        clocks = [
            case.time.sm_clock_mhz
            for case in self.cases
            if case.time is not None and case.time.sm_clock_mhz is not None
        ]
        return (min(clocks), max(clocks)) if clocks else None

    @property
    def error_class(self) -> ErrorClass | None:
        return error_class(self.status, self.message, self.flags)

    @property
    def ranks_scaled(self) -> bool:
        """Whether some case ran on fewer ranks than it asks for, its worker host offering
        fewer (a `ranks.scaled` flag): leaderboards mark such a score."""
        return RANKS_SCALED_CODE in flag_codes(self.flags)

    @property
    def failed_cases(self) -> int:
        return sum(1 for case in self.cases if not case.passed)

    @property
    def sol_fraction(self) -> float | None:
        """Geometric mean of the benchmark cases' speed-of-light fractions (like the score,
        which is the geometric mean of their times)."""
        return sol_fraction(self.cases)

    @property
    def timed_on_warm_inputs(self) -> bool:
        """Whether the runner timed one input set over and over with nothing flushed between
        the calls: benchmark mode on a CPU worker (a GPU's L2 is flushed before each call,
        and leaderboard mode times each call on fresh inputs). Inputs that fit the CPU's
        caches then come from there, so such a run can beat memory bandwidth and leaderboard
        mode's times."""
        return self.mode == Mode.BENCHMARK and self.device == "cpu"


def sol_fraction(cases: list[CaseResult]) -> float | None:
    """Geometric mean of the benchmark cases' speed-of-light fractions."""
    fractions = [
        fraction
        for case in cases
        if case.kind != CaseKind.TEST
        and (fraction := case.sol_fraction) is not None
        and fraction > 0
    ]
    if not fractions:
        return None
    return math.exp(sum(math.log(f) for f in fractions) / len(fractions))


class ValidationStatus(StrEnum):
    """A validation's verdict on this worker (running until it has one)."""

    RUNNING = "running"
    PASSED = "passed"  # no check found a problem
    FAILED = "failed"
    # This worker's device is not one the problem can be graded on; the message says what
    # it needs.
    NEEDS = "needs"


@dataclass
class Check:
    """One step of a validation. `expected` is what the step should do ("pass" or "fail");
    `outcome` is "ok", "problem" (the step contradicts its expectation) or "skipped"."""

    name: str
    kind: str  # "reference" | "solution"
    expected: str
    outcome: str
    status: Status | Literal[""] = ""  # the grading's status, where a grading ran
    message: str = ""
    wall_s: float = 0.0


@dataclass
class ValidationReport:
    """A problem version's validation on one worker (grader/validate.py)."""

    status: ValidationStatus
    # Empty in a report of old that named neither, and in the service's own where no device
    # type could validate the problem.
    problem: str = ""
    device: str = ""
    device_type: str = ""
    device_name: str = ""
    message: str = ""
    checks: list[Check] = field(default_factory=list)
    wall_s: float = 0.0
    # Test mode's short limit on this device type, in seconds, under which the example
    # solutions were graded and which the server keeps with the problem's version: task.yml's
    # test_cases_timeout where it sets one (from "task.yml"), else derived from the seconds
    # the reference's own test cases took, graded in test mode here (from "reference",
    # grader.problem.derived_test_cases_timeout). None where the reference did not pass test mode.
    test_cases_timeout_s: float | None = None
    test_cases_timeout_from: str = ""
    reference_test_cases_s: float | None = None
    # Each benchmark case's physical floor as this version defines it, kept with the version
    # for organizers to read: {"case", "bytes", "flops", "declared", "floor_s"}. Bytes and
    # flops are task.yml's roofline where it declares one (declared: true), else what the
    # reference's own call read, wrote and computed (grader/expected.py's measured_roofline,
    # as each grading on a GPU measures it again); floor_s at this worker's measured peaks,
    # None without them.
    rooflines: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return plain_dict(self)


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
