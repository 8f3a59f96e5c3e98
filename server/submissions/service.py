"""Accepting a submission, sending it to its device's queue, and recording its report once."""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol, TypeVar

from pydantic import TypeAdapter, ValidationError
from sqlalchemy.orm import Session

from grader.report import (
    INVALID_REPORT,
    TERMINAL_STATUSES,
    ErrorClass,
    Mode,
    Progress,
    Report,
    Status,
    error_class,
)
from server.audit import service as audit
from server.batches import callbacks
from server.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    PayloadTooLarge,
    TooManyRequests,
)
from server.leaderboards import upkeep
from server.models import Problem, Submission, SubmissionVerdict, User, utcnow
from server.outbox import jobs, places
from server.problems import baselines, loaded
from server.problems import repository as problem_repository
from server.problems import service as problems
from server.settings import Settings
from server.submissions import payloads, repository
from server.users import service as users
from server.users import verification

log = logging.getLogger(__name__)

MODES = tuple(Mode)
TERMINAL = TERMINAL_STATUSES
PROGRESS: TypeAdapter[Progress] = TypeAdapter(Progress)
# The gradings this service asks for are sent as payloads.grading builds them.
jobs.register(jobs.Job.GRADE, payloads.MESSAGES)


def validate_code(code: str, settings: Settings) -> str:
    if len(code.encode()) > settings.max_code_bytes:
        raise PayloadTooLarge(f"the code is over {settings.max_code_bytes} bytes")
    if not code.strip():
        raise BadRequest("the code is empty")
    if "\x00" in code:
        raise BadRequest("the code contains NUL characters; submit a Python source file")
    return code


def decode_code(raw: bytes, settings: Settings) -> str:
    if len(raw) > settings.max_code_bytes:
        raise PayloadTooLarge(f"the file is over {settings.max_code_bytes} bytes")
    try:
        return validate_code(raw.decode("utf-8"), settings)
    except UnicodeDecodeError as exc:
        raise BadRequest(f"the file is not UTF-8 text (byte {exc.start} is invalid)") from exc


class Requested(Protocol):
    """A row made by a request that may be retried under an Idempotency-Key."""

    @property
    def request_sha256(self) -> str | None: ...


RequestedRow = TypeVar("RequestedRow", bound=Requested)


def replay_of(earlier: RequestedRow | None, digest: str, what: str) -> RequestedRow | None:
    """The ``what`` an earlier request under the same Idempotency-Key made, or None; a
    different request (by ``digest``) under that key is a BadRequest."""
    if earlier is not None and earlier.request_sha256 != digest:
        raise BadRequest(
            f"this Idempotency-Key was used for a different {what}; use a new key for a new {what}"
        )
    return earlier


