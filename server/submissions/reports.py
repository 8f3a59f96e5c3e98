"""The door a grading report comes in by: what a worker sends and what the database keeps
are validated here, once, into the grader's own `Report` (grader/report.py); past this
module the service reads a report by its attributes only.

A stored report of any age reads: keys it no longer has are ignored, figures it did not
yet record read as None, and a failure report of old that named no problem or mode (or an
empty one) is told them by its submission's row."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import TypeAdapter, ValidationError

from grader.report import Mode, Report, Status
from server.models import Submission, SubmissionVerdict

log = logging.getLogger(__name__)

REPORT: TypeAdapter[Report] = TypeAdapter(Report)


def parse(raw: object) -> Report:
    """A report as a worker sent it; raises pydantic's ValidationError when it is none."""
    return REPORT.validate_python(raw)


def stored(submission: Submission) -> Report | None:
    """A submission's recorded report, or None before it has one."""
    return stored_for(submission, submission.report)


def stored_earlier(submission: Submission, earlier: SubmissionVerdict) -> Report | None:
    """The report of one of a submission's earlier verdicts, or None if it had none."""
    return stored_for(submission, earlier.report)


def stored_for(submission: Submission, raw: dict[str, Any] | None) -> Report | None:
    """``raw``, a report stored for ``submission`` (now or in its history), read back."""
    if raw is None:
        return None
    return from_storage(
        raw, problem=submission.problem.name, mode=Mode(submission.mode), row_id=submission.id
    )


def from_storage(kept: Any, *, problem: str, mode: Mode, row_id: int) -> Report:
    """A report as the database keeps it, of any age (see the module's docstring). One
    that no longer validates (it never should) reads as an error with no cases, and the
    log says why."""
    named = {"problem": problem, "mode": mode}
    if isinstance(kept, dict):
        named = {key: kept.get(key) or value for key, value in named.items()}
    try:
        return REPORT.validate_python({"device": "", **kept, **named})
    except (ValidationError, TypeError) as exc:
        log.warning("submission %s's stored report does not read: %s", row_id, exc)
        return Report(
            status=Status.ERROR,
            problem=problem,
            mode=mode,
            device="",
            message="this submission's stored report could not be read",
        )
