"""The jobs of a grading worker. Each runs in a fresh process on this host's device, holds
no database credentials, and hands its result to the results queue: a grading's report, a
problem validation's report. One skeleton for both: refuse an unclean GPU, do the work,
turn a failure of our own into a report, deliver it (retrying while the broker is away)."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable
from typing import Any

from celery.exceptions import Reject

from grader.harness import grade as grade_submission
from grader.hygiene import wait_until_clean
from grader.problem import problem_from_files
from grader.report import Status
from grader.validate import validate
from server.worker import context
from server.worker.app import RESULTS_QUEUE, celery_app

log = logging.getLogger(__name__)

RECORD_STARTED = "kerneljudge.record_started"
RECORD_REPORT = "kerneljudge.record_report"
RECORD_VALIDATION = "kerneljudge.record_validation"
# A result is sent again with growing pauses for about ten minutes while the broker is
# unreachable; after that the job fails, and the outbox's sweeper sends it again.
DELIVERY_RETRY = {"max_retries": 60, "interval_start": 1, "interval_step": 2, "interval_max": 10}

Report = dict[str, Any]


@celery_app.task(name="kerneljudge.grade")
def grade(submission_id: int, payload: dict[str, Any]) -> None:
    """Grade one submission on this worker's device."""

    def work(worker: context.GpuWorker) -> Report:
        problem = problem_from_files(payload["problem"]["name"], payload["problem"]["files"])
        return grade_submission(
            problem,
            payload["code"],
            mode=payload["mode"],
            device=worker.device,
            secret_seed=payload.get("secret_seed"),
            timeout_s=payload.get("timeout_s"),
            peaks=worker.peaks,
            memory_bytes=worker.memory_bytes,
        ).to_dict()

    def failed(exc: Exception) -> Report:
        return {
            "status": Status.ERROR,
            "score": None,
            "message": f"the grader failed on this worker ({type(exc).__name__}); "
            "an organizer has been told through the worker's log",
            "flags": ["grader_failure"],
            "cases": [],
        }

    def started() -> None:
        notify(RECORD_STARTED, submission_id, context.worker_name())

    report = gpu_job(f"submission {submission_id}", work, failed, started)
    deliver(RECORD_REPORT, {"submission_id": submission_id, "report": report})


@celery_app.task(name="kerneljudge.validate_problem")
def validate_problem(validation_id: int, payload: dict[str, Any]) -> None:
    """Validate one version of a problem on this worker's device."""

    def work(worker: context.GpuWorker) -> Report:
        problem = problem_from_files(payload["problem"]["name"], payload["problem"]["files"])
        return validate(
            problem,
            dict(payload.get("solutions") or {}),
            device=worker.device,
            peaks=worker.peaks,
            timeouts={k: float(v) for k, v in (payload.get("timeouts") or {}).items()},
            memory_bytes=worker.memory_bytes,
        ).to_dict()

    def failed(exc: Exception) -> Report:
        return {
            "status": "failed",
            "message": f"the validator failed on this worker ({type(exc).__name__}: {exc})",
            "checks": [],
        }

    report = gpu_job(f"validation {validation_id}", work, failed)
    deliver(RECORD_VALIDATION, {"validation_id": validation_id, "report": report})


def gpu_job(
    label: str,
    work: Callable[[context.GpuWorker], Report],
    failed: Callable[[Exception], Report],
    started: Callable[[], None] | None = None,
) -> Report:
    """The skeleton of every job here: a clean GPU first, then the work; a failure of the
    grader itself still ends the job with a report, so nothing is stranded."""
    worker = context.current()
    if worker.device == "cuda":
        refuse_unclean_gpu(worker, label)
    if started is not None:
        started()
    try:
        return work(worker)
    except Exception as exc:
        log.exception("%s failed inside the grader", label)
        return failed(exc)


def refuse_unclean_gpu(worker: context.GpuWorker, job: str) -> None:
    """Grade only on a GPU as clean as at the worker's start. This process has not touched
    CUDA yet (one grading per process), so what is in use belongs to someone else: most
    likely a previous submission that outlived its grading. Put the job back for another
    worker and take this one out of service."""
    problem = wait_until_clean(worker.gpu_baseline) if worker.gpu_baseline else ""
    if not problem:
        return
    log.critical(
        "this worker takes itself out of service: the GPU is not clean (%s); %s goes back "
        "to the queue",
        problem,
        job,
    )
    os.kill(os.getppid(), signal.SIGTERM)  # the worker's main process: a warm shutdown
    raise Reject(f"GPU not clean: {problem}", requeue=True)


def deliver(task: str, result: dict[str, Any]) -> None:
    """Hand a result to the results queue, retrying while the broker is away. The job is
    acknowledged only after this returns, so a result that cannot be sent fails the job
    instead of vanishing with it (the outbox's sweeper then sends the job again)."""
    result = {**result, "worker": context.worker_name()}
    celery_app.send_task(
        task, args=[result], queue=RESULTS_QUEUE, retry=True, retry_policy=DELIVERY_RETRY
    )


def notify(task: str, *args: Any) -> None:
    """Best effort: a lost "started" only leaves the submission queued until its report."""
    try:
        celery_app.send_task(task, args=list(args), queue=RESULTS_QUEUE, retry=False)
    except Exception:
        log.warning("could not tell the results step that %s started", args, exc_info=True)
