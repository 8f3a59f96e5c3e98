"""Validating a problem before it goes live: a round (for each new version, or when an
admin asks) sends one validation per device type to that type's queue after the commit;
the results step records each report once and makes the problem live when every device's
report is clean, or invalid when one is not."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from celery import chain
from sqlalchemy.orm import Session

from grader.problem import problem_from_files
from server.models import Problem, ProblemValidation, utcnow
from server.problems import repository, tasks
from server.queue import RESULTS_QUEUE
from server.settings import Settings

log = logging.getLogger(__name__)

VALIDATING = "validating"
LIVE = "live"
INVALID = "invalid"
QUEUED = "queued"
# The gpu_type of the one row a round gets when the problem is offered on no device here.
NO_DEVICE = "none"


def start(session: Session, problem: Problem, gpu_types: Sequence[str]) -> None:
    """Begin a new round for the problem's current version on these device types; the
    problem is not live until the round ends clean. Results of earlier rounds still arrive
    and are kept, but no longer decide the problem's status."""
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
                status="failed",
                report={"status": "failed", "message": message, "checks": []},
                finished_at=utcnow(),
            )
        )
    else:
        problem.status = VALIDATING
        for gpu_type in gpu_types:
            session.add(
                ProblemValidation(
                    problem_id=problem.id,
                    problem_version=problem.version,
                    attempt=problem.validation_attempt,
                    gpu_type=gpu_type,
                    status=QUEUED,
                )
            )
    session.flush()


def enqueue(session: Session, problem: Problem, settings: Settings) -> int:
    """Send the current round's validations that have not been sent yet to their device
    types' queues; call only after the round has been committed, and commit after (the
    rows remember they were sent). Returns how many were sent."""
    loaded = problem_from_files(problem.name, problem.files)
    payload: dict[str, Any] = {
        "problem": {"name": problem.name, "version": problem.version, "files": problem.files},
        "solutions": dict(problem.solutions or {}),
        "timeouts": {
            mode: min(loaded.timeout_for(mode), settings.grading_timeout_s)
            for mode in ("test", "benchmark")
        },
    }
    sent = 0
    for row in current_round(session, problem):
        if row.status != QUEUED or row.sent_at is not None:
            continue
        row.sent_at = utcnow()
        chain(
            tasks.validate_problem.si(row.id, payload).set(queue=row.gpu_type),
            tasks.record_validation.s().set(queue=RESULTS_QUEUE),
        ).apply_async()
        sent += 1
    return sent


def current_round(session: Session, problem: Problem) -> Sequence[ProblemValidation]:
    return repository.validations_of_round(session, problem.id, problem.validation_attempt)


def record(session: Session, validation_id: int, report: dict[str, Any], worker: str) -> bool:
    """Write one device's report; a second report for the same validation (the worker died
    after validating, the message came again) is dropped, so each is recorded once."""
    row = repository.get_validation(session, validation_id)
    if row is None:
        log.warning("report for unknown validation %s dropped", validation_id)
        return False
    # Every write to a problem's validations holds the problem's row first.
    problem = repository.get_problem_by_id(session, row.problem_id, for_update=True)
    session.refresh(row)
    if row.status != QUEUED:
        log.info("validation %s already recorded as %s; duplicate dropped", row.id, row.status)
        return False
    row.status = "passed" if report.get("status") == "passed" else "failed"
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
    problem.status = LIVE if rows and all(row.status == "passed" for row in rows) else INVALID
    log.info("problem %s version %s is %s", problem.name, problem.version, problem.status)
