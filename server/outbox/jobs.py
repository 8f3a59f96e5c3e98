"""Where jobs leave the service: the outbox. A service asks for a job with `enqueue`, which
writes a row in its own transaction, so the job exists exactly when the change that needs
it does; once that transaction commits the row is sent by name to the broker (a grading as
soon as its device's queue has room, in fair order: `dispatch`), and the sweeper sends it
again while its result is not recorded and the broker holds no copy of it (a send that
failed, a broker that restarted without its data, a report that never came). A job may so
run twice; its result is recorded once."""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Select, Update, delete, event, select, update
from sqlalchemy.orm import Session

from server.db import session_scope
from server.models import OutboxMessage, utcnow
from server.outbox import broker, dispatch
from server.outbox.app import celery_app
from server.outbox.task_names import TASKS, sized_queue
from server.outbox.task_names import Job as Job  # services say jobs.Job
from server.settings import Settings, get_settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Messages:
    """How the service that asks for a job builds its message when it is sent: the outbox
    knows rows, not submissions or problems, so the service tells it (`register`)."""

    # The task's arguments for a subject, or None when it no longer needs the job.
    args: Callable[[Session, int, Settings], list[Any] | None]
    # How long a worker may hold the job once it has it.
    time_limit_s: Callable[[Session, int, Settings], float]
    # Reads these subjects at once before their messages are built; the caller keeps what
    # it returns while it builds them.
    preload: Callable[[Session, list[int]], Sequence[Any]] = lambda session, ids: ()


_messages: dict[Job, Messages] = {}


def register(job: Job, messages: Messages) -> None:
    """The service that asks for `job` says how its messages are built (once, as it is
    imported: every process that enqueues or sweeps the job imports that service)."""
    _messages[job] = messages


def messages_of(job: Job) -> Messages:
    try:
        return _messages[job]
    except KeyError:
        raise LookupError(f"no service registered how to send the {job} job") from None


# session.info key: the outbox rows this session wrote, to send once it commits.
PENDING = "kj_outbox_pending"
SWEEP_BATCH = 500
KEEP_DONE = timedelta(days=7)
# After a send right after a commit fails, how long requests leave their jobs to the sweeper.
BROKER_AWAY_S = 5.0
_broker_away_until = 0.0
# Outbox rows committed in this process and not sent yet, for the sender thread.
_to_send: queue.SimpleQueue[int] = queue.SimpleQueue()
_sender_started = threading.Lock()
_sender: threading.Thread | None = None
SEND_BATCH = 200
# The sender's passes at most this often: under a burst of submissions one pass (its
# locks and its dispatch queries) sends the jobs of many commits, instead of each commit
# paying for a pass of its own; a job so leaves at most this much later.
SEND_INTERVAL_S = 0.05
# Rows handed to the sender thread and not through `send_now` yet.
_unsent = 0
_unsent_changed = threading.Condition()
# The sends that this process's last sweep found missing from the broker: (row, task, sent
# at). One snapshot of the broker can miss a message that is moving between a queue's list
# and the unacked hash (Redis pops it, then the taking worker writes it to the hash, which
# a worker busy at that moment does later), so a send counts as lost only when two passes
# in a row miss it.
_missing_before: set[tuple[int, str | None, Any]] = set()
_missing_lock = threading.Lock()


def enqueue(
    session: Session,
    job: Job,
    subject_id: int,
    queue: str,
    *,
    user_id: int | None = None,
    mode: str | None = None,
    gpus: int = 1,
) -> None:
    """Ask for a job in the caller's transaction; it is sent when that commits (a grading,
    for `user_id` in `mode`, holding `gpus` GPUs, when its queue has room for it and its
    turn comes)."""
    row = OutboxMessage(
        job=job.value,
        subject_id=subject_id,
        queue=queue,
        user_id=user_id,
        priority=dispatch.priority(mode) if mode is not None else 0,
        gpus=max(1, gpus),
    )
    session.add(row)
    session.flush()
    session.info.setdefault(PENDING, []).append(row.id)


def started(session: Session, job: Job, subject_id: int) -> None:
    """A worker started the job (in the caller's transaction): it no longer waits in the
    broker, and its queue has room for the next."""
    session.execute(
        _undone(job, subject_id)
        .where(OutboxMessage.started_at.is_(None))
        .values(started_at=utcnow())
    )


def done(session: Session, job: Job, subject_id: int) -> None:
    """The job's result is recorded (in the caller's transaction): never send it again."""
    session.execute(_undone(job, subject_id).values(done_at=utcnow()))


def queue_of(session: Session, job: Job, subject_id: int) -> str | None:
    """The queue the subject's latest message for `job` went to (None: no message kept)."""
    return session.scalar(
        select(OutboxMessage.queue)
        .where(OutboxMessage.job == job.value, OutboxMessage.subject_id == subject_id)
        .order_by(OutboxMessage.id.desc())
        .limit(1)
    )


