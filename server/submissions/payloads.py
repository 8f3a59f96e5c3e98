"""What a grading worker is sent for a submission, built when its job is sent: the
problem's files and the code to grade, the limits, the secret seed of a ranked run, and the
precision its cases are timed at (thorough for an item of a thorough batch). The
submissions service registers it with the outbox (`MESSAGES`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, object_session, selectinload

from grader.precision import Precision
from grader.report import TERMINAL_STATUSES, Mode
from server.batches import repository as batches
from server.batches.schemas import Tier
from server.models import Submission
from server.outbox import jobs
from server.problems.loaded import loaded, problem_files
from server.settings import Settings


def preload(session: Session, submission_ids: list[int]) -> Sequence[Submission]:
    """Read these submissions, and their problems once each (a problem's files are most of
    what is read), so that `grading` finds them in the session. The session holds what it
    read only weakly: the caller keeps the list returned while it calls `grading`."""
    if not submission_ids:
        return []
    return session.scalars(
        select(Submission)
        .options(selectinload(Submission.problem))
        .where(Submission.id.in_(submission_ids))
    ).all()


def grading(session: Session, submission_id: int, settings: Settings) -> list[Any] | None:
    """The grade job's arguments, or None when the submission no longer needs grading."""
    submission = session.get(Submission, submission_id)
    if submission is None or submission.status in TERMINAL_STATUSES:
        return None
    if submission.problem_version != submission.problem.version:
        # A new version went live while it waited: it is graded on the version the job
        # carries, and its record says so (a result is never filed under a version whose
        # files did not grade it).
        submission.problem_version = submission.problem.version
    return [submission.id, grading_payload(submission, settings)]


def precision_of(submission: Submission) -> Precision:
    """How finely its cases are timed: as its batch's tier says, standard when sent alone."""
    if submission.batch_id is None:
        return Precision.STANDARD
    session = object_session(submission)
    assert session is not None, "a batch item's precision is read from its session"
    batch = batches.get_batch(session, submission.batch_id)
    return Tier(batch.tier).precision if batch is not None else Precision.STANDARD


def grading_payload(submission: Submission, settings: Settings) -> dict[str, Any]:
    problem = submission.problem
    precision = precision_of(submission)
    limit = loaded(problem).timeout_for(submission.mode, precision)
    return {
        "problem": problem_files(problem),
        "code": submission.code,
        "mode": submission.mode,
        "secret_seed": problem.secret_seed if submission.mode == Mode.LEADERBOARD else None,
        "timeout_s": min(limit, settings.grading_timeout_s),
        "precision": precision.value,
        # Test mode's short limit as the device type's validation derived it, if it did.
        "test_cases_timeout_s": (problem.test_cases_timeouts or {}).get(submission.gpu_type),
    }


def grading_time_limit_s(session: Session, submission_id: int, settings: Settings) -> float:
    """How long a worker may take over a grading once it has it."""
    submission = session.get(Submission, submission_id)
    if submission is None:
        return settings.grading_timeout_s
    limit = loaded(submission.problem).timeout_for(submission.mode, precision_of(submission))
    return min(limit, settings.grading_timeout_s)


MESSAGES = jobs.Messages(args=grading, time_limit_s=grading_time_limit_s, preload=preload)
