"""Request and response bodies of the submissions API."""

from __future__ import annotations

from dataclasses import asdict, replace
from datetime import datetime

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_serializer,
    field_validator,
)

from grader.report import (
    TERMINAL_STATUSES,
    CaseResult,
    DevicePeaks,
    ErrorClass,
    Mode,
    Progress,
    ProgressPhase,
    Report,
    ReportFile,
    Status,
)
from server.leaderboards.schemas import StandingOut
from server.problems.schemas import SpeedupOut

# What a worker's progress may say: a worker host is trusted less than the service.
MAX_CASES = 10_000
LABEL_MAX = 200


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


class AdminSubmissionSummary(SubmissionSummary):
    """One of everyone's submissions, as organizers list them."""

    user: str
    hidden: bool
    hacked: bool
    flags: list[str]


class AdminSubmissionList(BaseModel):
    submissions: list[AdminSubmissionSummary] = Field(description="newest first")
    next_before: int | None = Field(
        description="pass as `before` for the next page; null on the last one"
    )


class SubmissionList(BaseModel):
    submissions: list[SubmissionSummary] = Field(description="newest first")
    next_before: int | None = Field(
        description="pass as `before` for the next page; null on the last one"
    )


class FingerprintOut(BaseModel):
    device_name: str
    gpu_uuid: str | None
    driver: str | None
    cuda: str | None
    torch: str
    triton: str | None
    sm_clock_mhz: tuple[float, float] | None = Field(
        description="the lowest and highest SM clock its timed cases recorded"
    )

    @classmethod
    def of(cls, report: Report | None) -> FingerprintOut | None:
        """The report's fingerprint, field for field, and the SM clock range of its cases."""
        if report is None or report.fingerprint is None:
            return None
        return cls(**asdict(report.fingerprint), sm_clock_mhz=report.sm_clock_range)


class EarlierVerdict(BaseModel):
    """A verdict the submission had before an organizer's re-run graded it again."""

    status: str
    score: float | None
    message: str = Field(description="as the current verdict's message is shown to you")
    problem_version: int
    started_at: datetime | None
    finished_at: datetime | None = Field(description="when that verdict was reached")
    replaced_at: datetime = Field(description="when the re-run replaced it")


class ProgressOut(BaseModel):
    """Where a running submission's grading stands, as its worker last said (about once a
    second while it moves)."""

    phase: ProgressPhase = Field(
        description="load: the runner starting and importing the code, compilation included; "
        "test or benchmark: running that kind of case; profile: collecting Nsight Compute's "
        "report after the cases"
    )
    case: int = Field(ge=0, description="the case being run, from 1; 0 outside the cases")
    cases: int = Field(ge=0, description="how many cases this mode runs; 0 outside the cases")
    label: str | None = Field(
        description="the case's parameters (`size=1024 seed=54352`); null outside the cases, "
        "and in leaderboard mode for everyone but organizers (its author reads the counts)"
    )

    @classmethod
    def of(cls, progress: Progress | None) -> ProgressOut | None:
        """`progress` as shown (server.submissions.disclosure.progress_shown): a label
        left out is null."""
        if progress is None:
            return None
        return cls(
            phase=progress.phase,
            case=progress.case,
            cases=progress.cases,
            label=progress.label or None,
        )


