"""Accepting a submission, sending it to its device's queue, and recording its report once."""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from celery import chain
from sqlalchemy.orm import Session

from grader.problem import problem_from_files
from server.errors import BadRequest, NotFound, PayloadTooLarge
from server.models import Problem, Run, Submission, User, utcnow
from server.problems import service as problems
from server.queue import RESULTS_QUEUE
from server.settings import Settings
from server.submissions import repository, tasks

log = logging.getLogger(__name__)

MODES = ("test", "benchmark", "leaderboard")
TERMINAL = frozenset({"passed", "failed", "error", "timeout", "rejected"})


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


def create_submission(
    session: Session,
    settings: Settings,
    user: User,
    *,
    problem_name: str,
    code: str,
    mode: str,
    gpu: str | None,
) -> Submission:
    if mode not in MODES:
        raise BadRequest(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    problem = problems.get_visible_problem(session, problem_name, user)
    gpu_type = choose_gpu_type(problem, settings, gpu)
    validate_code(code, settings)
    submission = Submission(
        user_id=user.id,
        problem_id=problem.id,
        problem_version=problem.version,
        code=code,
        code_sha256=hashlib.sha256(code.encode()).hexdigest(),
        mode=mode,
        gpu_type=gpu_type,
        status="queued",
        flags=[],
    )
    session.add(submission)
    session.flush()
    return submission


def choose_gpu_type(problem: Problem, settings: Settings, gpu: str | None) -> str:
    offered = problems.gpu_types_for(problem, settings)
    if gpu is None:
        if not offered:
            raise BadRequest(f"problem {problem.name!r} is not offered on any device type here")
        return offered[0]
    gpu = gpu.lower()
    if gpu not in offered:
        raise BadRequest(
            f"unknown GPU type {gpu!r} for problem {problem.name!r}; "
            f"available: {', '.join(offered) or 'none'}"
        )
    return gpu


def enqueue(submission: Submission, settings: Settings) -> None:
    """Send the grading; call only after the submission's row has been committed."""
    problem = submission.problem
    limit = problem_from_files(problem.name, problem.files).timeout_for(submission.mode)
    payload = {
        "problem": {"name": problem.name, "version": problem.version, "files": problem.files},
        "code": submission.code,
        "mode": submission.mode,
        "secret_seed": problem.secret_seed if submission.mode == "leaderboard" else None,
        "timeout_s": min(limit, settings.grading_timeout_s),
    }
    chain(
        tasks.grade.si(submission.id, payload).set(queue=submission.gpu_type),
        tasks.record_report.s().set(queue=RESULTS_QUEUE),
    ).apply_async()


def get_submission_for(session: Session, submission_id: int, user: User) -> Submission:
    submission = repository.get_submission(session, submission_id)
    if submission is None or (submission.user_id != user.id and not user.is_admin):
        raise NotFound(f"no submission {submission_id} of yours")
    return submission


def mark_running(session: Session, submission_id: int, worker: str) -> None:
    submission = repository.get_submission(session, submission_id, for_update=True)
    if submission is None or submission.status != "queued":
        return
    submission.status = "running"
    submission.started_at = utcnow()
    submission.worker = worker


def record_report(
    session: Session, submission_id: int, report: dict[str, Any], worker: str
) -> bool:
    """Write a report; a report for a submission that already has one is ignored, so a job
    graded twice (a worker died after grading, the message came again) is recorded once."""
    submission = repository.get_submission(session, submission_id, for_update=True)
    if submission is None:
        log.warning("report for unknown submission %s dropped", submission_id)
        return False
    if submission.status in TERMINAL:
        log.info(
            "submission %s already recorded as %s; duplicate dropped",
            submission_id,
            submission.status,
        )
        return False
    status = report.get("status")
    if status not in TERMINAL:
        report = {**report, "message": f"the worker returned an invalid status {status!r}"}
        status = "error"
    submission.status = str(status)
    score = report.get("score")
    submission.score = (
        float(score) if status == "passed" and isinstance(score, int | float) else None
    )
    submission.message = str(report.get("message", ""))
    submission.flags = [str(flag) for flag in report.get("flags", [])]
    submission.report = report
    submission.worker = worker
    submission.started_at = submission.started_at or utcnow()
    submission.finished_at = utcnow()
    for index, case in enumerate(report.get("cases", [])):
        submission.runs.append(run_from_case(index, case))
    return True


def run_from_case(index: int, case: dict[str, Any]) -> Run:
    timing = case.get("time") or {}
    return Run(
        index=index,
        kind=str(case.get("kind", "test")),
        params=dict(case.get("params", {})),
        status=str(case.get("status", "error")),
        message=str(case.get("message", "")),
        median_s=timing.get("median_s"),
        mean_s=timing.get("mean_s"),
        min_s=timing.get("min_s"),
        cv=timing.get("cv"),
        samples=timing.get("samples"),
    )
