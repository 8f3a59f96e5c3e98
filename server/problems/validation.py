"""Validating a problem before it goes live: a round (for each new version, or when an
admin asks) asks for one validation per device type on that type's queue (sent once the
round commits); the results step records each report once and makes the problem live when
every device's report is clean, or invalid when one is not. A live problem stays live
through a round: its staged next version (server/problems/versions.py) replaces it only
when the round passes."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from pydantic import TypeAdapter, ValidationError
from sqlalchemy.orm import Session

from grader.report import Mode
from grader.report import ValidationReport as GraderValidationReport
from grader.report import ValidationStatus as GraderValidationStatus
from server.models import Problem, ProblemValidation, utcnow
from server.outbox import jobs
from server.problems import repository, versions
from server.problems.loaded import loaded, problem_files
from server.settings import Settings

log = logging.getLogger(__name__)


class ProblemStatus(StrEnum):
    VALIDATING = "validating"  # its current version is being validated on the workers
    LIVE = "live"  # shown to competitors, takes submissions
    INVALID = "invalid"  # a validation failed, or no device type here can grade it


class ValidationStatus(StrEnum):
    QUEUED = "queued"  # waits for its worker's report
    PASSED = "passed"  # every check as its name promises
    FAILED = "failed"
    # The worker's device is not one the problem can be graded on (task.yml's `requires`,
    # or a reference that makes CUDA tensors on a CPU worker); the report says what it needs.
    NEEDS = "needs"


VALIDATING = ProblemStatus.VALIDATING
LIVE = ProblemStatus.LIVE
INVALID = ProblemStatus.INVALID
QUEUED = ValidationStatus.QUEUED
# The gpu_type of the one row a round gets when the problem is offered on no device here.
NO_DEVICE = "none"


def start(session: Session, problem: Problem, gpu_types: Sequence[str]) -> None:
    """Begin a new round for the problem's newest version (its staged one, if any) on these
    device types. A problem that is not live stays closed until the round ends clean; a live
    one keeps serving its live version throughout. Results of earlier rounds still arrive
    and are kept, but no longer decide anything. Each device type's validation is sent once
    the caller commits."""
    problem.validation_attempt += 1
    version = versions.newest_version(problem)
    if not gpu_types:
        if problem.candidate is not None:
            versions.set_status(problem, INVALID)
        else:
            problem.status = INVALID
        message = "the problem is offered on none of the device types this service grades on"
        session.add(
            ProblemValidation(
                problem_id=problem.id,
                problem_version=version,
                attempt=problem.validation_attempt,
                gpu_type=NO_DEVICE,
                status=ValidationStatus.FAILED,
                report=GraderValidationReport(
                    status=GraderValidationStatus.FAILED, message=message
                ).to_dict(),
                finished_at=utcnow(),
            )
        )
    else:
        if problem.candidate is not None:
            versions.set_status(problem, VALIDATING)
        elif problem.status != LIVE:
            problem.status = VALIDATING
        for gpu_type in gpu_types:
            row = ProblemValidation(
                problem_id=problem.id,
                problem_version=version,
                attempt=problem.validation_attempt,
                gpu_type=gpu_type,
                status=QUEUED,
            )
            session.add(row)
            session.flush()
            jobs.enqueue(session, jobs.Job.VALIDATE, row.id, queue=gpu_type)
    session.flush()


def message(session: Session, validation_id: int, settings: Settings) -> list[Any] | None:
    """The validate job's arguments, built when it is sent (the problem's files, its example
    solutions and the limits), or None once the validation has its report."""
    row = session.get(ProblemValidation, validation_id)
    if row is None or row.status != QUEUED:
        return None
    stored = session.get(Problem, row.problem_id)
    if stored is None:
        return None
    # A live problem's next version is staged beside it until it passes (versions.py).
    problem = versions.of_version(stored, row.problem_version)
    read = loaded(problem)
    payload = {
        "problem": problem_files(problem),
        "solutions": dict(problem.solutions or {}),
        "timeouts": {
            mode: min(read.timeout_for(mode), settings.grading_timeout_s)
            for mode in (Mode.TEST, Mode.BENCHMARK)
        },
    }
    return [row.id, payload]


def time_limit_s(session: Session, validation_id: int, settings: Settings) -> float:
    """How long a worker may hold a validation before the sweeper counts it lost."""
    return settings.visibility_timeout_s


jobs.register(jobs.Job.VALIDATE, jobs.Messages(args=message, time_limit_s=time_limit_s))


def current_round(session: Session, problem: Problem) -> Sequence[ProblemValidation]:
    return repository.validations_of_round(session, problem.id, problem.validation_attempt)


def waiting(rows: Sequence[ProblemValidation]) -> bool:
    """Whether a round (its rows, as ``current_round`` reads them) still waits for a device's
    report."""
    return any(row.status == QUEUED for row in rows)


# A validation's report at the door (a worker's, or one the database keeps): the grader's
# ValidationReport; keys it does not know are ignored.
VALIDATION_REPORT: TypeAdapter[GraderValidationReport] = TypeAdapter(GraderValidationReport)


def parse_report(raw: object) -> GraderValidationReport:
    """A validation report as a worker sent it or the database keeps it; one that does not
    validate is a failed validation that says why."""
    try:
        return VALIDATION_REPORT.validate_python(raw)
    except ValidationError as exc:
        return GraderValidationReport(
            status=GraderValidationStatus.FAILED,
            message=f"the worker returned an invalid validation report ({exc.error_count()} "
            "errors)",
        )


def record(
    session: Session, validation_id: int, report: GraderValidationReport, worker: str
) -> bool:
    """Write one device's report; a second report for the same validation (the worker died
    after validating, the message came again) is dropped, so each is recorded once."""
    row = repository.get_validation(session, validation_id)
    if row is None:
        log.warning("report for unknown validation %s dropped", validation_id)
        return False
    jobs.done(session, jobs.Job.VALIDATE, validation_id)
    # Every write to a problem's validations holds the problem's row first.
    problem = repository.get_problem_by_id(session, row.problem_id, for_update=True)
    session.refresh(row)
    if row.status != QUEUED:
        log.info("validation %s already recorded as %s; duplicate dropped", row.id, row.status)
        return False
    known = (GraderValidationStatus.PASSED, GraderValidationStatus.NEEDS)
    row.status = (
        ValidationStatus(report.status) if report.status in known else ValidationStatus.FAILED
    )
    row.report = report.to_dict()
    row.worker = worker
    row.finished_at = utcnow()
    if (
        problem is not None
        and row.attempt == problem.validation_attempt
        and row.status == ValidationStatus.PASSED
    ):
        versions.keep_test_cases_timeout(
            problem, row.problem_version, row.gpu_type, report.test_cases_timeout_s
        )
    session.flush()
    if (
        problem is not None
        and row.attempt == problem.validation_attempt
        and row.problem_version == versions.newest_version(problem)
    ):
        conclude_round(session, problem)
    return True


def settle_gpu_types(problem: Problem, rows: Sequence[ProblemValidation]) -> None:
    """The organizers' latest choice of device types takes effect on the live problem, with
    those they added kept only where this round passed; if none is left to offer, the
    problem keeps the device types it had."""
    pending = problem.gpu_types_pending
    if not pending:
        return
    problem.gpu_types_pending = None
    passed = {row.gpu_type for row in rows if row.status == ValidationStatus.PASSED}
    added = set(pending["added"])
    chosen = [gpu for gpu in pending["gpu_types"] if gpu not in added or gpu in passed]
    refused = sorted(added - passed)
    if refused:
        log.warning(
            "problem %s is not offered on %s: its validation there did not pass",
            problem.name,
            ", ".join(refused),
        )
    if any(gpu in passed for gpu in chosen):
        problem.gpu_types = chosen


def conclude_round(session: Session, problem: Problem) -> None:
    rows = current_round(session, problem)
    if any(row.status == QUEUED for row in rows):
        return
    clean = bool(rows) and all(row.status == ValidationStatus.PASSED for row in rows)
    if problem.candidate is not None:
        if clean:
            versions.promote(problem)
            problem.gpu_types_pending = None
            problem.status = LIVE
        else:
            versions.set_status(problem, INVALID)
            log.warning(
                "problem %s: version %s failed validation; version %s stays live",
                problem.name,
                problem.candidate["version"],
                problem.version,
            )
            return
    elif problem.status == LIVE:
        # The live version validated again: a failed round is the organizers' to read (on
        # the admin page); competitors keep the version they were competing on, and are
        # offered the device types the organizers added only where it passed.
        settle_gpu_types(problem, rows)
        if not clean:
            log.warning("problem %s: version %s failed a new round", problem.name, problem.version)
        return
    else:
        problem.status = LIVE if clean else INVALID
    log.info("problem %s version %s is %s", problem.name, problem.version, problem.status)
