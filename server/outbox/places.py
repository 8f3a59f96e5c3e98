"""Where a waiting submission stands in its device's queue, read by the API at every poll:
the submissions that will start before it, in the fair order the dispatcher sends them
(server.outbox.dispatch), and from how long recent gradings took, its expected wait. Read
from memos a second or so old, so that polling stays cheap."""

from __future__ import annotations

import statistics
from bisect import bisect_left
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from grader.report import Mode, Status
from server.cache import Memo
from server.models import OutboxMessage, Submission, utcnow
from server.outbox import dispatch
from server.outbox.task_names import Job

# Recent gradings per mode and queue behind an expected duration, and how long the figures
# and a queue's order are kept in this process before they are read again.
RECENT_GRADINGS = 50
DURATIONS_TTL_S = 30.0
ORDER_TTL_S = 1.0
# A guess for a mode no grading of which has finished yet on this queue.
UNKNOWN_DURATION_S = {
    Mode.TEST: 10.0,
    Mode.BENCHMARK: 30.0,
    Mode.PROFILE: 30.0,
    Mode.LEADERBOARD: 60.0,
}

_memos = Memo()


def _place(priority: int, turn: int, last_served: datetime | None, row_id: int) -> tuple[Any, ...]:
    return dispatch.place(priority=priority, turn=turn, last_served=last_served, id=row_id)


@dataclass(frozen=True)
class Wait:
    """Where a queued submission stands: submissions that will start before it (on this
    queue, if no new one comes first) and the expected time until it starts; or, for a
    grading that needs more GPUs than any worker of its queue owns, why it cannot start
    (`held`, and no expected time)."""

    position: int
    expected_s: float | None
    held: str | None = None


def too_big(gpus: int, queue: str, largest: int) -> str:
    """Why a grading of `gpus` GPUs waits on a queue whose largest worker owns `largest`."""
    if largest <= 0:
        return (
            f"it needs {gpus} GPUs at once, and no worker of {queue} has been seen lately; "
            "it starts once one that owns that many is"
        )
    owns = "1 GPU" if largest == 1 else f"{largest} GPUs"
    return (
        f"it needs {gpus} GPUs at once, and the largest worker of {queue} seen lately owns "
        f"{owns}; it starts once one that owns {gpus} is"
    )


@dataclass(frozen=True)
class _QueueView:
    ids: list[int]  # the jobs not sent yet, in order
    keys: list[tuple[Any, ...]]  # their places in the fair order (dispatch.place)
    priorities: list[int]  # their priorities
    order: dict[int, int]  # outbox id of a job not sent yet -> its place among them
    turns: dict[tuple[int | None, int], int]  # (user, priority) -> their jobs not sent yet
    served: dict[int | None, datetime]  # user -> when a job of theirs was last sent
    in_broker: list[int]  # priorities of the jobs sent and not started, oldest send first
    in_broker_ids: dict[int, int]  # outbox id -> its place among those
    running: list[tuple[int, datetime]]  # priority and start of the jobs being graded
    newest: int  # the newest outbox id the view holds


def _sent(session: Session, queue: str) -> list[tuple[int, int, datetime | None]]:
    """(id, priority, start) of the jobs sent to `queue` and not recorded, oldest send first:
    no more than the queue's workers and `KJ_DISPATCH_AHEAD`, so a quick read."""
    rows = session.execute(
        select(OutboxMessage.id, OutboxMessage.priority, OutboxMessage.started_at)
        .where(*dispatch.open_gradings(queue), OutboxMessage.sent_at.is_not(None))
        .order_by(OutboxMessage.sent_at, OutboxMessage.id)
    ).all()
    return [(int(row_id), int(prio), started) for row_id, prio, started in rows]


def _view(session: Session, queue: str) -> _QueueView:
    waiting = dispatch.waiting_jobs(queue)
    served = {
        user_id: last for user_id, last in session.execute(dispatch.last_served(queue)) if last
    }
    rows = session.execute(
        select(waiting.c.id, waiting.c.priority, waiting.c.user_id, waiting.c.turn)
    ).all()
    turns: dict[tuple[int | None, int], int] = {}
    for _, prio, user_id, _ in rows:
        turns[(user_id, prio)] = turns.get((user_id, prio), 0) + 1
    placed = sorted(
        (_place(prio, turn, served.get(user_id), row_id), row_id, prio)
        for row_id, prio, user_id, turn in rows
    )
    sent = _sent(session, queue)
    in_broker = [(row_id, prio) for row_id, prio, started in sent if started is None]
    return _QueueView(
        ids=[row_id for _, row_id, _ in placed],
        keys=[key for key, _, _ in placed],
        priorities=[prio for _, _, prio in placed],
        order={row_id: place for place, (_, row_id, _) in enumerate(placed)},
        turns=turns,
        served=served,
        in_broker=[prio for _, prio in in_broker],
        in_broker_ids={row_id: place for place, (row_id, _) in enumerate(in_broker)},
        running=[(prio, started) for _, prio, started in sent if started is not None],
        newest=max([row_id for _, row_id, _ in placed] + [row[0] for row in sent], default=0),
    )