def _undone(job: Job, subject_id: int) -> Update:
    """An update of the subject's message for `job`, unless its result is recorded."""
    return update(OutboxMessage).where(
        OutboxMessage.job == job.value,
        OutboxMessage.subject_id == subject_id,
        OutboxMessage.done_at.is_(None),
    )


@event.listens_for(Session, "after_commit")
def _send_after_commit(session: Session) -> None:
    ids = session.info.pop(PENDING, None)
    if ids:
        # On a thread of its own: the request that committed answers at once, a broker that
        # is slow or away never holds it, and under load one pass sends many jobs.
        with _unsent_changed:
            global _unsent
            _unsent += len(ids)
        for row_id in ids:
            _to_send.put(row_id)
        _start_sender()


@event.listens_for(Session, "after_rollback")
def _forget_after_rollback(session: Session) -> None:
    session.info.pop(PENDING, None)


def _start_sender() -> None:
    global _sender
    with _sender_started:
        if _sender is None or not _sender.is_alive():
            _sender = threading.Thread(target=_send_forever, name="kj-outbox-send", daemon=True)
            _sender.start()


def _send_forever() -> None:
    global _unsent
    last_pass = 0.0
    while True:
        ids = [_to_send.get()]
        time.sleep(max(0.0, last_pass + SEND_INTERVAL_S - time.monotonic()))
        last_pass = time.monotonic()
        while len(ids) < SEND_BATCH:
            try:
                ids.append(_to_send.get_nowait())
            except queue.Empty:
                break
        try:
            send_now(ids)
        finally:
            with _unsent_changed:
                _unsent -= len(ids)
                _unsent_changed.notify_all()


def drain_sender(timeout_s: float = 10.0) -> bool:
    """Wait until every job committed in this process so far has had its send (or its
    dispatch pass); False if that took longer than `timeout_s`."""
    with _unsent_changed:
        return _unsent_changed.wait_for(lambda: _unsent == 0, timeout_s)


def send_now(ids: Sequence[int]) -> None:
    """Send these rows right after their commit. A failure here loses nothing: the rows
    stay unsent and the sweeper sends them. After a failure the broker is taken to be away
    for a few seconds, and the sends meanwhile are left to the sweeper instead of each
    waiting for the broker's connection timeout."""
    global _broker_away_until
    if time.monotonic() < _broker_away_until:
        return
    try:
        with session_scope() as session:
            # Queues first, then rows, as every dispatcher takes them: the other order
            # deadlocks against a dispatch pass that updates one of these rows.
            lock_queues(
                session,
                session.scalars(
                    select(OutboxMessage.queue)
                    .where(OutboxMessage.id.in_(ids), OutboxMessage.job == Job.GRADE)
                    .distinct()
                ).all(),
            )
            query = select(OutboxMessage).where(
                OutboxMessage.id.in_(ids),
                OutboxMessage.sent_at.is_(None),
                OutboxMessage.done_at.is_(None),
            )
            rows = session.scalars(locked(session, query)).all()
            settings = get_settings()
            send_all(session, [row for row in rows if row.job != Job.GRADE], settings)
            for name in sorted({row.queue for row in rows if row.job == Job.GRADE}):
                dispatch_queue(session, name, settings)
    except Exception:
        _broker_away_until = time.monotonic() + BROKER_AWAY_S
        log.warning("jobs %s not sent now; the sweeper will send them", list(ids), exc_info=True)


def lock_queues(session: Session, queues: Sequence[str]) -> None:
    """Hold these queues' dispatch locks until the transaction ends, in one order for all."""
    for name in sorted(set(queues)):
        dispatch.lock_queue(session, name)


def dispatch_queue(session: Session, queue: str, settings: Settings) -> int:
    """Send the gradings whose turn has come to `queue`, if it has room; how many went."""
    return send_all(session, dispatch.next_jobs(session, queue, settings.dispatch_ahead), settings)


def dispatch_after(queue: str) -> None:
    """A grading on `queue` started or ended (and that is committed): fill the room it left.
    A failure here loses nothing; the sweeper dispatches on its next pass."""
    try:
        with session_scope() as session:
            dispatch_queue(session, queue, get_settings())
    except Exception:
        log.warning("could not dispatch to %s now; the sweeper will", queue, exc_info=True)


def locked(session: Session, query: Select[Any]) -> Select[Any]:
    """The rows for this transaction alone: on PostgreSQL two senders (the sweepers of two
    API hosts, a sweeper and a request) skip each other's rows instead of both sending them;
    SQLite has one writer at a time anyway."""
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        return query.with_for_update(skip_locked=True)
    return query


def send_all(session: Session, rows: Sequence[OutboxMessage], settings: Settings) -> int:
    """Send these jobs through one connection to the broker, their subjects read in one
    query; returns how many were sent (the rest were done already)."""
    if not rows:
        return 0
    held = [
        messages_of(job).preload(session, [row.subject_id for row in rows if row.job == job])
        for job in sorted({Job(row.job) for row in rows})
    ]
    with celery_app.producer_or_acquire() as producer:
        sent = sum(send(session, row, settings, producer) for row in rows)
    del held  # read once above, kept in the session until every message was made
    return sent