def create_submission(
    session: Session,
    settings: Settings,
    user: User,
    *,
    problem_name: str,
    code: str,
    mode: str,
    gpu: str | None,
    idempotency_key: str | None = None,
    batch_id: int | None = None,
    batch_key: str | None = None,
) -> tuple[Submission, bool]:
    """Accept a submission and ask for its grading, in the caller's transaction; returns it
    and whether it was made earlier. With an ``idempotency_key``, a request this user
    already made under that key returns the submission it made instead of a new one (a
    client's retry after a timeout or a 5xx). An item of a batch (``batch_id``, with the
    client's ``batch_key``) is held by the batch's cap on items in flight, not by the
    submission rate limit."""
    request_sha256 = request_digest(problem_name, code, mode, gpu)
    if idempotency_key is not None:
        # Held until the commit: a retry racing the first request waits for it.
        repository.lock_user(session, user.id)
        earlier = replay_of(
            repository.get_by_idempotency_key(session, user.id, idempotency_key),
            request_sha256,
            "submission",
        )
        if earlier is not None:
            return earlier, True
    if user.is_banned:
        raise Forbidden(users.banned_message(session, user))
    verification.refuse_unverified(user)
    if mode not in MODES:
        raise BadRequest(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    problem = problems.get_problem_to_submit(session, problem_name, user)
    closed = leaderboard_closed(session, problem) if mode == Mode.LEADERBOARD else None
    if closed is not None:
        raise Conflict(closed)
    gpu_type = problems.choose_gpu_type(problem, settings, gpu)
    validate_code(code, settings)
    if batch_id is None:
        check_rate_limit(session, settings, user, problem)
    submission = Submission(
        user_id=user.id,
        problem_id=problem.id,
        problem_version=problem.version,
        code=code,
        code_sha256=hashlib.sha256(code.encode()).hexdigest(),
        mode=mode,
        gpu_type=gpu_type,
        status=Status.QUEUED,
        flags=[],
        idempotency_key=idempotency_key,
        request_sha256=request_sha256,
        batch_id=batch_id,
        batch_key=batch_key,
    )
    session.add(submission)
    session.flush()
    jobs.enqueue(
        session,
        jobs.Job.GRADE,
        submission.id,
        queue=gpu_type,
        user_id=user.id,
        mode=mode,
        gpus=loaded.gpus_for(problem, gpu_type),
    )
    return submission, False


def leaderboard_closed(session: Session, problem: Problem) -> str | None:
    """Why the problem takes no leaderboard-mode run now: its competition has not opened
    yet, or has closed (its deadline passed); None while it takes them."""
    opening = problems.opening_of(session, problem)
    if opening is not None and utcnow() < opening:
        return (
            f"the competition on {problem.name!r} opens at {opening:%Y-%m-%d %H:%M} "
            "UTC; until then admins may make test and benchmark runs"
        )
    if problems.deadline_passed(problem):
        return (
            f"the competition on {problem.name!r} closed at {problem.deadline:%Y-%m-%d %H:%M} "
            "UTC; test and benchmark runs are still open"
        )
    return None


def request_digest(problem_name: str, code: str, mode: str, gpu: str | None) -> str:
    """What a retry under the same Idempotency-Key must ask for again."""
    fields = json.dumps([problem_name, mode, gpu, code], ensure_ascii=False)
    return hashlib.sha256(fields.encode()).hexdigest()


def check_rate_limit(session: Session, settings: Settings, user: User, problem: Problem) -> None:
    """At most ``submission_rate_limit`` submissions per user and problem in any window of
    ``submission_rate_window_s``; admins are exempt. Over it, ``TooManyRequests`` says how long
    until the oldest submission counted leaves the window."""
    limit = settings.submission_rate_limit
    if user.is_admin or limit <= 0:
        return
    repository.lock_user(session, user.id)
    window = timedelta(seconds=settings.submission_rate_window_s)
    now = utcnow()
    recent = repository.recent_submission_times(
        session, user.id, problem.id, since=now - window, limit=limit
    )
    if len(recent) < limit:
        return
    wait = max(1, math.ceil((recent[-1] + window - now).total_seconds()))
    raise TooManyRequests(
        f"at most {limit} submissions to {problem.name!r} per "
        f"{settings.submission_rate_window_s} s; try again in {wait} s",
        retry_after_s=wait,
    )


def sees_everything_of(viewer: User | None, submission: Submission) -> bool:
    """A submission's author and the organizers (admins) see all of it."""
    return viewer is not None and (viewer.is_admin or viewer.id == submission.user_id)


def can_see(session: Session, viewer: User | None, submission: Submission) -> bool:
    """Results of a submission are public unless an organizer hid it, its problem is hidden,
    not live or not opened, it is a private run (``private_problem_ids``), or it was made
    while its competition's board is frozen (``problems.frozen_since``)."""
    if sees_everything_of(viewer, submission):
        return True
    frozen = problems.frozen_since(session, [submission.problem_id]).get(submission.problem_id)
    return (
        problems.shown_to_everyone(session, submission.problem)
        and not submission.is_hidden
        and not (
            submission.mode != Mode.LEADERBOARD
            and submission.problem_id in private_problem_ids(session, [submission.problem_id])
        )
        and (frozen is None or submission.created_at < frozen)
    )


def private_problem_ids(session: Session, problem_ids: Sequence[int] | None = None) -> set[int]:
    """The problems (of these, or of all) whose runs other than ranked ones (test, benchmark
    and profile mode: a competitor trying ideas, with their scores) are their author's and
    the organizers' alone: those of a competition open now. Once it closes they are public
    again, as any submission's results."""
    return problems.in_open_competition(session, problem_ids)


def can_see_code(session: Session, viewer: User | None, submission: Submission) -> bool:
    """Code and logs: its author and admins; everyone else only after the problem's deadline,
    and only where the organizers chose to publish the code."""
    if viewer is not None and (viewer.is_admin or viewer.id == submission.user_id):
        return True
    problem = submission.problem
    return (
        can_see(session, viewer, submission)
        and problem.code_public_after_deadline
        and problems.deadline_passed(problem)
    )


def get_visible_submission(session: Session, submission_id: int, viewer: User | None) -> Submission:
    submission = repository.get_submission(session, submission_id, to_show=True)
    if submission is None or not can_see(session, viewer, submission):
        raise NotFound(f"no submission {submission_id}")
    return submission


@dataclass(frozen=True)
class SubmissionFilter:
    """What a list of submissions is narrowed to, as given (names and values; None: any): an
    organizer's list of everyone's, or a user's list of their own (which has no `user`)."""

    problem: str | None = None
    user: str | None = None
    status: str | None = None
    mode: str | None = None

    @classmethod
    def of(
        cls,
        problem: str | None = None,
        user: str | None = None,
        status: str | None = None,
        mode: str | None = None,
    ) -> SubmissionFilter:
        """Blank fields (an empty form field) are None."""

        def given(value: str | None) -> str | None:
            return (value or "").strip() or None

        return cls(given(problem), given(user), given(status), given(mode))

    @property
    def narrows(self) -> bool:
        return any((self.problem, self.user, self.status, self.mode))

    def check(self) -> None:
        """A status or mode that is none of ours is a BadRequest naming those there are."""
        if self.status is not None and self.status not in tuple(Status):
            raise BadRequest(
                f"unknown status {self.status!r}; choose one of {', '.join(tuple(Status))}"
            )
        if self.mode is not None and self.mode not in MODES:
            raise BadRequest(f"unknown mode {self.mode!r}; choose one of {', '.join(MODES)}")


def list_for_user(session: Session, user: User, viewer: User | None) -> Sequence[Submission]:
    """A user's submissions, newest first: all of them for the user and admins; for everyone
    else the visible ones, on the problems they may see (``can_see``'s rule: a hidden, not
    yet opened or not live problem's runs are not listed)."""
    everything = viewer is not None and (viewer.is_admin or viewer.id == user.id)
    if everything:
        return repository.list_user_submissions(session, user.id, include_hidden=True)
    return repository.list_user_submissions(
        session,
        user.id,
        include_hidden=False,
        private_problem_ids=private_problem_ids(session),
        frozen=problems.frozen_since(session),
        on_problems=[p.id for p in problems.list_visible_problems(session, viewer)],
    )


def list_own(
    session: Session,
    user: User,
    narrowed: SubmissionFilter | None = None,
    *,
    before: int | None,
    limit: int,
) -> Sequence[Submission]:
    """The user's own submissions, newest first, narrowed by problem, status and mode (its
    `user` is not read); an unknown problem is a NotFound, a status or mode that is none of
    ours a BadRequest naming those there are."""
    narrowed = narrowed or SubmissionFilter()
    narrowed.check()
    problem_id = None
    if narrowed.problem is not None:
        problem_id = problems.get_visible_problem(session, narrowed.problem, user).id
    return repository.list_user_submissions(
        session,
        user.id,
        include_hidden=True,
        limit=limit,
        problem_id=problem_id,
        status=narrowed.status,
        mode=narrowed.mode,
        before=before,
    )


def list_recent(
    session: Session,
    limit: int = 200,
    narrowed: SubmissionFilter | None = None,
    *,
    before: int | None = None,
) -> Sequence[Submission]:
    """Everyone's submissions, newest first, for organizers; an unknown problem or user is a
    NotFound, a status or mode that is none of ours a BadRequest naming those there are."""
    narrowed = narrowed or SubmissionFilter()
    narrowed.check()
    problem = None
    if narrowed.problem is not None:
        problem = problem_repository.get_problem(session, narrowed.problem, light=True)
        if problem is None:
            raise NotFound(f"no problem named {narrowed.problem!r}")
    user = None
    if narrowed.user is not None:
        user = users.get_user(session, narrowed.user)
    return repository.list_recent_submissions(
        session,
        limit,
        problem_id=problem.id if problem is not None else None,
        user_id=user.id if user is not None else None,
        status=narrowed.status,
        mode=narrowed.mode,
        before=before,
    )


MODERATIONS = ("hide", "unhide", "hack", "unhack", "rerun")
# Moderations that must say why: the author reads the reason.
REASONED = ("hide", "hack")


def moderate(
    session: Session, submission_id: int, action: str, admin: User, reason: str | None = None
) -> Submission:
    """Hide or unhide, mark or unmark as hacked, or reset for a re-run (graded again once the
    caller commits), and write it to the audit log with the reason, which hiding and marking
    hacked require (the author reads it on the submission)."""
    if action not in MODERATIONS:
        raise BadRequest(f"unknown action {action!r}; choose one of {', '.join(MODERATIONS)}")
    reason = audit.reason_of(action, reason, REASONED)
    submission = repository.get_submission(session, submission_id, for_update=True)
    if submission is None:
        raise NotFound(f"no submission {submission_id}")
    if action in ("hide", "unhide"):
        submission.is_hidden = action == "hide"
    elif action in ("hack", "unhack"):
        submission.is_hacked = action == "hack"
    elif action == "rerun":
        if submission.status not in TERMINAL:
            raise Conflict(f"submission {submission_id} is still {submission.status}")
        keep_verdict(session, submission)
        reset_for_rerun(submission)
        # The old grading's profile goes with its report; the new grading brings its own.
        repository.delete_files(session, submission.id)
        jobs.enqueue(
            session,
            jobs.Job.GRADE,
            submission.id,
            # Where it was graded before: a final judging's run stays on its pinned workers.
            queue=graded_on(session, submission),
            user_id=submission.user_id,
            mode=submission.mode,
            gpus=loaded.gpus_for(submission.problem, submission.gpu_type),
        )
    else:
        raise BadRequest(f"unknown action {action!r}")
    session.flush()
    upkeep.submission_changed(session, submission)
    audit.record(
        session,
        admin,
        f"submission.{action}",
        target_type="submission",
        target=str(submission.id),
        details={
            "problem": submission.problem.name,
            "user": submission.user.name,
            "status": submission.status,
            "reason": reason,
        },
    )
    session.flush()
    return submission


@dataclass(frozen=True)
class ModerationReasons:
    """Why the organizers hid the submission or marked it hacked, as they said when they did
    (None where it is not, or no reason was kept: moderation before reasons were asked)."""

    hidden: str | None = None
    hacked: str | None = None


def moderation_reasons(session: Session, submission: Submission) -> ModerationReasons:
    """Read from the audit log, which keeps them (only for a hidden or hacked submission)."""

    def latest(action: str) -> str | None:
        return audit.reason_for(session, f"submission.{action}", "submission", str(submission.id))

    return ModerationReasons(
        hidden=latest("hide") if submission.is_hidden else None,
        hacked=latest("hack") if submission.is_hacked else None,
    )


# A verdict: what grading sets on a submission, kept whole in its history when replaced.
VERDICT_FIELDS = (
    "problem_version",
    "status",
    "score",
    "sol_fraction",
    "message",
    "flags",
    "report",
    "worker",
    "started_at",
    "finished_at",
)


def verdict_of(graded: Submission) -> dict[str, Any]:
    """``graded``'s verdict by field, its flags a list of their own."""
    verdict = {name: getattr(graded, name) for name in VERDICT_FIELDS}
    verdict["flags"] = list(graded.flags)
    return verdict


def keep_verdict(session: Session, submission: Submission) -> None:
    """Keep the submission's verdict as it stands in its history, before a re-run resets it."""
    repository.add_verdict(
        session,
        SubmissionVerdict(
            submission_id=submission.id, **verdict_of(submission), replaced_at=utcnow()
        ),
    )


def earlier_verdicts(session: Session, submission: Submission) -> Sequence[SubmissionVerdict]:
    """Its verdicts before the re-runs that replaced them, oldest first."""
    return repository.earlier_verdicts(session, submission.id)


def reset_for_rerun(submission: Submission) -> None:
    """Back to queued against the problem's current version; its verdict is in its history
    (``keep_verdict``)."""
    submission.problem_version = submission.problem.version
    submission.status = Status.QUEUED
    submission.score = None
    submission.sol_fraction = None
    submission.message = ""
    submission.flags = []
    submission.report = None
    submission.worker = None
    submission.started_at = None
    submission.finished_at = None
    submission.progress = None


def mark_running(session: Session, submission_id: int, worker: str) -> str | None:
    """A worker started grading it; the queue it left, which has room now."""
    submission = repository.get_submission(session, submission_id, for_update=True)
    if submission is None:
        return None
    jobs.started(session, jobs.Job.GRADE, submission_id)
    if submission.status == Status.QUEUED:
        submission.status = Status.RUNNING
        submission.started_at = utcnow()
        submission.worker = worker
    return graded_on(session, submission)


def record_progress(session: Session, submission_id: int, progress: Progress) -> bool:
    """Where a running submission's grading stands, as its worker says; ignored unless it is
    running: a message that comes after the verdict (or before the start) changes nothing."""
    submission = repository.get_submission(session, submission_id, for_update=True)
    if submission is None or submission.status != Status.RUNNING:
        return False
    submission.progress = progress.to_dict()
    return True


def progress_of(submission: Submission) -> Progress | None:
    """Its grading's progress while it runs; None otherwise, or where the stored one does
    not read."""
    if submission.status != Status.RUNNING or not submission.progress:
        return None
    try:
        return PROGRESS.validate_python(submission.progress)
    except ValidationError:
        return None


def queue_wait(session: Session, submission: Submission) -> places.Wait | None:
    """While it is queued: its place in its device's queue and the expected wait."""
    return places.wait_for(session, submission)


def phases(submission: Submission, report: Report | None) -> dict[str, float]:
    """Where a submission's time went: its wait in the queue, then its grading's phases."""
    found: dict[str, float] = {}
    if submission.started_at is not None:
        found["queue_wait"] = max(
            0.0, (submission.started_at - submission.created_at).total_seconds()
        )
    if report is not None:
        found.update(report.phases)
    return found


def error_class_of(submission: Submission) -> ErrorClass | None:
    """The submission's error class (grader.report.error_class) from its recorded verdict."""
    return error_class(submission.status, submission.message, list(submission.flags or []))


def queue_of(session: Session, submission_id: int) -> str | None:
    """The queue a submission is graded from."""
    submission = session.get(Submission, submission_id)
    return graded_on(session, submission) if submission is not None else None


def graded_on(session: Session, submission: Submission) -> str:
    """The queue its grading was sent to: its device type's, or a competition's judging
    queue (server/competitions/judging.py's ``run_queue``)."""
    return jobs.queue_of(session, jobs.Job.GRADE, submission.id) or submission.gpu_type


def record_report(session: Session, submission_id: int, report: Report, worker: str) -> bool:
    """Write a report; a report for a submission that already has one is ignored, so a job
    graded twice (a worker died after grading, the message came again) is recorded once."""
    submission = repository.get_submission(session, submission_id, for_update=True)
    if submission is None:
        log.warning("report for unknown submission %s dropped", submission_id)
        return False
    jobs.done(session, jobs.Job.GRADE, submission_id)
    if submission.status in TERMINAL:
        log.info(
            "submission %s already recorded as %s; duplicate dropped",
            submission_id,
            submission.status,
        )
        return False
    submission.status = report.status
    passed = report.status == Status.PASSED
    submission.score = report.score if passed else None
    submission.sol_fraction = report.sol_fraction if passed else None
    submission.short_calls = passed and report.short_calls
    submission.ranks_scaled = passed and report.ranks_scaled
    submission.message = report.message
    submission.flags = list(report.flags)
    submission.report = report.to_dict()
    submission.worker = worker
    submission.started_at = submission.started_at or utcnow()
    submission.finished_at = utcnow()
    submission.progress = None
    session.flush()
    upkeep.submission_changed(session, submission)
    callbacks.verdict_recorded(session, submission)
    if passed:
        baselines.wanted_after(
            session, submission.problem, submission.problem_version, submission.gpu_type, report
        )
    return True


def record_invalid_report(session: Session, submission_id: int, why: str, worker: str) -> bool:
    """A worker's result whose report did not validate: an error verdict that says why."""
    submission = repository.get_submission(session, submission_id)
    if submission is None:
        log.warning("invalid report for unknown submission %s dropped", submission_id)
        return False
    report = Report(
        status=Status.ERROR,
        problem=submission.problem.name,
        mode=Mode(submission.mode),
        device="",
        message=why,
        flags=[INVALID_REPORT],
    )
    return record_report(session, submission_id, report, worker)
