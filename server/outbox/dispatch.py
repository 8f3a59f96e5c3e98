"""Which grading goes to a device's queue next. A grading job waits in the outbox until its
queue has room for it, counted in GPUs: the grading slots seen on the queue lately (a slot
is one pool process, which brings one GPU; `KJ_DISPATCH_AHEAD` adds that many more) less
the GPUs of the jobs in flight (sent and not yet recorded; a job holds `OutboxMessage.gpus`:
more than one only for a problem whose cases span ranks on a GPU device type). The waiting
ones go in fair order (`FAIR_ORDER`): test mode before benchmark mode before leaderboard
mode; within a mode, users take turns (each user's first waiting job before anyone's second,
and among users the one served longest ago first), oldest first. One user's backlog or hung
kernels then delay another user's submission by at most the grading under way, not by the
whole backlog. A pass stops at the first job the room cannot hold, so a grading of several
GPUs is never overtaken, and never starved, by smaller ones behind it; a job that needs more
GPUs than any worker seen on the queue owns is passed over until one comes, and its
submission says why (`server.outbox.places`). The same order gives a waiting submission its
place in the queue (`server.outbox.places`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, text, union
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from grader.report import Mode
from server.cache import Memo
from server.models import GradingSlot, OutboxMessage, Submission, utcnow
from server.outbox.task_names import Job

# Profiles go last: they help their author, and rank nobody.
PRIORITY = {Mode.TEST: 0, Mode.BENCHMARK: 1, Mode.LEADERBOARD: 2, Mode.PROFILE: 3}
# The fair order, first key first: columns of the waiting jobs (`waiting_jobs`), each with
# whether a missing value goes first (a user never served on the queue goes before every
# user who was). The SQL ordering (`order_by`) and the Python sort key (`place`) are both
# made from it.
FAIR_ORDER = (("priority", False), ("turn", False), ("last_served", True), ("id", False))
# A grading slot counts as one of the queue's workers for this long after it last started
# a job; the count is read again this often.
WORKERS_SEEN_FOR = timedelta(minutes=10)
WORKERS_TTL_S = 10.0
_memos = Memo()


def priority(mode: str) -> int:
    """A mode's place in the fair order (lower goes first)."""
    return PRIORITY.get(mode, len(PRIORITY))  # type: ignore[call-overload]


def order_by(waiting: Any) -> list[Any]:
    """`FAIR_ORDER` as SQL, over the subquery of `waiting_jobs`."""
    return [
        waiting.c[name].nulls_first() if missing_first else waiting.c[name]
        for name, missing_first in FAIR_ORDER
    ]


def place(**columns: Any) -> tuple[Any, ...]:
    """`FAIR_ORDER` as a Python sort key, from a job's values of its columns: places compare
    as `order_by` sorts."""
    return tuple(
        (columns[name] is not None, columns[name]) if missing_first else columns[name]
        for name, missing_first in FAIR_ORDER
    )


def open_gradings(queue: str) -> Any:
    """The grading jobs of `queue` whose result is not recorded yet."""
    return (
        OutboxMessage.job == Job.GRADE,
        OutboxMessage.queue == queue,
        OutboxMessage.done_at.is_(None),
    )


def fair_order(session: Session, queue: str, limit: int | None = None) -> list[tuple[int, int]]:
    """(outbox id, priority) of the grading jobs waiting to be sent to `queue`, next first."""
    waiting = waiting_jobs(queue)
    query = select(waiting.c.id, waiting.c.priority).order_by(*order_by(waiting))
    if limit is not None:
        query = query.limit(limit)
    return [(int(row_id), int(prio)) for row_id, prio in session.execute(query)]


def last_served(queue: str) -> Any:
    """Each user's last grading sent to `queue`: (user id, when)."""
    return (
        select(OutboxMessage.user_id, func.max(OutboxMessage.sent_at).label("last"))
        .where(
            OutboxMessage.job == Job.GRADE,
            OutboxMessage.queue == queue,
            OutboxMessage.sent_at.is_not(None),
        )
        .group_by(OutboxMessage.user_id)
    )


def waiting_jobs(queue: str) -> Any:
    """The jobs waiting to be sent to `queue`, with the columns of `FAIR_ORDER`: a user's turn
    (their first waiting job of a priority is turn 1) and when the user was last served."""
    served = last_served(queue).subquery()
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
            OutboxMessage.gpus,
            turn,
            served.c.last.label("last_served"),
        )
        .outerjoin(served, served.c.user_id == OutboxMessage.user_id)
        .where(*open_gradings(queue), OutboxMessage.sent_at.is_(None))
        .subquery("waiting")
    )


def gpus_in_flight(session: Session, queue: str) -> int:
    """The GPUs the grading jobs sent to `queue` and not recorded hold (or will, once
    started)."""
    held = session.scalar(
        select(func.sum(OutboxMessage.gpus)).where(
            *open_gradings(queue), OutboxMessage.sent_at.is_not(None)
        )
    )
    return int(held or 0)


def in_flight(session: Session, queue: str) -> tuple[int, int]:
    """Grading jobs sent to `queue` and not recorded: (waiting in the broker, being graded)."""
    rows = session.execute(
        select(OutboxMessage.started_at.is_(None), func.count())
        .where(*open_gradings(queue), OutboxMessage.sent_at.is_not(None))
        .group_by(OutboxMessage.started_at.is_(None))
    ).all()
    counts = {bool(waiting): int(n) for waiting, n in rows}
    return counts.get(True, 0), counts.get(False, 0)


