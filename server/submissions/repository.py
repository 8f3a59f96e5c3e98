"""Queries for submissions and their runs."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.models import Submission


def get_submission(
    session: Session, submission_id: int, *, for_update: bool = False
) -> Submission | None:
    query = select(Submission).where(Submission.id == submission_id)
    if for_update:
        query = query.with_for_update()
    return session.scalar(query)


def queue_position(session: Session, submission: Submission) -> int:
    """How many submissions for the same device type wait ahead of this one."""
    return (
        session.scalar(
            select(func.count())
            .select_from(Submission)
            .where(
                Submission.gpu_type == submission.gpu_type,
                Submission.status == "queued",
                Submission.id < submission.id,
            )
        )
        or 0
    )
