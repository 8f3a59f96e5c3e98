"""The names of the outbox's jobs and of the Celery tasks, stated once: the tasks are
declared under them (server/worker/), and everything that sends or reads a message refers
to them here, so nothing that sends a job imports a task. The task names are a contract
with running workers: a worker of an older release must still find its task by its name."""

from __future__ import annotations

from enum import StrEnum


class Job(StrEnum):
    """A job of the outbox, as its rows name it."""

    GRADE = "grade"  # subject: a submission
    VALIDATE = "validate"  # subject: a problem validation (one version, one device type)
    BASELINE = "baseline"  # subject: a problem's baselines (one version, one device type)
    CALLBACK = "callback"  # subject: a batch item's verdict on its way to a callback URL


# Jobs for a device's queue, run by a grading worker.
GRADE = "kerneljudge.grade"
VALIDATE_PROBLEM = "kerneljudge.validate_problem"
TIME_BASELINES = "kerneljudge.time_baselines"
# The results step, on the results queue next to the API: what workers send back.
RECORD_STARTED = "kerneljudge.record_started"
RECORD_PROGRESS = "kerneljudge.record_progress"
RECORD_REPORT = "kerneljudge.record_report"
RECORD_FILE = "kerneljudge.record_file"
RECORD_VALIDATION = "kerneljudge.record_validation"
RECORD_BASELINES = "kerneljudge.record_baselines"
RECORD_SLOT = "kerneljudge.record_slot"
# On the callbacks queue, next to the API: a batch item's verdict POSTed to its callback URL.
DELIVER_CALLBACK = "kerneljudge.deliver_callback"

# The task that runs each job.
TASKS = {
    Job.GRADE: GRADE,
    Job.VALIDATE: VALIDATE_PROBLEM,
    Job.BASELINE: TIME_BASELINES,
    Job.CALLBACK: DELIVER_CALLBACK,
}
# The results step's tasks that carry a job's report, and which key of their one argument
# names the job's subject.
REPORTS = {
    RECORD_REPORT: (Job.GRADE, "submission_id"),
    RECORD_VALIDATION: (Job.VALIDATE, "validation_id"),
    RECORD_BASELINES: (Job.BASELINE, "baseline_id"),
}


# A grading that holds several GPUs goes to a queue of its size beside its device queue's
# ("h100.x4" for four on "h100"), and a worker of N GPUs takes from its device queue and
# from every size up to N: any worker on a queue may take any of its messages, so only
# sizes keep a grading from a worker too small for it (server/outbox/dispatch.py).
SIZE_SEPARATOR = ".x"


def sized_queue(queue: str, gpus: int) -> str:
    """The queue a grading of `gpus` GPUs dispatched on `queue` is sent to."""
    return queue if gpus <= 1 else f"{queue}{SIZE_SEPARATOR}{gpus}"


def queues_taken(queue: str, gpus: int) -> list[str]:
    """The queues a worker of `gpus` GPUs takes gradings of `queue` from: every size it holds."""
    return [sized_queue(queue, size) for size in range(1, max(1, gpus) + 1)]
