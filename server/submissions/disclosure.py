"""What of a submission's report a viewer may read. A ranked (leaderboard-mode) run tells
its author only the verdict, the score and the per-case statistics: its stdout, stderr and
error details could carry the ranked inputs or the expected outputs, so organizers keep
them and everyone else is told they are withheld."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grader.report import Mode, Status
from server.models import Submission, User

WITHHELD = (
    "withheld in leaderboard mode; submit the same code in test or benchmark mode to see "
    "the details"
)
# Verdicts whose message the harness writes from its own figures (a score, a time limit,
# timings it rejected), with nothing the submission printed, raised or returned.
MESSAGE_KEPT = frozenset(
    {Status.PASSED, Status.TIMEOUT, Status.REJECTED, Status.QUEUED, Status.RUNNING}
)


@dataclass(frozen=True)
class DisclosedReport:
    message: str
    cases: list[dict[str, Any]]
    stdout: str
    stderr: str
    # True when the viewer is shown less than an organizer sees.
    withheld: bool


def is_withheld_from(viewer: User | None, submission: Submission) -> bool:
    """A ranked run's details are the organizers' alone."""
    return submission.mode == Mode.LEADERBOARD and not (viewer is not None and viewer.is_admin)


def disclose(viewer: User | None, submission: Submission) -> DisclosedReport:
    report = submission.report or {}
    cases = [dict(case) for case in report.get("cases", [])]
    if not is_withheld_from(viewer, submission):
        return DisclosedReport(
            message=submission.message,
            cases=cases,
            stdout=str(report.get("stdout", "")),
            stderr=str(report.get("stderr", "")),
            withheld=False,
        )
    for case in cases:
        if case.get("message"):
            case["message"] = WITHHELD
    return DisclosedReport(
        message=ranked_message(submission, cases),
        cases=cases,
        stdout="",
        stderr="",
        withheld=True,
    )


def ranked_message(submission: Submission, cases: list[dict[str, Any]]) -> str:
    if submission.status in MESSAGE_KEPT:
        return submission.message
    if submission.status == Status.FAILED:
        failed = sum(1 for case in cases if case.get("status") != Status.PASSED)
        return f"{failed} of {len(cases)} ranked cases failed; what they returned is {WITHHELD}"
    return f"the submission stopped with an error in its ranked run; the error is {WITHHELD}"
