"""Queries for submissions and their runs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload

from server.models import Submission, User


def get_submission(
    session: Session, submission_id: int, *, for_update: bool = False
) -> Submission | None:
    query = select(Submission).where(Submission.id == submission_id)
    if for_update:
        query = query.with_for_update()
    return session.scalar(query)


def get_by_idempotency_key(session: Session, user_id: int, key: str) -> Submission | None:
    return session.scalar(
        select(Submission).where(Submission.user_id == user_id, Submission.idempotency_key == key)
    )


def list_user_submissions(
    session: Session,
    user_id: int,
    *,
    include_hidden: bool,
    limit: int = 200,
    problem_id: int | None = None,
    before: int | None = None,
) -> Sequence[Submission]:
    """Newest first; `before`: only those older than this id (the next page)."""
    query = (
        select(Submission)
        .options(joinedload(Submission.problem))
        .where(Submission.user_id == user_id)
        .order_by(Submission.id.desc())
        .limit(limit)
    )
    if not include_hidden:
        query = query.where(Submission.is_hidden.is_(False))
    if problem_id is not None:
        query = query.where(Submission.problem_id == problem_id)
    if before is not None:
        query = query.where(Submission.id < before)
    return session.scalars(query).all()


def list_recent_submissions(session: Session, limit: int) -> Sequence[Submission]:
    return session.scalars(
        select(Submission)
        .options(joinedload(Submission.problem), joinedload(Submission.user))
        .order_by(Submission.id.desc())
        .limit(limit)
    ).all()


def recent_submission_times(
    session: Session, user_id: int, problem_id: int, *, since: datetime, limit: int
) -> Sequence[datetime]:
    """When this user submitted to this problem since ``since``: the newest ``limit``, newest
    first."""
    return session.scalars(
        select(Submission.created_at)
        .where(
            Submission.user_id == user_id,
            Submission.problem_id == problem_id,
            Submission.created_at >= since,
        )
        .order_by(Submission.created_at.desc())
        .limit(limit)
    ).all()


def lock_user(session: Session, user_id: int) -> None:
    """Serialize one user's submissions (PostgreSQL; SQLite serializes writers anyway), so two
    processes cannot both take the last place under the rate limit."""
    session.execute(select(User.id).where(User.id == user_id).with_for_update())


def list_problem_submissions(session: Session, problem_id: int) -> Sequence[Submission]:
    """Every submission to a problem, hidden ones included, oldest first."""
    return session.scalars(
        select(Submission)
        .options(joinedload(Submission.user))
        .where(Submission.problem_id == problem_id)
        .order_by(Submission.id)
    ).all()
