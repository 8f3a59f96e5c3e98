"""Queries of batches and their items."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session, load_only

from grader.report import Status
from server.models import Batch, CallbackDelivery, Submission

OPEN = (Status.QUEUED.value, Status.RUNNING.value)


def get_batch(session: Session, batch_id: int) -> Batch | None:
    return session.get(Batch, batch_id)


def get_by_idempotency_key(session: Session, user_id: int, key: str) -> Batch | None:
    return session.scalar(
        select(Batch).where(Batch.user_id == user_id, Batch.idempotency_key == key)
    )


def items(session: Session, batch_id: int) -> Sequence[Submission]:
    """A batch's submissions in the order they were sent, with the columns a batch's body
    reads (not their code or report: a batch may have a thousand)."""
    return session.scalars(
        select(Submission)
        .options(
            load_only(
                Submission.id,
                Submission.batch_key,
                Submission.status,
                Submission.score,
                Submission.message,
                Submission.flags,
                Submission.mode,
                Submission.problem_id,
                Submission.problem_version,
                Submission.gpu_type,
            )
        )
        .where(Submission.batch_id == batch_id)
        .order_by(Submission.id)
    ).all()


def status_counts(session: Session, batch_id: int) -> dict[str, int]:
    rows = session.execute(
        select(Submission.status, func.count())
        .where(Submission.batch_id == batch_id)
        .group_by(Submission.status)
    ).all()
    return {str(status): int(count) for status, count in rows}


def in_flight_of_token(session: Session, token_id: int) -> int:
    """The items of this token's batches that are queued or running."""
    return int(
        session.scalar(
            select(func.count())
            .select_from(Submission)
            .join(Batch, Batch.id == Submission.batch_id)
            .where(Batch.token_id == token_id, Submission.status.in_(OPEN))
        )
        or 0
    )


def callback_counts(session: Session, batch_id: int) -> tuple[int, int, int]:
    """(delivered, failed, all) of a batch's callbacks."""
    row = session.execute(
        select(
            func.count(CallbackDelivery.delivered_at),
            func.count(CallbackDelivery.failed_at),
            func.count(),
        ).where(CallbackDelivery.batch_id == batch_id)
    ).one()
    return int(row[0]), int(row[1]), int(row[2])
