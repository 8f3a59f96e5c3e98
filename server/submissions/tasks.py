"""Queue tasks. ``grade`` runs on a GPU worker, holds no database credentials and returns
the report; ``record_started`` and ``record_report`` run on the ``results`` queue next to
the API and write to the database."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
from typing import Any

from celery.exceptions import Reject

from server.queue import RESULTS_QUEUE, celery_app

log = logging.getLogger(__name__)

WORKER_DEVICE_ENV = "KJ_WORKER_DEVICE"
WORKER_PEAKS_ENV = "KJ_WORKER_PEAKS"  # measured once when the worker starts
WORKER_GPU_BASELINE_ENV = "KJ_WORKER_GPU_BASELINE"  # GPU memory in use when it started


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@celery_app.task(name="kerneljudge.grade")
def grade(submission_id: int, payload: dict[str, Any]) -> dict[str, Any]:
    """Grade one submission on this worker's device and hand the report to the results step."""
    from grader.calibrate import DevicePeaks
    from grader.harness import grade as grade_submission
    from grader.problem import problem_from_files
    from server.settings import get_settings

    device = os.environ.get(WORKER_DEVICE_ENV, "cpu")
    if device == "cuda":
        refuse_unclean_gpu(f"submission {submission_id}")
    record_started.apply_async((submission_id, worker_name()), queue=RESULTS_QUEUE)
    measured = os.environ.get(WORKER_PEAKS_ENV)
    try:
        problem = problem_from_files(payload["problem"]["name"], payload["problem"]["files"])
        report = grade_submission(
            problem,
            payload["code"],
            mode=payload["mode"],
            device=device,
            secret_seed=payload.get("secret_seed"),
            timeout_s=payload.get("timeout_s"),
            peaks=DevicePeaks.from_dict(json.loads(measured)) if measured else None,
            memory_bytes=int(get_settings().sandbox_memory_gib * (1 << 30)),
        ).to_dict()
    except Exception as exc:  # a grader bug must still end the submission, not strand it
        log.exception("grading submission %s failed inside the grader", submission_id)
        report = {
            "status": "error",
            "score": None,
            "message": f"the grader failed on this worker ({type(exc).__name__}); "
            "an organizer has been told through the worker's log",
            "flags": ["grader_failure"],
            "cases": [],
        }
    return {"submission_id": submission_id, "worker": worker_name(), "report": report}


def refuse_unclean_gpu(job: str) -> None:
    """Grade only on a GPU as clean as at the worker's start. This process has not touched
    CUDA yet (one grading per process), so what is in use belongs to someone else: most
    likely a previous submission that outlived its grading. Put the job back for another
    worker and take this one out of service."""
    from grader.hygiene import GpuState, wait_until_clean

    baseline = GpuState.baseline_from_env(os.environ.get(WORKER_GPU_BASELINE_ENV, ""))
    problem = wait_until_clean(baseline) if baseline else ""
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


@celery_app.task(name="kerneljudge.record_started")
def record_started(submission_id: int, worker: str) -> None:
    from server.db import session_scope
    from server.submissions import service

    with session_scope() as session:
        service.mark_running(session, submission_id, worker)


@celery_app.task(name="kerneljudge.record_report")
def record_report(result: dict[str, Any]) -> None:
    from server.db import session_scope
    from server.submissions import service

    with session_scope() as session:
        service.record_report(session, result["submission_id"], result["report"], result["worker"])
