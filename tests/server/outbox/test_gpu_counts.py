"""Gradings that hold several GPUs: a problem whose cases span ranks holds, on a GPU device
type, one GPU per rank of its largest world size; the dispatcher counts a queue's room in GPUs,
sends a grading only when its GPUs are free, holds later ones behind it, and never sends one
that no worker seen on the queue can hold, whose submission then says why. In this process
(SQLite, the embedded broker, no worker): slots say hello as pool processes do, and starts
and ends are recorded as the results step records them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, delete, select, text, update

from server.cli import worker_argv
from server.db import session_scope
from server.models import GradingSlot, OutboxMessage, Problem, Submission, utcnow
from server.outbox import embedded, jobs, places
from server.outbox.task_names import queues_taken, sized_queue
from server.settings import get_settings
from server.submissions import service
from server.worker import recorders
from tests.server.conftest import Account, changed_settings, make_account, worker_report
from tests.server.outbox.test_outbox import HONEST
from tests.server.web_client import HTML, client_at, log_in, make_user

pytestmark = pytest.mark.anyio

QUEUE = "h100"
RANKS_CODE = """
import torch.distributed as dist
def custom_kernel(data):
    out = data.clone()
    dist.all_reduce(out)
    return out
"""


@pytest.fixture(autouse=True)
def gpu_queue() -> Iterator[None]:
    """An h100 device type beside the CPU, on which the built-in allreduce (world sizes 2
    and 4) is offered; no grading of an earlier test waits, and no slot of one counts."""
    with session_scope() as session:
        session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.job == jobs.Job.GRADE, OutboxMessage.done_at.is_(None))
            .values(done_at=utcnow())
        )
        session.execute(delete(GradingSlot))
        session.execute(update(Submission).values(worker=None))
        allreduce = session.scalars(select(Problem).where(Problem.name == "allreduce")).one()
        offered = list(allreduce.gpu_types)
        allreduce.gpu_types = [*offered, QUEUE]
    places.forget()
    try:
        with changed_settings(gpu_types=f"cpu,{QUEUE}"):
            yield
    finally:
        with session_scope() as session:
            allreduce = session.scalars(select(Problem).where(Problem.name == "allreduce")).one()
            allreduce.gpu_types = offered
        places.forget()


async def submit(
    client: httpx.AsyncClient, account: Account, problem: str = "vectoradd", gpu: str = QUEUE
) -> int:
    code = RANKS_CODE if problem == "allreduce" else HONEST
    body = {"problem": problem, "code": code, "mode": "test", "gpu": gpu}
    response = await client.post("/api/v1/submissions", json=body, headers=account.headers)
    assert response.status_code == 202, response.text
    jobs.drain_sender()
    return int(response.json()["id"])


def job_of(submission_id: int) -> OutboxMessage:
    with session_scope() as session:
        row = session.scalars(
            select(OutboxMessage).where(
                OutboxMessage.job == jobs.Job.GRADE, OutboxMessage.subject_id == submission_id
            )
        ).one()
        session.expunge(row)
    return row


def sent() -> list[int]:
    """The submissions whose grading went to the h100 queues and is not recorded, in order."""
    with session_scope() as session:
        rows = session.execute(
            select(OutboxMessage.subject_id)
            .where(
                OutboxMessage.job == jobs.Job.GRADE,
                OutboxMessage.queue == QUEUE,
                OutboxMessage.sent_at.is_not(None),
                OutboxMessage.done_at.is_(None),
            )
            .order_by(OutboxMessage.sent_at, OutboxMessage.id)
        ).all()
    return [row[0] for row in rows]


def say_hello(worker: str, gpus: int, slots: int) -> None:
    """A worker of `gpus` GPUs starts `slots` pool processes, each saying it is there."""
    for slot in range(slots):
        recorders.record_slot(f"{worker}.{slot}", [QUEUE], *([gpus] if gpus > 1 else []))


def start(submission_id: int, slot: str) -> None:
    with session_scope() as session:
        assert service.mark_running(session, submission_id, slot) == QUEUE
    jobs.dispatch_after(QUEUE)


def finish(submission_id: int, slot: str) -> None:
    with session_scope() as session:
        service.record_report(session, submission_id, worker_report("passed"), slot)
    jobs.dispatch_after(QUEUE)


def broker_queue(task_id: str | None) -> str | None:
    """The queue of the embedded broker that holds the message of this task."""
    engine = create_engine(embedded.database_url(get_settings().resolved_broker_url))
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT q.name, m.payload FROM kombu_message m "
                    "JOIN kombu_queue q ON q.id = m.queue_id"
                )
            ).all()
    finally:
        engine.dispose()
    return next((name for name, payload in rows if task_id and task_id in str(payload)), None)


async def body_of(client: httpx.AsyncClient, account: Account, submission_id: int) -> Any:
    places.forget()
    response = await client.get(f"/api/v1/submissions/{submission_id}", headers=account.headers)
    return response.json()


async def test_a_grading_holds_one_gpu_per_rank_of_its_largest_world_size_on_a_gpu(
    client: httpx.AsyncClient,
) -> None:
    ada = make_account()
    say_hello("big:1", gpus=4, slots=4)
    assert job_of(await submit(client, ada, "allreduce")).gpus == 4
    assert job_of(await submit(client, ada, "allreduce", gpu="cpu")).gpus == 1
    assert job_of(await submit(client, ada)).gpus == 1


async def test_a_four_gpu_grading_waits_for_four_free_gpus_and_holds_later_ones_behind_it(
    client: httpx.AsyncClient,
) -> None:
    ada, bob, cyd = make_account(), make_account(), make_account()
    say_hello("big:1", gpus=4, slots=4)
    first = await submit(client, ada)
    assert sent() == [first]  # one GPU of four
    ranks = await submit(client, bob, "allreduce")
    after = await submit(client, cyd)
    # Three GPUs are free: not enough for the four-GPU grading, and the one-GPU grading
    # behind it does not go first.
    assert sent() == [first]
    start(first, "big:1.0")
    assert sent() == [first]
    finish(first, "big:1.0")
    assert sent() == [ranks]  # all four GPUs free: it goes, to the queue of its size
    ranks_job = job_of(ranks)
    assert broker_queue(ranks_job.task_id) == "h100.x4"
    assert broker_queue(job_of(first).task_id) == QUEUE
    start(ranks, "big:1.1")
    assert sent() == [ranks]  # it holds every GPU
    finish(ranks, "big:1.1")
    assert sent() == [after]


async def test_one_gpu_gradings_go_as_before_beside_gradings_of_several(
    client: httpx.AsyncClient,
) -> None:
    """Two workers of one GPU each: two one-GPU gradings at once, the third waits."""
    ada = make_account()
    say_hello("one:1", gpus=1, slots=1)
    say_hello("one:2", gpus=1, slots=1)
    graded = [await submit(client, ada) for _ in range(3)]
    assert sent() == graded[:2]
    with session_scope() as session:
        assert set(session.scalars(select(GradingSlot.gpus))) == {1}
    start(graded[0], "one:1.0")
    finish(graded[0], "one:1.0")
    assert sent() == graded[1:]


async def test_a_grading_bigger_than_every_worker_is_never_sent_and_says_why(
    client: httpx.AsyncClient,
) -> None:
    ada, bob = Account(*make_user("gpus")), make_account()
    ranks = await submit(client, ada, "allreduce")
    body = await body_of(client, ada, ranks)
    assert body["status"] == "queued" and body["expected_wait_s"] is None
    assert "needs 4 GPUs at once" in body["message"]
    assert "no worker of h100 has been seen lately" in body["message"]
    say_hello("small:1", gpus=2, slots=2)
    small = await submit(client, bob)
    # Two GPUs free, and the four-GPU grading passed over: it can never fit these workers.
    assert sent() == [small]
    body = await body_of(client, ada, ranks)
    assert body["message"] == (
        "it needs 4 GPUs at once, and the largest worker of h100 seen lately owns 2 GPUs; "
        "it starts once one that owns 4 is"
    )
    async with client_at("10.31.0.1") as browser:
        assert (await log_in(browser, ada.name)).status_code == 303
        page = await browser.get(f"/submissions/{ranks}", headers=HTML)
    assert "largest worker of h100 seen lately owns 2 GPUs" in page.text
    say_hello("big:2", gpus=4, slots=4)  # six GPUs, one busy: room for it now
    assert sent() == [small, ranks]
    assert broker_queue(job_of(ranks).task_id) == "h100.x4"
    body = await body_of(client, ada, ranks)
    assert "GPUs at once" not in (body["message"] or "")


def test_a_worker_takes_the_queues_of_every_size_it_holds_and_none_larger() -> None:
    """Any worker on a queue may take any message of it: a grading of four GPUs goes to a
    queue that no worker of two listens on."""
    two = worker_argv([QUEUE], grading=True, concurrency=2, gpus=2)
    taken = two[two.index("--queues") + 1].split(",")
    assert taken == ["h100", "h100.x2"]
    assert sized_queue(QUEUE, 4) not in taken
    four = worker_argv([QUEUE], grading=True, concurrency=4, gpus=4)
    assert sized_queue(QUEUE, 4) in four[four.index("--queues") + 1].split(",")
    # A worker of one GPU takes its device queue alone, as it always has.
    one = worker_argv([QUEUE], grading=True, concurrency=1)
    assert one[one.index("--queues") + 1] == QUEUE
    assert queues_taken(QUEUE, 1) == [QUEUE] and sized_queue(QUEUE, 1) == QUEUE
    results = worker_argv(["results"], grading=False, concurrency=1, gpus=4)
    assert results[results.index("--queues") + 1] == "results"
