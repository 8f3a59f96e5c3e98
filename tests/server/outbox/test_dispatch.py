"""Fair dispatch: a grading waits in the outbox until a worker of its queue is free, and the
waiting ones go in turn: test mode first, then users taking turns, oldest first. In this
process (SQLite, the embedded broker, no worker): a worker's start and end are recorded as
the results step records them, by one grading slot ("host:1")."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from sqlalchemy import delete, select, update

from server.db import session_scope
from server.models import GradingSlot, OutboxMessage, Submission, utcnow
from server.outbox import dispatch, jobs, places
from server.settings import get_settings
from server.submissions import service
from server.worker import recorders
from tests.server.conftest import Account, make_account, worker_report
from tests.server.outbox.test_outbox import HONEST

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def empty_queue() -> None:
    """No grading of an earlier test waits on the cpu queue (no worker takes them here), and
    no grading slot of an earlier test counts as one of its workers (a test that ran a grade
    task, or recorded a report, leaves its slot's name on a submission started lately)."""
    with session_scope() as session:
        session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.job == jobs.Job.GRADE, OutboxMessage.done_at.is_(None))
            .values(done_at=utcnow())
        )
        session.execute(delete(GradingSlot))
        session.execute(update(Submission).values(worker=None))
    places.forget()


async def submit(client: httpx.AsyncClient, account: Account, mode: str = "test") -> int:
    body = {"problem": "vectoradd", "code": HONEST, "mode": mode}
    response = await client.post("/api/v1/submissions", json=body, headers=account.headers)
    assert response.status_code == 202, response.text
    return int(response.json()["id"])


def sent() -> list[int]:
    """The submissions whose grading went to the queue, in the order they went."""
    with session_scope() as session:
        rows = session.execute(
            select(OutboxMessage.subject_id)
            .where(OutboxMessage.job == jobs.Job.GRADE, OutboxMessage.sent_at.is_not(None))
            .where(OutboxMessage.done_at.is_(None))
            .order_by(OutboxMessage.sent_at, OutboxMessage.id)
        ).all()
    return [row[0] for row in rows]


def wait_for_sender() -> None:
    """The API sends after the commit on a thread of its own; let it finish its pass."""
    jobs.drain_sender()


def start(submission_id: int) -> None:
    """A worker took the job: as record_started does (its queue has room again)."""
    with session_scope() as session:
        queue = service.mark_running(session, submission_id, "host:1")
    assert queue is not None
    jobs.dispatch_after(queue)


def finish(submission_id: int, seconds: float = 1.0) -> None:
    with session_scope() as session:
        service.record_report(session, submission_id, worker_report("passed"), "host:1")
        submission = session.get(Submission, submission_id)
        assert submission is not None and submission.finished_at is not None
        submission.started_at = submission.finished_at - timedelta(seconds=seconds)
    jobs.dispatch_after("cpu")


def graded_in_turn(count: int) -> list[int]:
    """The one free worker takes the waiting gradings one at a time, each to its end: the
    order in which the outbox sent them."""
    order = []
    for _ in range(count):
        [waiting] = sent()
        order.append(waiting)
        start(waiting)
        assert sent() == [waiting]  # nothing more while the worker is busy
        finish(waiting)
    return order


async def test_users_take_turns_so_one_backlog_does_not_hold_another_user_back(
    client: httpx.AsyncClient,
) -> None:
    ada, bob = make_account(), make_account()
    ada_jobs = [await submit(client, ada) for _ in range(3)]
    bob_job = await submit(client, bob)
    wait_for_sender()
    assert sent() == [ada_jobs[0]]  # one for the free worker; the rest wait in the outbox
    # Bob's turn comes before Ada's second.
    assert graded_in_turn(4) == [ada_jobs[0], bob_job, ada_jobs[1], ada_jobs[2]]


async def test_test_mode_goes_before_ranked_runs(client: httpx.AsyncClient) -> None:
    ada, bob = make_account(), make_account()
    first = await submit(client, ada, "leaderboard")
    ranked = await submit(client, ada, "leaderboard")
    quick = await submit(client, bob, "test")
    wait_for_sender()
    assert sent() == [first]
    start(first)
    finish(first)
    assert sent() == [quick]
    start(quick)
    finish(quick)
    assert sent() == [ranked]