def workers_seen(session: Session, queue: str) -> int:
    """The grading slots on `queue` seen lately, which are the GPUs of its room (at least
    one, read again every few seconds): `slots_seen`."""
    return max(1, _seen(session, queue)[0])


def largest_worker(session: Session, queue: str) -> int:
    """The GPUs of the largest worker whose slots on `queue` were seen lately (0: none seen;
    read again every few seconds): `largest_seen`."""
    return _seen(session, queue)[1]


def _seen(session: Session, queue: str) -> tuple[int, int]:
    return _memos.get(
        ("workers", queue),
        WORKERS_TTL_S,
        lambda: (slots_seen(session, queue), largest_seen(session, queue)),
    )


def fits_a_worker(gpus: int, largest: int) -> bool:
    """Whether a grading of `gpus` GPUs may be sent to a queue whose largest worker seen
    lately owns `largest`: a grading of one GPU always may (a queue whose workers have not
    been seen yet still gets one job, as it always has)."""
    return gpus <= max(1, largest)


def slots_seen(session: Session, queue: str) -> int:
    """The grading slots on `queue` seen within `WORKERS_SEEN_FOR`: those that said they are
    there (server/worker/gpu.py, as each pool process starts and every few minutes after)
    and those that started a submission of its device type. A review set's run is left out
    of the second: it may have come from a competition's judging queue, whose slots are not
    the device type's (they say where they are all the same)."""
    since = utcnow() - WORKERS_SEEN_FOR
    slots = union(
        select(GradingSlot.worker).where(GradingSlot.queue == queue, GradingSlot.seen_at >= since),
        select(Submission.worker).where(
            Submission.gpu_type == queue,
            Submission.started_at >= since,
            Submission.worker.is_not(None),
            Submission.judging_id.is_(None),
        ),
    ).subquery()
    return int(session.scalar(select(func.count()).select_from(slots)) or 0)


def largest_seen(session: Session, queue: str) -> int:
    """The GPUs of the largest worker among the slots on `queue` seen within
    `WORKERS_SEEN_FOR`, as the slots said (`slot_seen`); a slot seen only by the submission it
    started is of one GPU; 0 where no slot was seen."""
    since = utcnow() - WORKERS_SEEN_FOR
    said = session.scalar(
        select(func.max(GradingSlot.gpus)).where(
            GradingSlot.queue == queue, GradingSlot.seen_at >= since
        )
    )
    if said:
        return int(said)
    return 1 if slots_seen(session, queue) else 0


def slot_seen(session: Session, worker: str, queues: Sequence[str], gpus: int = 1) -> None:
    """A grading slot of a worker that owns `gpus` GPUs said it takes jobs from these
    queues; it counts as one of their workers from now on, and again the next time the
    count is read."""
    now = utcnow()
    dialect = session.bind.dialect.name if session.bind is not None else ""
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    for queue in queues:
        # An upsert: a slot's hello and its first job's start may be recorded at once.
        statement = insert(GradingSlot).values(worker=worker, queue=queue, seen_at=now, gpus=gpus)
        session.execute(
            statement.on_conflict_do_update(
                index_elements=[GradingSlot.worker, GradingSlot.queue],
                set_={"seen_at": statement.excluded.seen_at, "gpus": statement.excluded.gpus},
            )
        )
        _memos.drop(("workers", queue))


def lock_queue(session: Session, queue: str) -> None:
    """One dispatcher at a time per queue on PostgreSQL (the API's sender, the results step,
    the sweepers of several API hosts), until the caller's transaction ends; SQLite has one
    writer at a time, and two dispatchers there at most send one job early."""
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": queue})


def next_jobs(session: Session, queue: str, ahead: int) -> Sequence[OutboxMessage]:
    """The grading jobs to send to `queue` now, in the fair order: as many as its free GPUs
    hold, plus `ahead` more GPUs' worth (none while every GPU is busy). The pass stops at
    the first job that does not fit what is left: no smaller job behind it goes first, so
    the GPUs that free up next are its, and a grading of several GPUs is never starved by a
    stream of one-GPU gradings (its wait is the gradings under way, as for any job). A job
    that needs more GPUs than any worker seen on the queue owns is passed over, not waited
    for: it would hold the queue for good; it goes once such a worker is seen."""
    lock_queue(session, queue)
    room = workers_seen(session, queue) + ahead - gpus_in_flight(session, queue)
    if room <= 0:
        return []
    largest = max(1, largest_worker(session, queue))
    waiting = waiting_jobs(queue)
    # Each job holds at least one GPU, so no more than `room` of them can go.
    candidates = session.execute(
        select(waiting.c.id, waiting.c.gpus)
        .where(waiting.c.gpus <= largest)
        .order_by(*order_by(waiting))
        .limit(room)
    ).all()
    ids = []
    for row_id, gpus in candidates:
        if gpus > room:
            break
        room -= gpus
        ids.append(int(row_id))
    if not ids:
        return []
    rows = {
        row.id: row
        for row in session.scalars(select(OutboxMessage).where(OutboxMessage.id.in_(ids)))
    }
    return [rows[row_id] for row_id in ids if row_id in rows]


def forget() -> None:
    """Drop the memo of each queue's workers (tests that change a queue and read it again
    at once)."""
    _memos.clear()