class SubmissionOut(SubmissionSummary):
    """A submission and its report (the report's fields are filled once it is graded): its
    summary's fields, then these."""

    problem_version: int
    user: str
    message: str
    flags: list[str]
    error_class: ErrorClass | None = Field(
        default=None,
        description="why it did not pass, for programs (a trainer's reward): compile, runtime, "
        "wrong, timeout, rejected or infrastructure (never the submission's fault: grading "
        "it again may pass); null while queued or running and when it passed",
    )
    flag_codes: list[str] = Field(
        default_factory=list,
        description="each of `flags`' stable code, in the same order (docs/trainers.md)",
    )
    hidden: bool = Field(description="an organizer hid it: it is off the leaderboard")
    hacked: bool = Field(description="an organizer marked it as hacked: it is off the leaderboard")
    hidden_reason: str | None = Field(
        default=None, description="why an organizer hid it (null: not hidden, or no reason kept)"
    )
    hacked_reason: str | None = Field(
        default=None,
        description="why an organizer marked it hacked (null: not hacked, or no reason kept)",
    )
    history: list[EarlierVerdict] = Field(
        default_factory=list,
        description="its earlier verdicts, oldest first: each one an organizer's re-run "
        "replaced (empty if it was never re-run)",
    )
    cases: list[CaseResult]
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
    fingerprint: FingerprintOut | None = Field(
        default=None,
        description="the worker's machine (GPU name and UUID, driver, CUDA, torch, Triton; on "
        "the CPU its model and torch) and the SM clock range its timed cases saw; none for "
        "reports recorded before it was kept",
    )
    speedup: SpeedupOut = Field(
        default_factory=SpeedupOut,
        description="a ranked (leaderboard-mode) score's speedup over the problem's baselines "
        "on this GPU type: the baseline's score over this one's, above 1 is faster; nulls for "
        "other modes, runs with no score, and where no baseline is timed yet",
    )
    standing: StandingOut | None = Field(
        default=None,
        description="a ranked (leaderboard-mode, passed) run's place on its problem's "
        "leaderboard for its GPU type: your rank, your best before it, the leader; null for "
        "other runs and where the leaderboard is not shown to you",
    )
    device_peaks: DevicePeaks | None = Field(
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
    code: str | None = Field(
        description="null where the reader may not read the code: another competitor's run "
        "whose code the organizers have not published"
    )
    started_at: datetime | None
    progress: ProgressOut | None = Field(
        default=None,
        description="while running: the phase, the case being run of how many, and its "
        "parameters; null while queued and once it has a verdict",
    )

    @field_serializer("cases")
    def _as_the_grader_writes_them(self, cases: list[CaseResult]):
        """Each case as its report's JSON has it (CaseResult.to_dict): a figure only some
        gradings make is left out where it was not made. Unannotated, so the schema keeps
        CaseResult's."""
        return [case.to_dict() for case in cases]


class GradingResult(BaseModel):
    """What the grade job hands to the results step."""

    submission_id: int
    worker: str
    report: Report

    @field_validator("report")
    @classmethod
    def _terminal(cls, report: Report) -> Report:
        if report.status not in TERMINAL_STATUSES:
            raise ValueError(f"a report ends with a verdict, not {report.status.value!r}")
        return report


class GradingProgress(BaseModel):
    """What the grade job sends the results step while it grades: where it stands."""

    submission_id: int
    worker: str = ""
    progress: Progress

    @field_validator("progress")
    @classmethod
    def _bounded(cls, progress: Progress) -> Progress:
        if not 0 <= progress.case <= progress.cases <= MAX_CASES:
            raise ValueError(f"case {progress.case} of {progress.cases} cases")
        return replace(progress, label=progress.label[:LABEL_MAX])


class GradingFile(BaseModel):
    """A file of a grading that the grade job hands to the results step before its report
    (grader.report.Report.files), its bytes in base64."""

    submission_id: int
    worker: str = ""
    name: str
    content_b64: str


def why_invalid(exc: ValidationError) -> str:
    """What is wrong with a worker's result, in a line for the submission's author."""
    problems = "; ".join(
        f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
        for error in exc.errors()[:5]
    )
    return f"the worker returned an invalid report ({problems})"


class Moderation(BaseModel):
    """An organizer's moderation of a submission."""

    action: str = Field(description="'hide', 'unhide', 'hack', 'unhack' or 'rerun'")
    reason: str | None = Field(
        default=None,
        description="why; required to hide and to mark hacked (its author reads it on the "
        "submission), at most 1000 characters; kept in the audit log",
    )