async def test_a_queued_submission_shows_its_place_and_an_expected_wait(
    client: httpx.AsyncClient,
) -> None:
    ada, bob = make_account(), make_account()
    done = await submit(client, ada)
    wait_for_sender()
    start(done)
    finish(done, seconds=4.0)  # a test-mode grading on this queue took 4 s
    places.forget()
    running = await submit(client, ada)
    wait_for_sender()
    start(running)
    queued = [await submit(client, ada), await submit(client, ada), await submit(client, bob)]
    wait_for_sender()
    places.forget()
    seen = {}
    for submission_id, account in zip(queued, (ada, ada, bob), strict=True):
        url = f"/api/v1/submissions/{submission_id}"
        body = (await client.get(url, headers=account.headers)).json()
        seen[submission_id] = (body["queue_position"], body["expected_wait_s"])
    # Ada has a grading running, Bob none: his first goes before her next two.
    assert [seen[s][0] for s in queued] == [1, 2, 0]
    # From how long recent test-mode gradings on this queue took (the median of the last
    # ones: this test's 4 s among earlier tests' 1 s): the running one has up to that left,
    # and each submission ahead adds that.
    with session_scope() as session:
        typical = places.typical_durations(session, "cpu")[dispatch.priority("test")]
    assert seen[queued[2]][1] == pytest.approx(typical, abs=0.5)
    assert seen[queued[0]][1] == pytest.approx(2 * typical, abs=0.5)
    assert seen[queued[1]][1] == pytest.approx(3 * typical, abs=0.5)


async def test_a_grading_running_past_its_typical_time_is_expected_to_run_as_long_again(
    client: httpx.AsyncClient,
) -> None:
    """A hung kernel holds its worker until its limit: the wait behind it is not 'nothing
    left of the typical grading' but grows with the time it has held the worker."""
    ada, bob = make_account(), make_account()
    done = await submit(client, ada)
    wait_for_sender()
    start(done)
    finish(done, seconds=4.0)
    running = await submit(client, ada)
    wait_for_sender()
    start(running)
    with session_scope() as session:
        typical = places.typical_durations(session, "cpu")[dispatch.priority("test")]
        session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.subject_id == running, OutboxMessage.done_at.is_(None))
            .values(started_at=utcnow() - timedelta(seconds=3 * typical))
        )
    queued = await submit(client, bob)
    wait_for_sender()
    places.forget()
    body = (await client.get(f"/api/v1/submissions/{queued}", headers=bob.headers)).json()
    assert body["queue_position"] == 0
    # As long again as it has run (3 typical gradings), not the 0 left of a typical one.
    assert body["expected_wait_s"] == pytest.approx(3 * typical, abs=0.5)


async def test_the_sweeper_dispatches_what_the_results_step_left(
    client: httpx.AsyncClient,
) -> None:
    """A grading ended but the dispatch after it failed (the broker was away): the sweeper's
    next pass gives the free worker the next job."""
    ada = make_account()
    first, second = await submit(client, ada), await submit(client, ada)
    wait_for_sender()
    with session_scope() as session:
        service.mark_running(session, first, "host:1")
        service.record_report(
            session, first, worker_report("passed"), "host:1"
        )  # and no dispatch after it
    assert second not in sent()
    with session_scope() as session:
        assert jobs.sweep(session, get_settings()) >= 1
    assert sent() == [second]


async def test_more_workers_take_more_jobs_at_once(client: httpx.AsyncClient) -> None:
    """Two grading slots seen on the queue lately: two jobs go at once."""
    ada = make_account()
    earlier = await submit(client, ada)
    wait_for_sender()
    start(earlier)  # slot host:1 has graded on this queue
    finish(earlier)
    first, second, third = [await submit(client, ada) for _ in range(3)]
    wait_for_sender()
    with session_scope() as session:
        service.mark_running(session, first, "host:2")  # a second slot starts a job
    places.forget()
    jobs.dispatch_after("cpu")
    assert sent() == [first, second]
    start(second)
    assert sent() == [first, second]  # both slots busy: the third waits
    finish(first)
    assert sent() == [second, third]


