"""Which grading goes to a device's queue next. A grading job waits in the outbox until a
worker of its queue is free (the queue's jobs in flight, sent and not yet recorded, number
fewer than the workers seen on it lately, plus `KJ_DISPATCH_AHEAD`), and then the waiting
ones go in fair order: test mode before benchmark mode before leaderboard mode; within a
mode, users take turns (each user's first waiting job before anyone's second, and among
users the one served longest ago first), oldest first. One user's backlog or hung kernels
then delay another user's submission by at most the grading under way, not by the whole
backlog. The same order gives a waiting submission its place in the queue and, from how
long recent gradings took, an expected wait."""

from __future__ import annotations

import statistics
import threading
import time
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import case, func, select, text, union
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from grader.report import Mode, Status
from server.models import GradingSlot, OutboxMessage, Submission, utcnow

GRADE = "grade"
# Profiles go last: they help their author, and rank nobody.
PRIORITY = {Mode.TEST: 0, Mode.BENCHMARK: 1, Mode.LEADERBOARD: 2, Mode.PROFILE: 3}
# Recent gradings per mode and queue behind an expected duration, and how long the figures
# and a queue's order are kept in this process before they are read again.
RECENT_GRADINGS = 50
DURATIONS_TTL_S = 30.0
ORDER_TTL_S = 1.0
# A grading slot counts as one of the queue's workers for this long after it last started
# a job; the count is read again this often.
WORKERS_SEEN_FOR = timedelta(minutes=10)
WORKERS_TTL_S = 10.0
# A guess for a mode no grading of which has finished yet on this queue.
UNKNOWN_DURATION_S = {
    Mode.TEST: 10.0,
    Mode.BENCHMARK: 30.0,
    Mode.PROFILE: 30.0,
    Mode.LEADERBOARD: 60.0,
}


def priority(mode: str) -> int:
    """A mode's place in the fair order (lower goes first)."""
    return PRIORITY.get(mode, len(PRIORITY))  # type: ignore[call-overload]


def _open(queue: str) -> Any:
    return (
        OutboxMessage.job == GRADE,
        OutboxMessage.queue == queue,
        OutboxMessage.done_at.is_(None),
    )


def fair_order(session: Session, queue: str, limit: int | None = None) -> list[tuple[int, int]]:
    """(outbox id, priority) of the grading jobs waiting to be sent to `queue`, next first."""
    waiting = _waiting(queue)
    query = select(waiting.c.id, waiting.c.priority).order_by(
        waiting.c.priority, waiting.c.turn, waiting.c.served, waiting.c.last, waiting.c.id
    )
    if limit is not None:
        query = query.limit(limit)
    return [(int(row_id), int(prio)) for row_id, prio in session.execute(query)]


def _served(queue: str) -> Any:
    """Each user's last grading sent to `queue`."""
    return (
        select(OutboxMessage.user_id, func.max(OutboxMessage.sent_at).label("last"))
        .where(
            OutboxMessage.job == GRADE,
            OutboxMessage.queue == queue,
            OutboxMessage.sent_at.is_not(None),
        )
        .group_by(OutboxMessage.user_id)
    )


def _waiting(queue: str) -> Any:
    """The jobs waiting to be sent to `queue`, with what orders them: a user's turn (their
    first waiting job of a priority is turn 1), whether and when the user was last served."""
    served = _served(queue).subquery()
    turn = (
        func.row_number()
        .over(
            partition_by=(OutboxMessage.user_id, OutboxMessage.priority),
            order_by=OutboxMessage.id,
        )
        .label("turn")
    )
    return (
        select(
            OutboxMessage.id,
            OutboxMessage.priority,
            OutboxMessage.user_id,
            turn,
            # Never served sorts first.
            case((served.c.last.is_(None), 0), else_=1).label("served"),
            served.c.last,
        )
        .outerjoin(served, served.c.user_id == OutboxMessage.user_id)
        .where(*_open(queue), OutboxMessage.sent_at.is_(None))
        .subquery("waiting")
    )