def send(session: Session, row: OutboxMessage, settings: Settings, producer: Any = None) -> bool:
    """Send one job by name (True), or mark it done if its subject no longer needs it
    (False). Raises the broker's error when the broker cannot be reached."""
    job = Job(row.job)
    args = messages_of(job).args(session, row.subject_id, settings)
    if args is None:
        row.done_at = utcnow()
        return False
    task_id = str(uuid.uuid4())
    celery_app.send_task(
        TASKS[job],
        args=args,
        queue=sized_queue(row.queue, row.gpus),
        task_id=task_id,
        retry=False,
        producer=producer,
    )
    row.sent_at = utcnow()
    row.task_id = task_id
    row.sends = OutboxMessage.sends + 1
    return True


def sweep(session: Session, settings: Settings) -> int:
    """One pass: send what never left; send again what the broker no longer holds (as this
    pass and the one before found). Returns how many jobs were sent."""
    now = utcnow()
    # The queues first (as every dispatcher takes them, so no pass waits on another's rows
    # while holding a queue that pass waits for), then the rows, which stay locked until the
    # caller commits the pass, sends included.
    lock_queues(
        session,
        session.scalars(
            select(OutboxMessage.queue)
            .where(OutboxMessage.job == Job.GRADE, OutboxMessage.done_at.is_(None))
            .distinct()
        ).all(),
    )
    query = (
        select(OutboxMessage)
        .where(OutboxMessage.done_at.is_(None))
        .order_by(OutboxMessage.id)
        .limit(SWEEP_BATCH)
    )
    rows = session.scalars(locked(session, query)).all()
    unsent = [row for row in rows if row.sent_at is None and row.job != Job.GRADE]
    settled = now - timedelta(seconds=settings.sweep_grace_s)
    sent = [row for row in rows if row.sent_at is not None and row.sent_at < settled]
    lost = _confirmed(_lost(session, sent, settings) if sent else [])
    for row in lost:
        log.warning(
            "job %s %s (task %s, sent %s times) is no longer held by the broker and has no "
            "result; sending it again",
            row.job,
            row.subject_id,
            row.task_id,
            row.sends,
        )
    count = send_all(session, unsent + lost, settings)
    waiting = session.scalars(
        select(OutboxMessage.queue)
        .where(
            OutboxMessage.job == Job.GRADE,
            OutboxMessage.sent_at.is_(None),
            OutboxMessage.done_at.is_(None),
        )
        .distinct()
    ).all()
    for name in sorted(waiting):
        count += dispatch_queue(session, name, settings)
    session.execute(delete(OutboxMessage).where(OutboxMessage.done_at < now - KEEP_DONE))
    return count


def _lost(session: Session, rows: Sequence[OutboxMessage], settings: Settings) -> list[Any]:
    """The sent rows whose job the broker holds no copy of, neither the job nor its report
    on the way to being recorded (a worker hands its report over before the job is
    acknowledged, so the broker holds one or the other, though one snapshot can miss a
    message being taken: `_confirmed`). On the embedded
    broker, which cannot tell a taken job from a finished one, a taken job counts as lost
    only once its time limit has passed since it was sent."""
    held = broker.held(settings, {sized_queue(row.queue, row.gpus) for row in rows})
    lost = []
    now = utcnow()
    for row in rows:
        if row.task_id in held.task_ids or (row.job, row.subject_id) in held.reports:
            continue
        if not held.includes_taken and row.sent_at is not None:
            limit = messages_of(Job(row.job)).time_limit_s(session, row.subject_id, settings)
            if row.sent_at > now - timedelta(seconds=limit + settings.sweep_grace_s):
                continue
        lost.append(row)
    return lost


def _confirmed(missing: list[Any]) -> list[Any]:
    """Of the rows this pass found missing, those the previous pass found missing too (the
    same send); the rest are remembered for the next pass."""
    global _missing_before
    now = {(row.id, row.task_id, row.sent_at): row for row in missing}
    with _missing_lock:
        confirmed = [row for key, row in now.items() if key in _missing_before]
        _missing_before = {key for key in now if key not in _missing_before}
    return confirmed


def sweep_forever(settings: Settings, stop: threading.Event) -> None:
    while not stop.wait(settings.sweep_interval_s):
        try:
            with session_scope() as session:
                sweep(session, settings)
        except Exception:
            # The database or the broker is away; the next pass tries again.
            log.warning("outbox sweep failed; trying again", exc_info=True)


def start_sweeper(settings: Settings) -> threading.Event:
    """Sweep in a background thread of this process until the returned event is set."""
    stop = threading.Event()
    threading.Thread(
        target=sweep_forever, args=(settings, stop), name="kj-outbox-sweeper", daemon=True
    ).start()
    return stop
