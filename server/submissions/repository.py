"""Queries for submissions and their runs."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session, joinedload

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


def list_user_submissions(
    session: Session, user_id: int, *, include_hidden: bool, limit: int = 200
) -> Sequence[Submission]:
    query = (
        select(Submission)
        .options(joinedload(Submission.problem))
        .where(Submission.user_id == user_id)
        .order_by(Submission.id.desc())
        .limit(limit)
    )
    if not include_hidden:
        query = query.where(Submission.is_hidden.is_(False))
    return session.scalars(query).all()


def list_recent_submissions(session: Session, limit: int) -> Sequence[Submission]:
    return session.scalars(
        select(Submission)
        .options(joinedload(Submission.problem), joinedload(Submission.user))
        .order_by(Submission.id.desc())
        .limit(limit)
    ).all()
