"""The results step: tasks on the ``results`` queue, served next to the API, that write what
workers send back. Each loads by id and calls its service in one transaction; a database
that is away (a restart, a failover) is waited out with growing pauses, never a reason to
drop a report."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError
from sqlalchemy.exc import InterfaceError, OperationalError

from server.db import session_scope
from server.outbox import dispatch, jobs, task_names
from server.outbox.app import celery_app
from server.problems import baselines, validation
from server.settings import get_settings
from server.submissions import files
from server.submissions import service as submissions
from server.submissions.schemas import GradingFile, GradingProgress, GradingResult, why_invalid

log = logging.getLogger(__name__)

# Errors of a database that is unreachable or restarting; anything else is a bug to see.
TRANSIENT = (OperationalError, InterfaceError)
RETRY: dict[str, Any] = {
    "autoretry_for": TRANSIENT,
    "retry_backoff": 1,
    "retry_backoff_max": 60,
    "retry_jitter": True,
    "max_retries": None,
}


@celery_app.task(name=task_names.RECORD_STARTED, **RETRY)
def record_started(submission_id: int, worker: str) -> None:
    with session_scope() as session:
        queue = submissions.mark_running(session, submission_id, worker)
    if queue is not None:
        jobs.dispatch_after(queue)


@celery_app.task(name=task_names.RECORD_PROGRESS)
def record_progress(sent: dict[str, Any]) -> None:
    """Where a grading stands, as its worker says while it runs. Never retried: a newer one
    follows within seconds, and the verdict ends them all; one that does not validate, or
    finds the database away, is dropped with a line in the log."""
    try:
        told = GradingProgress.model_validate(sent)
    except ValidationError as exc:
        log.warning("a progress message from worker %s refused: %s", _worker_of(sent), exc)
        return
    try:
        with session_scope() as session:
            submissions.record_progress(session, told.submission_id, told.progress)
    except TRANSIENT:
        log.info("progress of submission %s dropped: the database is away", told.submission_id)


@celery_app.task(name=task_names.RECORD_REPORT, **RETRY)
def record_report(result: dict[str, Any]) -> None:
    """A grading's report, validated here into the grader's Report; one that does not
    validate is recorded as an error verdict that says why (or raises again when even its
    submission cannot be told)."""
    try:
        graded = GradingResult.model_validate(result)
    except ValidationError as exc:
        if not isinstance(result, dict) or not isinstance(result.get("submission_id"), int):
            raise
        submission_id, worker = result["submission_id"], str(result.get("worker", ""))
        with session_scope() as session:
            submissions.record_invalid_report(session, submission_id, why_invalid(exc), worker)
            queue = submissions.queue_of(session, submission_id)
    else:
        with session_scope() as session:
            submissions.record_report(session, graded.submission_id, graded.report, graded.worker)
            queue = submissions.queue_of(session, graded.submission_id)
    if queue is not None:
        jobs.dispatch_after(queue)


@celery_app.task(name=task_names.RECORD_FILE, **RETRY)
def record_file(result: dict[str, Any]) -> None:
    """A file of a grading, sent before its report (profile mode's Nsight Compute report).
    A worker host is trusted less than the service: a file of another name, not in base64,
    over the size limit or for no profile run is dropped, with a line in the log."""
    try:
        sent = GradingFile.model_validate(result)
        content = files.decode(sent.name, sent.content_b64, get_settings().max_profile_file_bytes)
    except (ValidationError, files.Refused) as exc:
        log.warning("a file from worker %s refused: %s", _worker_of(result), exc)
        return
    with session_scope() as session:
        files.record(session, sent.submission_id, sent.name, content)


def _worker_of(result: object) -> str:
    return str(result.get("worker", ""))[:SLOT_NAME_MAX] if isinstance(result, dict) else ""


@celery_app.task(name=task_names.RECORD_VALIDATION, **RETRY)
def record_validation(result: dict[str, Any]) -> None:
    with session_scope() as session:
        validation.record(
            session,
            int(result["validation_id"]),
            validation.parse_report(result["report"]),
            str(result["worker"]),
        )


@celery_app.task(name=task_names.RECORD_BASELINES, **RETRY)
def record_baselines(result: dict[str, Any]) -> None:
    """A problem version's baselines as a worker timed them."""
    raw = result["report"]
    worker = str(result.get("worker", ""))[:SLOT_NAME_MAX]
    if isinstance(raw, dict) and "failed" in raw:
        report: baselines.BaselineReport | str = str(raw["failed"])
    else:
        report = baselines.parse_report(raw)
    with session_scope() as session:
        baselines.record(session, int(result["baseline_id"]), report, worker)


# What a hello may name: a worker host is trusted less than the service, so its words are
# bounded before they reach the database.
SLOT_NAME_MAX = 200
QUEUE_NAME_MAX = 32
QUEUES_MAX = 16
# The most GPUs a slot's worker may say it owns (a host of eight, with room to spare).
SLOT_GPUS_MAX = 64


@celery_app.task(name=task_names.RECORD_SLOT, **RETRY)
def record_slot(worker: str, queues: list[str], gpus: int = 1) -> None:
    """A grading slot says it is there to take jobs from these queues, and how many GPUs its
    worker owns (a worker of one GPU, or of an older release, does not say); any waiting
    there go to it now."""
    names = [q for q in queues if isinstance(q, str) and 0 < len(q) <= QUEUE_NAME_MAX]
    if not isinstance(worker, str) or not 0 < len(worker) <= SLOT_NAME_MAX:
        return
    if not isinstance(gpus, int) or isinstance(gpus, bool) or not 1 <= gpus <= SLOT_GPUS_MAX:
        return
    names = sorted(set(names))[:QUEUES_MAX]
    with session_scope() as session:
        dispatch.slot_seen(session, worker, names, gpus)
    for queue in names:
        jobs.dispatch_after(queue)
