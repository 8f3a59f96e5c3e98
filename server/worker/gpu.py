"""The jobs of a grading worker. They run in the worker's pool process (the trusted harness,
which holds no database credentials) on this host's device, each submission in a runner of
its own that the pool process started before the job arrived, and hand their result to the
results queue: a grading's report (and, while it runs, its progress), a problem
validation's report. One skeleton for both:
refuse an unclean GPU, do the work, turn a failure of our own into a report, deliver it
(retrying while the broker is away)."""

from __future__ import annotations

import base64
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from celery.exceptions import Reject
from celery.signals import worker_process_init, worker_process_shutdown
from kombu.exceptions import OperationalError as KombuOperationalError

from grader.baselines import time_baselines
from grader.harness import Precision, Standby
from grader.harness import grade as grade_submission
from grader.hygiene import wait_until_clean
from grader.problem import Problem, problem_from_files
from grader.report import (
    GRADER_FAILURE,
    Mode,
    Report,
    Status,
    ValidationReport,
    ValidationStatus,
)
from grader.validate import validate
from server.outbox import task_names
from server.outbox.app import RESULTS_QUEUE, celery_app
from server.worker import context
from server.worker.lease import GpuLease
from server.worker.progress import ProgressSender

log = logging.getLogger(__name__)

# A pool process says it is there as it starts and this often after, well within the
# dispatcher's memory of a slot (WORKERS_SEEN_FOR in server/outbox/dispatch.py).
PRESENCE_EVERY_S = 120.0
# A result is sent again with growing pauses for about ten minutes while the broker is
# unreachable; after that the job fails, and the outbox's sweeper sends it again.
DELIVERY_RETRY = {"max_retries": 60, "interval_start": 1, "interval_step": 2, "interval_max": 10}
# How long a result is offered to a broker that cannot be reached, and the pause between
# tries where kombu gives up at once.
DELIVERY_BUDGET_S = 600.0
DELIVERY_PAUSE_S = 2.0

# What a job hands the results step: a grading's Report or a problem's ValidationReport.
Result = dict[str, Any]
# The runner for this pool process's next grading, started before its job arrives.
STANDBY = Standby()


@worker_process_init.connect
def _ready_for_gradings(**_: Any) -> None:
    """Once per pool process, before its first job: the harness's CUDA context, and the first
    grading's runner started (torch imported, its own context made)."""
    if not context.is_grading():
        return
    worker = context.current()
    own = context.own_gpu(worker)
    if own is not None:
        # In a worker of several GPUs each pool process has one of its own: its harness, its
        # waiting runners and its gradings of one GPU are there, as in a worker of one GPU.
        os.environ["CUDA_VISIBLE_DEVICES"] = own
        context.start(replace(worker, gpu_baseline=own_baseline(worker, own)))
        worker = context.current()
    if worker.device == "cuda":
        torch.cuda.init()
        torch.cuda.synchronize()
    STANDBY.refill(worker.device, isolate=True, memory_bytes=worker.memory_bytes)
    if worker.queues:
        threading.Thread(
            target=_say_present,
            args=(worker.queues, worker.gpu_count),
            name="kj-presence",
            daemon=True,
        ).start()


def own_baseline(worker: context.GpuWorker, own: str) -> tuple[int, ...] | None:
    """Of the GPU memory in use at the worker's start (one figure per GPU it owns, in its
    order), the pool process's own GPU's."""
    baseline = worker.gpu_baseline
    if baseline is None or len(baseline) != len(worker.gpus):
        return baseline
    return (baseline[worker.gpus.index(own)],)


def _say_present(queues: tuple[str, ...], gpus: int = 1) -> None:
    """Tell the dispatcher, now and every few minutes, that this slot takes jobs from its
    queues (and, in a worker of several GPUs, how many it owns: the largest grading it
    takes): a slot that has not graded anything lately still gets its share of a burst."""
    args: list[Any] = [context.worker_name(), list(queues)]
    if gpus > 1:
        args.append(gpus)  # a worker of one GPU says what older releases said
    while True:
        try:
            celery_app.send_task(task_names.RECORD_SLOT, args=args, queue=RESULTS_QUEUE)
        except Exception:
            log.info("could not tell the results step this slot is here", exc_info=True)
        time.sleep(PRESENCE_EVERY_S)


@worker_process_shutdown.connect
def _stop_the_standby(**_: Any) -> None:
    STANDBY.close()


def standby() -> Standby | None:
    """The pool process's standby runners; none where a job runs outside a worker (called
    directly), which would leave a runner waiting for a grading that never comes."""
    return STANDBY if context.is_grading() else None


