"""Queue tasks for problems. ``validate_problem`` runs on a worker of the device type being
validated, holds no database credentials and returns the report; ``record_validation``
runs on the ``results`` queue and writes it to the database."""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from server.queue import celery_app
from server.submissions.tasks import (
    WORKER_DEVICE_ENV,
    WORKER_PEAKS_ENV,
    refuse_unclean_gpu,
    worker_name,
)

log = logging.getLogger(__name__)


@celery_app.task(name="kerneljudge.validate_problem")
def validate_problem(validation_id: int, payload: dict[str, Any]) -> dict[str, Any]:
    """Validate one version of a problem on this worker's device."""
    from grader.calibrate import DevicePeaks
    from grader.problem import problem_from_files
    from grader.validate import validate
    from server.settings import get_settings

    device = os.environ.get(WORKER_DEVICE_ENV, "cpu")
    if device == "cuda":
        refuse_unclean_gpu(f"validation {validation_id}")
    measured = os.environ.get(WORKER_PEAKS_ENV)
    try:
        problem = problem_from_files(payload["problem"]["name"], payload["problem"]["files"])
        report = validate(
            problem,
            dict(payload.get("solutions") or {}),
            device=device,
            peaks=DevicePeaks.from_dict(json.loads(measured)) if measured else None,
            timeouts={k: float(v) for k, v in (payload.get("timeouts") or {}).items()},
            memory_bytes=int(get_settings().sandbox_memory_gib * (1 << 30)),
        ).to_dict()
    except Exception as exc:  # the problem must still leave "validating"
        log.exception("validation %s failed inside the validator", validation_id)
        report = {
            "status": "failed",
            "message": f"the validator failed on this worker ({type(exc).__name__}: {exc})",
            "checks": [],
        }
    return {"validation_id": validation_id, "worker": worker_name(), "report": report}


@celery_app.task(name="kerneljudge.record_validation")
def record_validation(result: dict[str, Any]) -> None:
    from server.db import session_scope
    from server.problems import validation

    with session_scope() as session:
        validation.record(session, result["validation_id"], result["report"], result["worker"])
