"""Queries for rejudges: the submissions a selection matches, a rejudge and its runs, and
the ranked submissions of the boards a rejudge touches."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session, load_only, selectinload

from grader.report import TERMINAL_STATUSES
from server.competitions.schemas import Kind, Stored
from server.leaderboards.repository import ranked
from server.models import Judging, JudgingRun, Submission, User


def matching(
    *,
    problem_id: int | None,
    version: int | None,
    status: str | None,
    user_id: int | None,
    since: datetime | None,
    until: datetime | None,
) -> list[ColumnElement[bool]]:
    """A graded submission of a user's own (no review set's run) that the filters given
    match; ``until`` is exclusive."""
    conditions: list[ColumnElement[bool]] = [
        Submission.judging_id.is_(None),
        Submission.status.in_([str(s) for s in TERMINAL_STATUSES]),
    ]
    if problem_id is not None:
        conditions.append(Submission.problem_id == problem_id)
    if version is not None:
        conditions.append(Submission.problem_version == version)
    if status is not None:
        conditions.append(Submission.status == status)
    if user_id is not None:
        conditions.append(Submission.user_id == user_id)
    if since is not None:
        conditions.append(Submission.created_at >= since)
    if until is not None:
        conditions.append(Submission.created_at < until)
    return conditions


def count(session: Session, conditions: Sequence[ColumnElement[bool]]) -> int:
    return int(session.scalar(select(func.count(Submission.id)).where(*conditions)) or 0)


def selected(session: Session, conditions: Sequence[ColumnElement[bool]]) -> Sequence[Submission]:
    return session.scalars(select(Submission).where(*conditions).order_by(Submission.id)).all()


def get_rejudge(session: Session, rejudge_id: int, *, for_update: bool = False) -> Judging | None:
    query = select(Judging).where(Judging.id == rejudge_id, Judging.kind == Kind.REJUDGE)
    if for_update:
        query = query.with_for_update()
    return session.scalar(query)


def newest(session: Session, limit: int) -> Sequence[Judging]:
    """The newest rejudges, newest first."""
    return session.scalars(
        select(Judging).where(Judging.kind == Kind.REJUDGE).order_by(Judging.id.desc()).limit(limit)
    ).all()


def ranked_on(session: Session, problem_ids: Collection[int]) -> Sequence[Submission]:
    """The ranked submissions (the leaderboards' rule, banned users left out) on these
    problems, every version and device type: what ranking reads of them, without their code
    and reports."""
    return session.scalars(
        select(Submission)
        .options(
            load_only(
                Submission.user_id,
                Submission.problem_id,
                Submission.problem_version,
                Submission.gpu_type,
                Submission.score,
                Submission.created_at,
            ),
            selectinload(Submission.user),
        )
        .join(User, User.id == Submission.user_id)
        .where(Submission.problem_id.in_(problem_ids), User.is_banned.is_(False), *ranked())
        .order_by(Submission.id)
    ).all()


def undecided_holding(session: Session, conditions: Sequence[ColumnElement[bool]]) -> Sequence[int]:
    """The undecided rejudges (running or ready) already grading a submission that
    ``conditions`` match, by id."""
    return session.scalars(
        select(Judging.id)
        .join(JudgingRun, JudgingRun.judging_id == Judging.id)
        .where(
            Judging.kind == Kind.REJUDGE,
            Judging.status == Stored.RUNNING,
            JudgingRun.entry_id.in_(select(Submission.id).where(*conditions)),
        )
        .distinct()
        .order_by(Judging.id)
    ).all()
