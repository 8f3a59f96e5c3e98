"""docs/operations.md's promises under faults, in the production shape on a PostgreSQL
cluster and a Redis server of the test's own: while a careful client submits, a worker is
killed mid-grading, Redis restarts (without its data, then with its append-only file) and
PostgreSQL restarts; every accepted submission is graded and recorded exactly once, and no
client ever sees a 500. Then two promises of the outbox's sweeper: a job is sent again only
when the broker lost it, and two API hosts' sweepers send a waiting job once. The rig is
rig/faults.py (bench/faults.py runs the scenario with more submissions)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from rig.faults import (
    FAULT_SETTINGS,
    GRADED,
    KERNEL,
    Client,
    Fault,
    Install,
    Outcome,
    grade_messages_per_submission,
    graded_by,
    production_install,
    run_scenario,
    tails_on_failure,
    wait_for_line,
    wait_for_verdicts,
)
from server import anonymous
from server.leaderboards.service import PROBLEM_TTL_S
from server.models import OutboxMessage, Submission

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("server_binaries")]

# A test-mode CPU grading takes about a second on two cores once the worker keeps its next
# runner started: sixty, a fault at each fifth of them, keep jobs queued and running when
# each fault strikes and fit in about a minute with two workers (bench/faults.py runs more).
# An outage outlasts the anonymous pages' copies (ANONYMOUS_COPY_S) and a sweep.
SUBMISSIONS = 60
OUTAGE_S = 6.0
SWEEP_INTERVAL_S = float(FAULT_SETTINGS["sweep_interval_s"])
SWEEP_GRACE_S = float(FAULT_SETTINGS["sweep_grace_s"])
# How long a page may be answered from memory after the database went away.
ANONYMOUS_COPY_S = anonymous.STALE_S + PROBLEM_TTL_S
RECEIVED = re.compile(r"Task kerneljudge\.grade\[[^]]+\] received")


@pytest.mark.timeout(600)
def test_worker_redis_and_postgres_faults_lose_nothing_and_record_each_submission_once(
    tmp_path: Path,
) -> None:
    with (
        tails_on_failure(tmp_path / "logs"),
        production_install(tmp_path, workers=2) as install,
    ):
        outcome = run_scenario(
            install,
            submissions=SUBMISSIONS,
            pace_s=0.4,
            faults=("worker", "redis", "postgres"),
            outage_s=OUTAGE_S,
            drain_timeout_s=300,
        )
        print_outcome(outcome)
        killed, redis_down, postgres_down = outcome.faults
        assert_served_as_promised(outcome)
        assert_recorded_once(outcome)
        assert_killed_gradings_handed_on(install, killed)
        # Redis away: degraded, pages served, and submissions still accepted (they wait
        # in the outbox).
        assert_samples_said(redis_down, 200, "degraded", page=200)
        assert accepted_during(outcome, redis_down) > 0
        # PostgreSQL away: 503 with Retry-After to /healthz, pages and clients alike.
        assert_samples_said(postgres_down, 503, "unavailable", page=503)
        assert outcome.tally.client_answers.get("503", 0) > 0


@pytest.mark.timeout(300)
def test_redis_restarted_with_its_append_only_file_keeps_its_jobs(tmp_path: Path) -> None:
    """One worker, a few jobs queued in Redis behind the one it grades (sent ahead of it:
    KJ_DISPATCH_AHEAD), and Redis stopped for 5 s with `appendonly yes`: it comes back
    holding every job it held, queued or running. Each grading takes over a second (the
    kernel sleeps as it loads), so the worker cannot drain the queue before Redis stops."""
    with (
        tails_on_failure(tmp_path / "logs"),
        production_install(tmp_path, workers=1, appendonly=True, dispatch_ahead=10) as install,
    ):
        outcome = run_scenario(
            install,
            submissions=15,
            pace_s=0.2,
            faults=("redis",),
            outage_s=5.0,
            drain_timeout_s=180,
            kernel=f"import time\ntime.sleep(1.5)\n{KERNEL}",
        )
        print_outcome(outcome)
        (restart,) = outcome.faults
        assert_served_as_promised(outcome)
        assert_recorded_once(outcome)
        assert_samples_said(restart, 200, "degraded", page=200)
        assert len(restart.held_before) >= 3, "too few jobs were queued to show anything"
        assert restart.held_before <= restart.held_after


@pytest.mark.timeout(240)
def test_a_job_whose_report_waits_to_be_recorded_is_not_sent_again(tmp_path: Path) -> None:
    """operations.md: the sweeper sends a job again only when its result is not recorded
    *and the broker holds no copy of it*. A finished grading's report waiting in the
    results step (the results queue, or retries while the database is away: up to a minute
    apart) is such a copy; sending the job again only grades it a second time. Here the
    submission's row is held by another transaction, as a slow or failing-over database
    would hold the results step, for a few of the sweeper's passes."""
    with (
        tails_on_failure(tmp_path / "logs"),
        production_install(tmp_path, workers=1) as install,
    ):
        client = Client(install.base, install.token, count=1, pace_s=0.0)
        client.submit_all()
        (attempt,) = client.accepted
        assert attempt.submission_id is not None
        worker_log = install.workers[0].log
        with install.database() as engine, engine.begin() as connection:
            connection.execute(
                select(Submission.id)
                .where(Submission.id == attempt.submission_id)
                .with_for_update()
            )
            # Graded, its report handed to the results queue, the job acknowledged.
            wait_for_line(worker_log, GRADED, timeout_s=120)
            time.sleep(SWEEP_GRACE_S + 3 * SWEEP_INTERVAL_S)
        wait_for_verdicts(install, [attempt.submission_id], timeout_s=60)
        with install.database() as engine, engine.connect() as connection:
            sends = connection.scalar(
                select(OutboxMessage.sends).where(OutboxMessage.subject_id == attempt.submission_id)
            )
        given = len(RECEIVED.findall(worker_log.read_text()))
        assert sends == 1, f"the job was sent {sends} times; the worker was given it {given} times"