def problem_of(payload: dict[str, Any]) -> Problem:
    """The problem version a job's message carries, its files as sent."""
    return problem_from_files(payload["problem"]["name"], payload["problem"]["files"])


def trust(payload: dict[str, Any]) -> dict[str, Any]:
    """Whether the job's problem is an author's, whose reference the grader runs only in a
    sandbox of its own (grader/untrusted.py); a job that does not say is an organizer's."""
    return {"untrusted_reference": bool(payload["problem"].get("untrusted_reference", False))}


def machine(worker: context.GpuWorker) -> dict[str, Any]:
    """What every job here tells the grader of this machine: its device, the peaks its
    speed-of-light fractions are measured against, a runner's memory, the standby runners."""
    return {
        "device": worker.device,
        "peaks": worker.peaks,
        "memory_bytes": worker.memory_bytes,
        "standby": standby(),
    }


@celery_app.task(name=task_names.GRADE)
def grade(submission_id: int, payload: dict[str, Any]) -> None:
    """Grade one submission on this worker's device; its files (a profile's Nsight Compute
    report) go to the results step before its report, each on its own."""
    files: dict[str, bytes] = {}
    worker = context.current()
    needs = gpus_needed(payload, worker)

    def work(worker: context.GpuWorker, gpus: tuple[str, ...] | None) -> Result:
        if needs > worker.gpu_count and worker.gpus:
            return failed_for(f"it needs {needs} GPUs at once; this worker owns {worker.gpu_count}")
        problem = problem_of(payload)
        validated = payload.get("test_cases_timeout_s")
        if validated is not None:
            problem = replace(problem, validated_test_cases_timeout=float(validated))
        with ProgressSender(submission_id, send_progress) as progress:
            graded = grade_submission(
                problem,
                payload["code"],
                mode=payload["mode"],
                secret_seed=payload.get("secret_seed"),
                timeout_s=payload.get("timeout_s"),
                on_progress=progress,
                # A job that names no precision (an older server sent it) is timed standard.
                precision=payload.get("precision", Precision.STANDARD),
                gpus=gpus,
                **trust(payload),
                **machine(worker),
            )
        files.update(graded.contents)
        return graded.to_dict()

    def failed_for(message: str) -> Result:
        return Report(
            status=Status.ERROR,
            problem=payload["problem"]["name"],
            mode=Mode(payload["mode"]),
            device=context.current().device,
            message=message,
            flags=[GRADER_FAILURE],
        ).to_dict()

    def failed(exc: Exception) -> Result:
        return failed_for(
            f"the grader failed on this worker ({type(exc).__name__}); "
            "an organizer has been told through the worker's log"
        )

    def started() -> None:
        notify(task_names.RECORD_STARTED, submission_id, context.worker_name())

    label = f"submission {submission_id}"
    report = gpu_job(label, work, failed, started, gpus=min(needs, worker.gpu_count))
    # Files before the report: the recorded report marks the job done, so a file sent after
    # it and lost with its worker would never come; one sent before comes again with the
    # job's next grading when the report never comes.
    for name, content in sorted(files.items()):
        deliver(
            task_names.RECORD_FILE,
            {
                "submission_id": submission_id,
                "name": name,
                "content_b64": base64.b64encode(content).decode("ascii"),
            },
        )
    deliver(task_names.RECORD_REPORT, {"submission_id": submission_id, "report": report})


@celery_app.task(name=task_names.VALIDATE_PROBLEM)
def validate_problem(validation_id: int, payload: dict[str, Any]) -> None:
    """Validate one version of a problem on this worker's device."""

    def work(worker: context.GpuWorker, gpus: tuple[str, ...] | None) -> Result:
        return validate(
            problem_of(payload),
            dict(payload.get("solutions") or {}),
            timeouts={k: float(v) for k, v in (payload.get("timeouts") or {}).items()},
            **trust(payload),
            **machine(worker),
        ).to_dict()

    def failed(exc: Exception) -> Result:
        return ValidationReport(
            status=ValidationStatus.FAILED,
            problem=payload["problem"]["name"],
            device=context.current().device,
            message=f"the validator failed on this worker ({type(exc).__name__}: {exc})",
        ).to_dict()

    report = gpu_job(f"validation {validation_id}", work, failed)
    deliver(task_names.RECORD_VALIDATION, {"validation_id": validation_id, "report": report})


