"""A final judging sent to a competition's judging queue, on PostgreSQL and Redis with real
workers: the entry is graded by the device type's worker while the competition is open; at
the close its judging's run waits on the judging queue (the command line says so) until a
worker started with `--queues` on that queue takes it, and that worker alone grades it, as
one of the competition's GPU type."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from sqlalchemy import select

from rig import competition as plan_
from rig.faults import (
    graded_by,
    production_install,
    tails_on_failure,
    wait_for_verdicts,
    wait_until_ready,
)
from rig.processes import add_user, submit
from server.models import JudgingRun, OutboxMessage, Submission
from server.outbox import jobs
from tests.integration.test_whole_competition import command, post

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.usefixtures("server_binaries")]

QUEUE = "cpu-final"
PROBLEM = "vectoradd"


@pytest.mark.timeout(600)
def test_the_judging_waits_on_its_queue_and_the_pinned_worker_grades_it(tmp_path: Path) -> None:
    with (
        tails_on_failure(tmp_path / "logs"),
        production_install(tmp_path, workers=1) as install,
    ):
        [device_worker] = install.workers
        token = add_user(install.env, "eve")
        plan = plan_.Plan.starting_in("pinned-sprint", 8, 6, 0, final_runs=1)
        fields = plan.fields() | {
            "problems": [{"name": PROBLEM}],
            "freeze_at": None,
            "judging_queue": QUEUE,
        }
        (tmp_path / "sprint.yml").write_text(yaml.safe_dump(fields, sort_keys=False))
        command(install.env, "competition", "add", str(tmp_path / "sprint.yml"))
        post(install, token, f"/api/v1/competitions/{plan.name}/register")
        plan_.wait_until(plan.opens_at)
        entry = submit(install.base, token, PROBLEM, plan_.kernel(PROBLEM), "leaderboard")
        wait_for_verdicts(install, [entry], timeout_s=120)
        assert device_worker.graded_as(graded_by(install, entry))
        plan_.wait_until(plan.closes_at)

        command(install.env, "competition", "judge", plan.name)
        waiting = command(install.env, "competition", "judging", plan.name)
        assert f"1 run waits on queue '{QUEUE}' (no worker seen on it lately" in waiting, waiting
        with install.database() as engine, engine.connect() as db:
            [run] = db.scalars(select(JudgingRun.submission_id)).all()
            queue = db.scalar(
                select(OutboxMessage.queue).where(
                    OutboxMessage.job == jobs.Job.GRADE, OutboxMessage.subject_id == run
                )
            )
        assert queue == QUEUE
        # The device type's worker is idle and leaves it there.
        time.sleep(5)
        with install.database() as engine, engine.connect() as db:
            assert db.scalar(select(Submission.status).where(Submission.id == run)) == "queued"

        pinned = install.start_worker(QUEUE)
        wait_until_ready(pinned)
        wait_for_verdicts(install, [run], timeout_s=180)
        with install.database() as engine, engine.connect() as db:
            status, gpu_type, worker = db.execute(
                select(Submission.status, Submission.gpu_type, Submission.worker).where(
                    Submission.id == run
                )
            ).one()
        assert (status, gpu_type) == ("passed", "cpu") and pinned.graded_as(worker), worker
        body = json.loads(command(install.env, "competition", "judging", plan.name, "--json"))
        assert body["status"] == "ready" and body["queue"] == QUEUE
        assert body["queue_workers"] >= 1