def in_flight(session: Session, queue: str) -> tuple[int, int]:
    """Grading jobs sent to `queue` and not recorded: (waiting in the broker, being graded)."""
    rows = session.execute(
        select(OutboxMessage.started_at.is_(None), func.count())
        .where(*_open(queue), OutboxMessage.sent_at.is_not(None))
        .group_by(OutboxMessage.started_at.is_(None))
    ).all()
    counts = {bool(waiting): int(n) for waiting, n in rows}
    return counts.get(True, 0), counts.get(False, 0)


def workers_seen(session: Session, queue: str) -> int:
    """The grading slots on `queue` seen lately (at least one): those that said they are
    there (server/worker/gpu.py, as each pool process starts and every few minutes after)
    and those that started a job."""

    def count() -> int:
        since = utcnow() - WORKERS_SEEN_FOR
        slots = union(
            select(GradingSlot.worker).where(
                GradingSlot.queue == queue, GradingSlot.seen_at >= since
            ),
            select(Submission.worker).where(
                Submission.gpu_type == queue,
                Submission.started_at >= since,
                Submission.worker.is_not(None),
            ),
        ).subquery()
        return int(session.scalar(select(func.count()).select_from(slots)) or 0)

    return max(1, int(_cache.get(("workers", queue), WORKERS_TTL_S, count)))


def slot_seen(session: Session, worker: str, queues: Sequence[str]) -> None:
    """A grading slot said it takes jobs from these queues; it counts as one of their
    workers from now on, and again the next time the count is read."""
    now = utcnow()
    dialect = session.bind.dialect.name if session.bind is not None else ""
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    for queue in queues:
        # An upsert: a slot's hello and its first job's start may be recorded at once.
        statement = insert(GradingSlot).values(worker=worker, queue=queue, seen_at=now)
        session.execute(
            statement.on_conflict_do_update(
                index_elements=[GradingSlot.worker, GradingSlot.queue],
                set_={"seen_at": statement.excluded.seen_at},
            )
        )
        _cache.drop(("workers", queue))


def lock_queue(session: Session, queue: str) -> None:
    """One dispatcher at a time per queue on PostgreSQL (the API's sender, the results step,
    the sweepers of several API hosts), until the caller's transaction ends; SQLite has one
    writer at a time, and two dispatchers there at most send one job early."""
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": queue})


def next_jobs(session: Session, queue: str, ahead: int) -> Sequence[OutboxMessage]:
    """The grading jobs to send to `queue` now, in order: as many as its workers have room
    for, plus `ahead` (none while every worker is busy)."""
    lock_queue(session, queue)
    room = workers_seen(session, queue) + ahead - sum(in_flight(session, queue))
    if room <= 0:
        return []
    ids = [row_id for row_id, _ in fair_order(session, queue, room)]
    if not ids:
        return []
    rows = {
        row.id: row
        for row in session.scalars(select(OutboxMessage).where(OutboxMessage.id.in_(ids)))
    }
    return [rows[row_id] for row_id in ids if row_id in rows]


# -- a waiting submission's place and expected wait ---------------------------------------


@dataclass(frozen=True)
class Wait:
    """Where a queued submission stands: submissions that will start before it (on this
    queue, if no new one comes first) and the expected time until it starts."""

    position: int
    expected_s: float | None