@pytest.mark.timeout(240)
def test_two_api_hosts_sweepers_send_each_lost_job_once(tmp_path: Path) -> None:
    """server/outbox/jobs.py: "Two sweepers (two API hosts) take different rows." Jobs
    queued in Redis (here all of them, sent ahead: KJ_DISPATCH_AHEAD) when it restarts
    without persistence are lost; both API hosts' sweepers notice, and between them each
    job must be sent again once, not twice."""
    queued = 150
    with (
        tails_on_failure(tmp_path / "logs"),
        production_install(tmp_path, workers=0, api_hosts=2, dispatch_ahead=queued) as install,
    ):
        client = Client(install.base, install.token, count=queued, pace_s=0.0)
        client.submit_all()
        assert len(client.accepted) == queued
        # Jobs leave after the commit, from a sender thread: all in Redis before it goes.
        wait_until_each_sent(install, times=1, count=queued)
        install.redis.stop()
        install.redis.start()
        wait_until_each_sent(install, times=2, count=queued)
        time.sleep(SWEEP_GRACE_S)  # a pass still sending when the last row went out ends
        with install.redis.client() as broker:
            per_submission = grade_messages_per_submission(broker)
        assert len(per_submission) == queued
        sent_twice = sorted(sid for sid, n in per_submission.items() if n > 1)
        assert len(sent_twice) == 0, f"{len(sent_twice)} of {queued} lost jobs sent again twice"


def wait_until_each_sent(install: Install, times: int, count: int, timeout_s: float = 60) -> None:
    """Until ``count`` outbox rows say they were sent ``times`` times or more."""
    deadline = time.monotonic() + timeout_s
    while True:
        with install.database() as engine, engine.connect() as connection:
            sent = connection.scalar(
                select(func.count()).select_from(OutboxMessage).where(OutboxMessage.sends >= times)
            )
        if sent == count:
            return
        assert time.monotonic() < deadline, f"{sent} of {count} jobs were sent {times} times"
        time.sleep(0.5)


def print_outcome(outcome: Outcome) -> None:
    """Shown with -s, and with a failure: the numbers and the slowest verdict."""
    print(outcome.tally.summary())
    print(f"every verdict in {outcome.drain_s:.1f} s after the client's last 202")
    for fault in outcome.faults:
        said = sorted(
            {f"{s.status_code} {s.status}, page {s.page_status_code}" for s in fault.samples}
        )
        print(f"{fault.name}: {fault.ended - fault.started:.1f} s; the API said {said}")


def assert_served_as_promised(outcome: Outcome) -> None:
    """Every submission got its 202 in the end, through 503s with Retry-After and
    connection errors only: never a 500 or any other answer a retry cannot mend."""
    tally = outcome.tally
    assert tally.unexpected == []
    assert "500" not in tally.client_answers
    assert tally.given_up == []
    assert tally.retry_after_missing == 0
    assert tally.accepted == tally.submitted == outcome.client.count


def assert_recorded_once(outcome: Outcome) -> None:
    """One row per accepted key and none without a 202; each graded (passed) once; nothing
    left queued or running."""
    tally = outcome.tally
    assert tally.rows_per_key_not_one == {}
    assert tally.rows_without_202 == []
    assert tally.ids_not_as_answered == []
    assert tally.stuck == [], f"still queued or running: {tally.stuck}"
    assert tally.verdicts == {"passed": tally.accepted}
    assert len(tally.seconds_to_verdict) == tally.accepted
    assert tally.outbox_not_done == 0


def assert_killed_gradings_handed_on(install: Install, fault: Fault) -> None:
    """The job a SIGKILL interrupted is graded again by another worker (after the
    visibility timeout), and that grading's report is the one recorded."""
    assert fault.victims, "no grading was interrupted"
    for submission_id, killed_process in fault.victims.items():
        assert graded_by(install, submission_id) not in ("", "None", killed_process)


def assert_samples_said(fault: Fault, status_code: int, status: str, *, page: int) -> None:
    """/healthz asks the database and the broker every time; the leaderboard page may be
    answered from the copy kept for anonymous readers (half a second) and the problem read
    with it (half a second more), so it says what the fault means from then on."""
    assert len(fault.samples) >= 3, fault
    health = {(sample.status_code, sample.status) for sample in fault.samples}
    assert health == {(status_code, status)}, f"{fault.name}: /healthz said {health}"
    settled = [s for s in fault.samples if s.at > fault.started + ANONYMOUS_COPY_S]
    pages = {sample.page_status_code for sample in settled}
    assert pages == {page}, f"{fault.name}: the leaderboard page said {pages}"
    if status_code == 503:
        assert all(s.retry_after for s in fault.samples)
        assert all(s.page_retry_after for s in settled)


def accepted_during(outcome: Outcome, fault: Fault) -> int:
    return sum(
        1
        for attempt in outcome.client.accepted
        if attempt.accepted_at is not None and fault.started <= attempt.accepted_at <= fault.ended
    )