async def test_a_new_submission_reads_its_place_from_the_queue_as_it_is_now(
    client: httpx.AsyncClient,
) -> None:
    """Polling reads a queue's order from a memo kept for a second; a submission made since
    then reads the queue afresh, so a job that started meanwhile is not counted ahead."""
    ada, bob = make_account(), make_account()
    running, waiting = await submit(client, ada), await submit(client, ada)
    wait_for_sender()
    url = f"/api/v1/submissions/{running}"
    body = (await client.get(url, headers=ada.headers)).json()  # the memo: it waits to start
    assert body["status"] == "queued" and body["queue_position"] == 0
    start(running)
    quick = await submit(client, bob)
    wait_for_sender()
    body = (await client.get(f"/api/v1/submissions/{quick}", headers=bob.headers)).json()
    assert body["status"] == "queued" and body["queue_position"] == 0  # before Ada's second
    body = (await client.get(f"/api/v1/submissions/{waiting}", headers=ada.headers)).json()
    assert body["queue_position"] == 1


async def test_new_submissions_read_the_same_places_as_a_fresh_read_of_the_queue(
    client: httpx.AsyncClient,
) -> None:
    """A submission made after the queue's memo was taken is placed in the memo's order
    without reading the whole queue again; the places it reads agree with a fresh read for
    users served before, never served, with backlogs of their own and in other modes."""
    ada, bob, cyd = make_account(), make_account(), make_account()
    running = await submit(client, ada)
    backlog = [await submit(client, ada) for _ in range(3)] + [await submit(client, bob)]
    wait_for_sender()
    start(running)
    url = f"/api/v1/submissions/{backlog[-1]}"  # Bob's, never served, before Ada's second
    assert (await client.get(url, headers=bob.headers)).json()["queue_position"] == 0  # memo
    made = [
        (bob, await submit(client, bob)),
        (cyd, await submit(client, cyd)),
        (ada, await submit(client, ada)),
        (cyd, await submit(client, cyd, "leaderboard")),
        (cyd, await submit(client, cyd)),
    ]
    wait_for_sender()
    quick = []
    for account, submission in made:
        body = await client.get(f"/api/v1/submissions/{submission}", headers=account.headers)
        quick.append(body.json()["queue_position"])
    fresh = []
    for account, submission in made:
        places.forget()
        body = await client.get(f"/api/v1/submissions/{submission}", headers=account.headers)
        fresh.append(body.json()["queue_position"])
    assert quick == fresh
    # Never served (Bob, Cyd) before served (Ada) at each turn; ranked runs last.
    assert fresh == [3, 1, 7, 8, 4]


async def test_a_worker_that_says_it_is_there_gets_a_job_before_it_has_graded_any(
    client: httpx.AsyncClient,
) -> None:
    """No slot has graded on the queue lately: one job goes, the rest wait. Two fresh
    slots say hello (as each pool process does when it starts): a second job goes at once,
    without waiting for the first to finish. A hello whose name is not a slot's is ignored."""
    with session_scope() as session:
        session.execute(delete(GradingSlot))
        session.execute(
            update(Submission)
            .where(Submission.started_at.is_not(None))
            .values(started_at=utcnow() - timedelta(hours=1))
        )
    places.forget()
    ada = make_account()
    first, second, third = [await submit(client, ada) for _ in range(3)]
    wait_for_sender()
    assert sent() == [first]
    recorders.record_slot("x" * 201, ["cpu"])
    recorders.record_slot("fresh:1", ["cpu", "", "q" * 40])
    assert sent() == [first]  # one slot counted, as before
    recorders.record_slot("fresh:2", ["cpu"])
    assert sent() == [first, second]
    with session_scope() as session:
        slots = session.scalars(select(GradingSlot.worker).order_by(GradingSlot.worker)).all()
    assert slots == ["fresh:1", "fresh:2"]
    recorders.record_slot("fresh:2", ["cpu"])  # the same slot again: still two
    assert sent() == [first, second]
    assert third not in sent()