class _Cache:
    """Small per-process memos, so that polling a queued submission stays cheap. A memo
    past its time is made again by one thread while the others read the old one: under
    load, a long queue is then read once when its memo expires, not by every request
    that asks in that moment."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[Any, tuple[float, Any]] = {}
        self._making: set[Any] = set()

    def get(self, key: Any, ttl_s: float, make: Any) -> Any:
        now = time.monotonic()
        with self._lock:
            held = self._held.get(key)
            if held is not None and now - held[0] < ttl_s:
                return held[1]
            if held is not None and key in self._making:
                return held[1]
            self._making.add(key)
        try:
            value = make()
        except BaseException:
            with self._lock:
                self._making.discard(key)
            raise
        with self._lock:
            self._making.discard(key)
            self._held[key] = (now, value)
        return value

    def drop(self, key: Any) -> None:
        with self._lock:
            self._held.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._making.clear()


_cache = _Cache()


# A job's place in the fair order, as `fair_order` sorts: priority, the user's turn, whether
# and when (a timestamp) the user was last served, the job's id.
_Key = tuple[int, int, int, float, int]


def _key(priority: int, turn: int, last_served: float | None, row_id: int) -> _Key:
    served = 0 if last_served is None else 1
    return (priority, turn, served, last_served or 0.0, row_id)


@dataclass(frozen=True)
class _QueueView:
    ids: list[int]  # the jobs not sent yet, in order
    keys: list[_Key]  # their places in the fair order
    priorities: list[int]  # their priorities
    order: dict[int, int]  # outbox id of a job not sent yet -> its place among them
    turns: dict[tuple[int | None, int], int]  # (user, priority) -> their jobs not sent yet
    served: dict[int | None, float]  # user -> when a job of theirs was last sent
    in_broker: list[int]  # priorities of the jobs sent and not started, oldest send first
    in_broker_ids: dict[int, int]  # outbox id -> its place among those
    running: list[tuple[int, datetime]]  # priority and start of the jobs being graded
    newest: int  # the newest outbox id the view holds


def _sent(session: Session, queue: str) -> list[tuple[int, int, datetime | None]]:
    """(id, priority, start) of the jobs sent to `queue` and not recorded, oldest send first:
    no more than the queue's workers and `KJ_DISPATCH_AHEAD`, so a quick read."""
    rows = session.execute(
        select(OutboxMessage.id, OutboxMessage.priority, OutboxMessage.started_at)
        .where(*_open(queue), OutboxMessage.sent_at.is_not(None))
        .order_by(OutboxMessage.sent_at, OutboxMessage.id)
    ).all()
    return [(int(row_id), int(prio), started) for row_id, prio, started in rows]


def _view(session: Session, queue: str) -> _QueueView:
    waiting = _waiting(queue)
    served = {
        user_id: last.timestamp() for user_id, last in session.execute(_served(queue)) if last
    }
    rows = session.execute(
        select(waiting.c.id, waiting.c.priority, waiting.c.user_id, waiting.c.turn)
    ).all()
    turns: dict[tuple[int | None, int], int] = {}
    for _, prio, user_id, _ in rows:
        turns[(user_id, prio)] = turns.get((user_id, prio), 0) + 1
    placed = sorted(
        (_key(prio, turn, served.get(user_id), row_id), row_id, prio)
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
        if job != GRADE or job_queue != queue or sent_at is not None or done_at is not None:
            continue
        turns[(user_id, prio)] = turns.get((user_id, prio), 0) + 1
        key = _key(prio, turns[(user_id, prio)], view.served.get(user_id), row_id)
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
        for mode, prio in PRIORITY.items():
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

    return dict(_cache.get(("durations", queue), DURATIONS_TTL_S, measure))


def wait_for(session: Session, submission: Submission) -> Wait | None:
    """A queued submission's place and expected wait; None once it is no longer queued."""
    if submission.status != Status.QUEUED:
        return None
    row = session.scalar(
        select(OutboxMessage)
        .where(
            OutboxMessage.job == GRADE,
            OutboxMessage.subject_id == submission.id,
            OutboxMessage.done_at.is_(None),
        )
        .order_by(OutboxMessage.id.desc())
        .limit(1)
    )
    if row is None:
        return None
    queue = row.queue
    view: _QueueView = _cache.get(("view", queue), ORDER_TTL_S, lambda: _view(session, queue))
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
    durations = typical_durations(session, queue)
    now = utcnow()
    remaining = sum(
        max(0.0, durations[prio] - (now - started).total_seconds()) for prio, started in running
    )
    workers = max(workers_seen(session, queue), len(running))
    expected = (sum(durations[prio] for prio in ahead) + remaining) / workers
    return Wait(position=len(ahead), expected_s=expected)


def forget() -> None:
    """Drop the memos (tests that change a queue and read it again at once)."""
    _cache.clear()