def _ahead_of_new(
    session: Session, queue: str, view: _QueueView, row: OutboxMessage
) -> tuple[list[int], list[tuple[int, datetime]]]:
    """For a job made after `view` was taken: the priorities of the jobs ahead of it and the
    jobs being graded. What changed since the view is read as it is now, which is quick:
    the jobs sent (no more than the queue's room) and the jobs made since (at most
    `ORDER_TTL_S` of submissions), placed among the view's in the fair order."""
    sent = _sent(session, queue)
    running = [(prio, started) for _, prio, started in sent if started is not None]
    in_broker = [(row_id, prio) for row_id, prio, started in sent if started is None]
    for place, (row_id, _) in enumerate(in_broker):
        if row_id == row.id:
            return [prio for _, prio in in_broker[:place]], running
    # By id alone, which reads the newest rows of the primary key's index: filtered by
    # queue too, a planner can choose to walk every waiting job instead.
    made_since = session.execute(
        select(
            OutboxMessage.id,
            OutboxMessage.priority,
            OutboxMessage.user_id,
            OutboxMessage.job,
            OutboxMessage.queue,
            OutboxMessage.sent_at,
            OutboxMessage.done_at,
        )
        .where(OutboxMessage.id > view.newest)
        .order_by(OutboxMessage.id)
    ).all()
    turns = dict(view.turns)
    placed = []
    for row_id, prio, user_id, job, job_queue, sent_at, done_at in made_since:
        if job != Job.GRADE or job_queue != queue or sent_at is not None or done_at is not None:
            continue
        turns[(user_id, prio)] = turns.get((user_id, prio), 0) + 1
        key = _place(prio, turns[(user_id, prio)], view.served.get(user_id), row_id)
        placed.append((key, row_id, prio))
    mine = next((key for key, row_id, _ in placed if row_id == row.id), None)
    if mine is None:  # sent and started since this look began
        return [prio for _, prio in in_broker], running
    gone = {row_id for row_id, _, _ in sent}  # sent since the view was taken
    place = bisect_left(view.keys, mine)
    ahead = [prio for _, prio in in_broker]
    ahead += [view.priorities[i] for i in range(place) if view.ids[i] not in gone]
    ahead += [prio for key, _, prio in placed if key < mine]
    return ahead, running


def typical_durations(session: Session, queue: str) -> dict[int, float]:
    """Median seconds from start to report of the recent gradings on `queue`, by priority."""

    def measure() -> dict[int, float]:
        found: dict[int, float] = {}
        for mode, prio in dispatch.PRIORITY.items():
            rows = session.execute(
                select(Submission.started_at, Submission.finished_at)
                .where(
                    Submission.gpu_type == queue,
                    Submission.mode == mode,
                    Submission.finished_at.is_not(None),
                    Submission.started_at.is_not(None),
                )
                .order_by(Submission.id.desc())
                .limit(RECENT_GRADINGS)
            ).all()
            spans = [
                (end - start).total_seconds()
                for start, end in rows
                if start is not None and end is not None and end >= start
            ]
            found[prio] = statistics.median(spans) if spans else UNKNOWN_DURATION_S[mode]
        return found

    return dict(_memos.get(("durations", queue), DURATIONS_TTL_S, measure))


def still_running(typical_s: float, elapsed_s: float) -> float:
    """How much longer a grading that has run `elapsed_s` is expected to run: what is left of
    its mode's typical duration, or, past it (a hung kernel waiting for its limit, a slow
    compile), as long again as it has run so far: never nothing while it still holds its
    worker, and growing the longer it holds it."""
    return typical_s - elapsed_s if elapsed_s < typical_s else elapsed_s


def wait_for(session: Session, submission: Submission) -> Wait | None:
    """A queued submission's place and expected wait; None once it is no longer queued."""
    if submission.status != Status.QUEUED:
        return None
    row = session.scalar(
        select(OutboxMessage)
        .where(
            OutboxMessage.job == Job.GRADE,
            OutboxMessage.subject_id == submission.id,
            OutboxMessage.done_at.is_(None),
        )
        .order_by(OutboxMessage.id.desc())
        .limit(1)
    )
    if row is None:
        return None
    queue = row.queue
    view = _memos.get(("view", queue), ORDER_TTL_S, lambda: _view(session, queue))
    running = view.running
    if row.id in view.in_broker_ids:
        ahead = view.in_broker[: view.in_broker_ids[row.id]]
    elif row.id in view.order:
        ahead = view.in_broker + view.priorities[: view.order[row.id]]
    elif row.id > view.newest:
        # Made after the view was taken: a submission's first look at its place does not
        # count a job that started meanwhile, nor wait for the whole queue to be read again
        # (under a stream of submissions, each one's first look would).
        ahead, running = _ahead_of_new(session, queue, view, row)
    else:  # sent after the view was taken
        ahead = list(view.in_broker)
    largest = dispatch.largest_worker(session, queue)
    if not dispatch.fits_a_worker(row.gpus, largest):
        return Wait(position=len(ahead), expected_s=None, held=too_big(row.gpus, queue, largest))
    durations = typical_durations(session, queue)
    now = utcnow()
    remaining = sum(
        still_running(durations[prio], (now - started).total_seconds()) for prio, started in running
    )
    workers = max(dispatch.workers_seen(session, queue), len(running))
    expected = (sum(durations[prio] for prio in ahead) + remaining) / workers
    return Wait(position=len(ahead), expected_s=expected)


def forget() -> None:
    """Drop the memos, the dispatcher's too (tests that change a queue and read it again at
    once)."""
    _memos.clear()
    dispatch.forget()
