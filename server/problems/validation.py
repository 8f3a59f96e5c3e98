"""Validating a problem before it goes live: a round (for each new version, or when an
admin asks) asks for one validation per device type on that type's queue (sent once the
round commits); the results step records each report once and makes the problem live when
every device's report is clean, or invalid when one is not."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from sqlalchemy.orm import Session

from server.models import Problem, ProblemValidation, utcnow
from server.problems import repository
from server.worker import jobs, payloads

log = logging.getLogger(__name__)


class ProblemStatus(StrEnum):
    VALIDATING = "validating"  # its current version is being validated on the workers
    LIVE = "live"  # shown to competitors, takes submissions
    INVALID = "invalid"  # a validation failed, or no device type here can grade it


class ValidationStatus(StrEnum):
    QUEUED = payloads.VALIDATION_QUEUED
    PASSED = "passed"  # every check as its name promises
    FAILED = "failed"


VALIDATING = ProblemStatus.VALIDATING
LIVE = ProblemStatus.LIVE
INVALID = ProblemStatus.INVALID
QUEUED = ValidationStatus.QUEUED
# The gpu_type of the one row a round gets when the problem is offered on no device here.
NO_DEVICE = "none"


def start(session: Session, problem: Problem, gpu_types: Sequence[str]) -> None:
    """Begin a new round for the problem's current version on these device types; the
    problem is not live until the round ends clean. Results of earlier rounds still arrive
    and are kept, but no longer decide the problem's status. Each device type's validation
    is sent once the caller commits."""
    problem.validation_attempt += 1
    if not gpu_types:
        problem.status = INVALID
        message = "the problem is offered on none of the device types this service grades on"
        session.add(
            ProblemValidation(
                problem_id=problem.id,
                problem_version=problem.version,
                attempt=problem.validation_attempt,
                gpu_type=NO_DEVICE,
                status=ValidationStatus.FAILED,
                report={"status": ValidationStatus.FAILED, "message": message, "checks": []},
                finished_at=utcnow(),
            )
        )
    else:
        problem.status = VALIDATING
        for gpu_type in gpu_types:
            row = ProblemValidation(
                problem_id=problem.id,
                problem_version=problem.version,
                attempt=problem.validation_attempt,
                gpu_type=gpu_type,
                status=QUEUED,
            )
            session.add(row)
            session.flush()
            jobs.enqueue(session, jobs.Job.VALIDATE, row.id, queue=gpu_type)
    session.flush()


def current_round(session: Session, problem: Problem) -> Sequence[ProblemValidation]:
    return repository.validations_of_round(session, problem.id, problem.validation_attempt)


def record(session: Session, validation_id: int, report: dict[str, Any], worker: str) -> bool:
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
    passed = report.get("status") == ValidationStatus.PASSED
    row.status = ValidationStatus.PASSED if passed else ValidationStatus.FAILED
    row.report = report
    row.worker = worker
    row.finished_at = utcnow()
    session.flush()
    if (
        problem is not None
        and row.attempt == problem.validation_attempt
        and row.problem_version == problem.version
    ):
        conclude_round(session, problem)
    return True


def conclude_round(session: Session, problem: Problem) -> None:
    rows = current_round(session, problem)
    if any(row.status == QUEUED for row in rows):
        return
    clean = rows and all(row.status == ValidationStatus.PASSED for row in rows)
    problem.status = LIVE if clean else INVALID
    log.info("problem %s version %s is %s", problem.name, problem.version, problem.status)
