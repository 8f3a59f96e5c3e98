"""Request and response bodies of the submissions API."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from grader.report import TERMINAL_STATUSES, Mode, Status


class SubmissionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    problem: str = Field(min_length=1, max_length=100, examples=["vectoradd"])
    code: str = Field(
        description="the submission: a Python file defining custom_kernel",
        # Said in the schema; the service's own check answers empty code in words.
        json_schema_extra={"minLength": 1, "pattern": r"\S"},
    )
    mode: Mode = Mode.TEST
    gpu: str | None = Field(
        default=None, max_length=32, description="device type; default: the problem's first"
    )


class SubmissionAccepted(BaseModel):
    id: int
    status: Status


class SubmissionSummary(BaseModel):
    """One of your submissions in a list: what it was and how it ended."""

    id: int
    problem: str
    mode: Mode
    gpu: str
    status: Status
    score: float | None = Field(description="seconds: geometric mean of the cases' medians")
    created_at: datetime
    finished_at: datetime | None


class SubmissionList(BaseModel):
    submissions: list[SubmissionSummary] = Field(description="newest first")
    next_before: int | None = Field(
        description="pass as `before` for the next page; null on the last one"
    )


class ReportFile(BaseModel):
    """A file a grading left beside its report, as the report names it."""

    bytes: int = Field(ge=0, description="its size")


class SubmissionOut(BaseModel):
    """A submission and its report (the report's fields are filled once it is graded)."""

    id: int
    problem: str
    problem_version: int
    user: str
    mode: Mode
    gpu: str
    status: Status
    score: float | None = Field(description="seconds: geometric mean of the cases' medians")
    message: str
    flags: list[str]
    hidden: bool = Field(description="an organizer hid it: it is off the leaderboard")
    hacked: bool = Field(description="an organizer marked it as hacked: it is off the leaderboard")
    cases: list[dict[str, Any]]
    queue_position: int | None = Field(
        description="while queued: submissions that start before this one on its device type "
        "(test mode goes first, then users take turns)"
    )
    expected_wait_s: float | None = Field(
        description="while queued: the expected seconds until its grading starts, from how "
        "long recent gradings on its device type took"
    )
    worker: str | None
    phases: dict[str, float] = Field(
        description="where the time went, in seconds: queue_wait (from submitting to a worker "
        "starting it), then the grading's own phases (runner_start, load: the import with any "
        "compilation, inputs, reference, first_calls, checks, timed_calls and "
        "pauses_in_timed_calls, harness_clock, setup, teardown)"
    )
    device_name: str | None
    device_peaks: dict[str, Any] | None = Field(
        description="the worker's measured copy bandwidth and matrix rate behind each "
        "case's speed-of-light fraction"
    )
    files: dict[str, ReportFile] = Field(
        description="files the grading left beside its report, by name: profile mode's "
        "Nsight Compute report, `profile.ncu-rep`, downloaded from "
        "`/api/v1/submissions/{id}/files/{name}`; empty when there is none"
    )
    stdout: str
    stderr: str
    withheld: bool = Field(
        description="a leaderboard-mode run: its stdout, stderr and error details are kept "
        "for organizers and left out here (test and benchmark mode show them)"
    )
    code_sha256: str
    code: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class CaseReport(BaseModel):
    """One case of a grading, as the grader wrote it (grader.report.CaseResult)."""

    model_config = ConfigDict(extra="allow")

    kind: str
    params: dict[str, Any] = Field(default_factory=dict)
    status: Status
    message: str = ""
    time: dict[str, Any] | None = Field(
        default=None,
        description="the case's timed calls: median_s (the case's ranked figure), mean_s, "
        "min_s, p10_s..p90_s, cv, iqr_over_median, samples, sm_clock_mhz; and the grader's "
        "own clock (harness_clock: 'windows', each call between its own events on a GPU, or "
        "'batches' of calls on fresh inputs): harness_per_call_s, harness_floor_s, "
        "calls_per_batch, batches, window_cost_s (windows: the calibrated cost of a window "
        "subtracted from the fastest round's mean), ranked_by ('runner', or 'grader': on a "
        "GPU's windows their figure is median_s; with batches the floor raised the samples)",
    )
    runner_time: dict[str, Any] | None = Field(
        default=None,
        description="where the grader's clock ranks: the figures the "
        "submission's own process reported (median_s, min_s, cv, iqr_over_median, samples, "
        "sm_clock_mhz)",
    )
    roofline: dict[str, Any] | None = None
    # Profile mode: the case's profiled calls (grader.profiling).
    profile: dict[str, Any] | None = None


class GradingReport(BaseModel):
    """A grading's report as a worker sends it (grader.report.Report): the one shape from
    the grader to the database and the API."""

    model_config = ConfigDict(extra="allow")

    status: Status
    problem: str = ""
    mode: str = ""
    device: str = ""
    device_name: str = ""
    device_type: str = ""
    device_peaks: dict[str, Any] | None = None
    score: float | None = None
    message: str = ""
    flags: list[str] = Field(default_factory=list)
    cases: list[CaseReport] = Field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0
    # Seconds per phase of the grading (grader.report.PhaseClock).
    phases: dict[str, float] = Field(default_factory=dict)
    # The files the worker sends on their own before the report (GradingFile), by name.
    files: dict[str, ReportFile] = Field(default_factory=dict)

    @field_validator("status")
    @classmethod
    def _terminal(cls, status: Status) -> Status:
        if status not in TERMINAL_STATUSES:
            raise ValueError(f"a report ends with a verdict, not {status.value!r}")
        return status


class GradingResult(BaseModel):
    """What the grade job hands to the results step."""

    submission_id: int
    worker: str
    report: GradingReport


class GradingFile(BaseModel):
    """A file of a grading that the grade job hands to the results step before its report
    (grader.report.Report.files), its bytes in base64."""

    submission_id: int
    worker: str = ""
    name: str
    content_b64: str


def invalid_report(result: object, exc: ValidationError) -> GradingResult:
    """An error verdict for a result whose report does not parse; raises again when even
    its submission cannot be told."""
    if not isinstance(result, dict) or not isinstance(result.get("submission_id"), int):
        raise exc
    problems = "; ".join(
        f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
        for error in exc.errors()[:5]
    )
    return GradingResult(
        submission_id=result["submission_id"],
        worker=str(result.get("worker", "")),
        report=GradingReport(
            status=Status.ERROR,
            message=f"the worker returned an invalid report ({problems})",
            flags=["invalid_report"],
        ),
    )
