"""The outbox: a job exists exactly when the change that needs it commits, is sent then,
and is sent again by the sweeper while its result is missing and the broker holds no copy.
In this process: SQLite and the embedded broker (messages really sent; no worker here)."""

from __future__ import annotations

import time
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select, update

from server.db import session_scope
from server.models import OutboxMessage, Submission, utcnow
from server.outbox import broker, jobs
from server.settings import get_settings
from server.submissions import service
from server.users.service import authenticate
from tests.server.conftest import Account, worker_report

pytestmark = pytest.mark.anyio

HONEST = """
import torch
def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
"""


@pytest.fixture(autouse=True)
def empty_queue() -> None:
    """Each test starts with no grading waiting on the cpu queue: the jobs of earlier tests
    (no worker takes them here) are done, so this test's job is the next to go."""
    with session_scope() as session:
        session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.job == jobs.Job.GRADE, OutboxMessage.done_at.is_(None))
            .values(done_at=utcnow())
        )


async def submit(client: httpx.AsyncClient, account: Account, **extra: str) -> httpx.Response:
    body = {"problem": "vectoradd", "code": HONEST, "mode": "test", **extra}
    return await client.post("/api/v1/submissions", json=body, headers=account.headers)


def outbox_of(submission_id: int) -> list[OutboxMessage]:
    with session_scope() as session:
        return list(
            session.scalars(
                select(OutboxMessage).where(
                    OutboxMessage.job == jobs.Job.GRADE, OutboxMessage.subject_id == submission_id
                )
            )
        )


def held_now() -> frozenset[str]:
    return broker.held(get_settings(), {"cpu"}).task_ids


def sent_job(submission_id: int) -> OutboxMessage:
    """The submission's job once the sender thread has sent it (it sends right after the
    commit, on a thread of its own)."""
    deadline = time.monotonic() + 10
    while True:
        [job] = outbox_of(submission_id)
        if job.sent_at is not None or time.monotonic() > deadline:
            return job
        time.sleep(0.02)


async def test_an_accepted_submission_is_sent_once_its_row_commits(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await submit(client, alice)
    assert response.status_code == 202, response.text
    job = sent_job(response.json()["id"])
    assert job.sent_at is not None and job.sends == 1 and job.done_at is None
    assert job.task_id in held_now()


async def test_a_refused_submission_leaves_no_job(
    client: httpx.AsyncClient, alice: Account
) -> None:
    with session_scope() as session:
        before = session.scalar(select(OutboxMessage.id).order_by(OutboxMessage.id.desc()))
    refused = await submit(client, alice, gpu="h999")
    assert refused.status_code == 422
    with session_scope() as session:
        after = session.scalar(select(OutboxMessage.id).order_by(OutboxMessage.id.desc()))
    assert after == before


async def test_the_sweeper_sends_what_never_left(client: httpx.AsyncClient, alice: Account) -> None:
    """A send that failed after the commit (the broker was away) is made by the sweeper."""
    sid = (await submit(client, alice)).json()["id"]
    sent_job(sid)
    with session_scope() as session:
        session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.subject_id == sid, OutboxMessage.job == jobs.Job.GRADE)
            .values(sent_at=None, task_id=None, sends=0)
        )
    with session_scope() as session:
        assert jobs.sweep(session, get_settings()) >= 1
    [job] = outbox_of(sid)
    assert job.sent_at is not None and job.sends == 1 and job.task_id in held_now()


async def test_a_job_the_broker_lost_is_sent_again(
    client: httpx.AsyncClient, alice: Account
) -> None:
    """The embedded broker cannot tell a taken job from a finished one, so a job it does not
    hold as waiting counts as lost once its time limit has passed since it was sent. One
    look at a broker can miss a message that a worker is taking at that moment, so the
    sweeper sends a job again only when two of its passes in a row miss it."""
    sid = (await submit(client, alice)).json()["id"]
    sent_job(sid)
    long_ago = utcnow() - timedelta(hours=2)
    with session_scope() as session:
        session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.subject_id == sid, OutboxMessage.job == jobs.Job.GRADE)
            .values(task_id="a-message-the-broker-lost", sent_at=long_ago)
        )
    with session_scope() as session:
        jobs.sweep(session, get_settings())
    assert outbox_of(sid)[0].sends == 1
    with session_scope() as session:
        jobs.sweep(session, get_settings())
    [job] = outbox_of(sid)
    assert job.sends == 2 and job.task_id != "a-message-the-broker-lost"
    assert job.task_id in held_now()


def swept_after(sid: int, **values: object) -> None:
    """`values` set on the submission's grading job, then one sweep."""
    with session_scope() as session:
        session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.subject_id == sid, OutboxMessage.job == jobs.Job.GRADE)
            .values(**values)
        )
    with session_scope() as session:
        jobs.sweep(session, get_settings())


async def test_a_job_waiting_in_the_broker_is_left_alone(
    client: httpx.AsyncClient, alice: Account
) -> None:
    sid = (await submit(client, alice)).json()["id"]
    sent_job(sid)
    swept_after(sid, sent_at=utcnow() - timedelta(hours=2))
    [job] = outbox_of(sid)
    assert job.sends == 1


async def test_a_recorded_report_ends_the_job(client: httpx.AsyncClient, alice: Account) -> None:
    sid = (await submit(client, alice)).json()["id"]
    sent_job(sid)
    report = worker_report("passed", message="ok")
    with session_scope() as session:
        assert service.record_report(session, sid, report, "host:1")
    [job] = outbox_of(sid)
    assert job.done_at is not None
    long_ago = utcnow() - timedelta(hours=2)
    with session_scope() as session:
        session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id == job.id)
            .values(sent_at=long_ago, task_id="gone")
        )
    with session_scope() as session:
        jobs.sweep(session, get_settings())
    assert outbox_of(sid)[0].sends == 1


async def test_a_job_whose_submission_was_graded_meanwhile_is_not_sent_again(
    client: httpx.AsyncClient, alice: Account
) -> None:
    """A verdict recorded by another path (an earlier copy of the job) ends the job too."""
    sid = (await submit(client, alice)).json()["id"]
    sent_job(sid)
    with session_scope() as session:
        submission = session.get(Submission, sid)
        assert submission is not None
        submission.status = "passed"
    swept_after(sid, sent_at=None)
    [job] = outbox_of(sid)
    assert job.done_at is not None and job.sends == 1


async def test_a_rerun_is_a_new_job(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    sid = (await submit(client, alice)).json()["id"]
    sent_job(sid)
    with session_scope() as session:
        service.record_report(session, sid, worker_report("failed"), "host:1")
    with session_scope() as session:
        service.moderate(session, sid, "rerun", authenticate(session, admin.token))
    deadline = time.monotonic() + 10
    while (grades := outbox_of(sid))[-1].sent_at is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(grades) == 2
    assert grades[0].done_at is not None
    assert grades[1].done_at is None and grades[1].sent_at is not None