@celery_app.task(name=task_names.TIME_BASELINES)
def time_problem_baselines(baseline_id: int, payload: dict[str, Any]) -> None:
    """Time one problem version's baselines (its reference, eager and compiled) on this
    worker's device, in leaderboard mode through the same harness and sandbox as a ranked
    submission."""

    def work(worker: context.GpuWorker, gpus: tuple[str, ...] | None) -> Result:
        return time_baselines(
            problem_of(payload),
            secret_seed=payload.get("secret_seed"),
            timeout_s=payload.get("timeout_s"),
            **trust(payload),
            **machine(worker),
        ).to_dict()

    def failed(exc: Exception) -> Result:
        # Both kinds failed for a reason of the grader's own: the results step says so.
        return {"failed": f"the grader failed on this worker ({type(exc).__name__})"}

    report = gpu_job(f"baselines {baseline_id}", work, failed)
    deliver(task_names.RECORD_BASELINES, {"baseline_id": baseline_id, "report": report})


def gpu_job(
    label: str,
    work: Callable[[context.GpuWorker, tuple[str, ...] | None], Result],
    failed: Callable[[Exception], Result],
    started: Callable[[], None] | None = None,
    gpus: int = 1,
) -> Result:
    """The skeleton of every job here: its GPUs held (in a worker of several), a clean GPU,
    then the work, handed the GPUs it holds; a failure of the grader itself still ends the
    job with a report, so nothing is stranded."""
    worker = context.current()
    with held_gpus(worker, gpus) as held:
        if worker.device == "cuda":
            refuse_unclean_gpu(worker, label)
        if started is not None:
            started()
        try:
            return work(worker, held)
        except Exception as exc:
            log.exception("%s failed inside the grader", label)
            return failed(exc)


@contextmanager
def held_gpus(worker: context.GpuWorker, count: int) -> Iterator[tuple[str, ...] | None]:
    """In a worker of several GPUs, `count` of them, this pool process's own among them, that
    no other grading of the worker holds, for the block (waiting for them first); None in a
    worker of one GPU or of the CPU, whose gradings use what CUDA_VISIBLE_DEVICES names."""
    if not worker.gpus or worker.lease_folder is None:
        yield None
        return
    lease = GpuLease(Path(worker.lease_folder), worker.gpus)
    with lease.hold(count, context.own_gpu(worker)) as held:
        yield held


def gpus_needed(payload: dict[str, Any], worker: context.GpuWorker) -> int:
    """The GPUs a grading of the job's problem holds on this worker's device (as the
    dispatcher counted them: grader/problem.py); 1 where the problem does not load, which
    the grading then reports."""
    try:
        return problem_of(payload).gpus_for(worker.device)
    except Exception:
        return 1


def refuse_unclean_gpu(worker: context.GpuWorker, job: str) -> None:
    """Grade only on a GPU as clean as at the worker's start, once the worker's own processes
    are counted out: this pool process and the runner it keeps started for the next grading.
    Anything else in use belongs to someone else: most likely a previous submission that
    outlived its grading. Put the job back for another worker and take this one out of
    service."""
    own = frozenset({os.getpid(), *STANDBY.pids()})
    problem = wait_until_clean(worker.gpu_baseline, own) if worker.gpu_baseline else ""
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
    """Hand a result to the results queue, retrying while the broker is away (for up to
    DELIVERY_BUDGET_S). The job is acknowledged only after this returns, so a result that
    cannot be sent fails the job instead of vanishing with it (the outbox's sweeper then
    sends the job again). Kombu's own retries cover a publish on an open channel; a channel
    that must be opened anew (the link dropped, a progress message's failed send closed it)
    fails at once, so this tries again itself."""
    result = {**result, "worker": context.worker_name()}
    deadline = time.monotonic() + DELIVERY_BUDGET_S
    while True:
        try:
            celery_app.send_task(
                task, args=[result], queue=RESULTS_QUEUE, retry=True, retry_policy=DELIVERY_RETRY
            )
            return
        except KombuOperationalError as exc:
            if time.monotonic() >= deadline:
                raise
            log.warning("the results queue cannot be reached (%s); trying again", exc)
            time.sleep(DELIVERY_PAUSE_S)


def send_progress(message: dict[str, Any]) -> None:
    """Once, without retrying: the next progress, or the report, follows soon enough."""
    celery_app.send_task(
        task_names.RECORD_PROGRESS,
        args=[{**message, "worker": context.worker_name()}],
        queue=RESULTS_QUEUE,
        retry=False,
    )


def notify(task: str, *args: Any) -> None:
    """Best effort: a lost "started" only leaves the submission queued until its report."""
    try:
        celery_app.send_task(task, args=list(args), queue=RESULTS_QUEUE, retry=False)
    except Exception:
        log.warning("could not tell the results step that %s started", args, exc_info=True)
