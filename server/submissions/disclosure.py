"""What of a submission's report a viewer may read. A ranked (leaderboard-mode) run tells
its author only the verdict, the score and the per-case statistics: its stdout, stderr and
error details could carry the ranked inputs or the expected outputs, so organizers keep
them and everyone else is told they are withheld. A viewer who may not read the code (not
its author, not an organizer, the code not published) reads no more of it in the report:
no logs, no error text or traceback (they quote source lines), no screening findings, no
flags; the verdict, the per-case statistics and the harness's own figures stay. While a
ranked run grades, its progress says the phase and how many cases are done, never which
case is being run."""

from __future__ import annotations

from dataclasses import dataclass, replace

from grader.report import CaseResult, Mode, Progress, Report, ReportFile, Status
from server.models import Submission, SubmissionVerdict, User

WITHHELD = (
    "withheld in leaderboard mode; submit the same code in test or benchmark mode to see "
    "the details"
)
# Verdicts whose message the harness writes from its own figures (a score, a time limit,
# timings it rejected), with nothing the submission printed, raised or returned.
MESSAGE_KEPT = frozenset(
    {Status.PASSED, Status.TIMEOUT, Status.REJECTED, Status.QUEUED, Status.RUNNING}
)


PRIVATE = "its details are its author's until the code is published"
# Verdicts whose message holds no source: the harness's own figures and limits.
MESSAGE_WITHOUT_SOURCE = frozenset({Status.PASSED, Status.TIMEOUT, Status.QUEUED, Status.RUNNING})
SCREENING = "static screening rejected"


@dataclass(frozen=True)
class DisclosedReport:
    message: str
    cases: list[CaseResult]
    stdout: str
    stderr: str
    # True when the viewer is shown less than an organizer sees.
    withheld: bool
    flags: list[str]
    # The files the report names (server/submissions/files.py), by name, with their size.
    files: dict[str, ReportFile]


def is_withheld_from(viewer: User | None, submission: Submission) -> bool:
    """A ranked run's details are the organizers' alone."""
    return submission.mode == Mode.LEADERBOARD and not (viewer is not None and viewer.is_admin)


def progress_shown(viewer: User | None, submission: Submission, progress: Progress) -> Progress:
    """A running grading's progress as `viewer` may read it: a ranked run's without the
    label of the case being run."""
    if is_withheld_from(viewer, submission):
        return replace(progress, label="")
    return progress


def disclose(
    viewer: User | None,
    submission: Submission,
    report: Report | None,
    *,
    code_visible: bool = True,
) -> DisclosedReport:
    """The report (`reports.stored(submission)`) as `viewer` may read it; `code_visible`:
    whether they may read the code."""
    report = report or Report(
        status=Status(submission.status),
        problem=submission.problem.name,
        mode=Mode(submission.mode),
        device="",
    )
    cases = list(report.cases)
    if not code_visible:
        return without_source(submission, report)
    files = dict(report.files)
    if not is_withheld_from(viewer, submission):
        return DisclosedReport(
            message=submission.message,
            cases=cases,
            stdout=report.stdout,
            stderr=report.stderr,
            withheld=False,
            flags=list(submission.flags),
            files=files,
        )
    cases = [replace(case, message=WITHHELD) if case.message else case for case in cases]
    return DisclosedReport(
        message=ranked_message(submission, report),
        cases=cases,
        stdout="",
        stderr="",
        withheld=True,
        flags=list(submission.flags),
        files=files,
    )


def without_source(submission: Submission, report: Report) -> DisclosedReport:
    """For someone who may not read the code: the verdict and the statistics, no text the
    submission's source or output could be read from."""
    cases = [
        replace(
            case,
            message=PRIVATE if case.message and not case.passed else case.message,
            # A profile (and its Nsight Compute report) names the submission's own
            # functions and kernels; so does each rank's.
            profile=None,
            rank_profiles=None,
        )
        for case in report.cases
    ]
    message = submission.message
    screened = submission.status == Status.REJECTED and message.startswith(SCREENING)
    if screened or submission.status not in MESSAGE_WITHOUT_SOURCE | {Status.REJECTED}:
        failed, graded = report.failed_cases, len(report.cases)
        message = {
            Status.FAILED: f"{failed} of {graded} cases failed; {PRIVATE}",
            Status.REJECTED: f"rejected by static screening; {PRIVATE}",
        }.get(Status(submission.status), f"the submission stopped with an error; {PRIVATE}")
    return DisclosedReport(
        message=message, cases=cases, stdout="", stderr="", withheld=True, flags=[], files={}
    )


def ranked_message(submission: Submission, report: Report) -> str:
    if submission.status in MESSAGE_KEPT:
        return submission.message
    if submission.status == Status.FAILED:
        failed, graded = report.failed_cases, len(report.cases)
        return f"{failed} of {graded} ranked cases failed; what they returned is {WITHHELD}"
    return f"the submission stopped with an error in its ranked run; the error is {WITHHELD}"


def disclose_earlier(
    viewer: User | None,
    submission: Submission,
    earlier: SubmissionVerdict,
    report: Report | None,
    *,
    code_visible: bool = True,
) -> str:
    """An earlier verdict's message (its ``report``, parsed) as ``viewer`` may read it: the
    same rules as the current one's, applied to that verdict."""
    as_it_was = Submission(
        id=submission.id,
        mode=submission.mode,
        user_id=submission.user_id,
        status=earlier.status,
        message=earlier.message,
        flags=list(earlier.flags),
    )
    as_it_was.problem = submission.problem
    return disclose(viewer, as_it_was, report, code_visible=code_visible).message
