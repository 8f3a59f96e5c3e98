"""Queries for submissions and their files."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime

from sqlalchemy import Select, delete, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session, defer, joinedload

from grader.report import Mode
from server.models import Problem, Submission, SubmissionFile, SubmissionVerdict, User, utcnow


def get_submission(
    session: Session, submission_id: int, *, for_update: bool = False, to_show: bool = False
) -> Submission | None:
    """``to_show``: with its problem in the same query, without the problem's files, example
    solutions and staged version, which showing a submission does not need."""
    query = select(Submission).where(Submission.id == submission_id)
    if to_show:
        query = query.options(
            joinedload(Submission.problem).options(
                defer(Problem.files),
                defer(Problem.solutions),
                defer(Problem.candidate),
                defer(Problem.description),
            )
        )
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
    status: str | None = None,
    mode: str | None = None,
    before: int | None = None,
    private_problem_ids: Collection[int] | None = None,
    frozen: Mapping[int, datetime] | None = None,
    on_problems: Collection[int] | None = None,
) -> Sequence[Submission]:
    """Newest first, narrowed by whichever of `problem_id`, `status` and `mode` are given;
    `before`: only those older than this id (the next page); `private_problem_ids`: without
    the runs other than ranked ones on these problems; `frozen`: without the runs made on
    these problems from these moments on; `on_problems`: only those on these problems. A
    final judging's runs are the organizers', not the user's: never listed."""
    query = (
        select(Submission)
        .options(joinedload(Submission.problem))
        .where(Submission.user_id == user_id, Submission.judging_id.is_(None))
    )
    if not include_hidden:
        query = query.where(Submission.is_hidden.is_(False))
    if private_problem_ids:
        query = query.where(
            or_(
                Submission.mode == Mode.LEADERBOARD,
                Submission.problem_id.not_in(private_problem_ids),
            )
        )
    for frozen_problem, since in (frozen or {}).items():
        query = query.where(
            or_(Submission.problem_id != frozen_problem, Submission.created_at < since)
        )
    if on_problems is not None:
        query = query.where(Submission.problem_id.in_(on_problems))
    query = narrowed(query, problem_id=problem_id, status=status, mode=mode)
    return newest_page(session, query, limit, before)


def list_recent_submissions(
    session: Session,
    limit: int,
    *,
    problem_id: int | None = None,
    user_id: int | None = None,
    status: str | None = None,
    mode: str | None = None,
    before: int | None = None,
) -> Sequence[Submission]:
    """Everyone's, newest first, narrowed by whichever of these are given; `before`: only
    those older than this id (the next page)."""
    query = select(Submission).options(joinedload(Submission.problem), joinedload(Submission.user))
    query = narrowed(query, problem_id=problem_id, user_id=user_id, status=status, mode=mode)
    return newest_page(session, query, limit, before)


def narrowed(
    query: Select[Submission],
    *,
    problem_id: int | None = None,
    user_id: int | None = None,
    status: str | None = None,
    mode: str | None = None,
) -> Select[Submission]:
    """``query`` kept to the submissions with each of these that is given (None: any)."""
    for column, value in (
        (Submission.problem_id, problem_id),
        (Submission.user_id, user_id),
        (Submission.status, status),
        (Submission.mode, mode),
    ):
        if value is not None:
            query = query.where(column == value)
    return query


def newest_page(
    session: Session, query: Select[Submission], limit: int, before: int | None
) -> Sequence[Submission]:
    """A page of the submissions ``query`` selects, newest first: ``limit`` of them older than
    ``before`` (an id; None: from the newest)."""
    query = query.order_by(Submission.id.desc()).limit(limit)
    if before is not None:
        query = query.where(Submission.id < before)
    return session.scalars(query).all()


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


def get_file(session: Session, submission_id: int, name: str) -> SubmissionFile | None:
    return session.get(SubmissionFile, (submission_id, name))


def put_file(
    session: Session, submission_id: int, name: str, content: bytes, *, replace: bool
) -> None:
    """Store a submission's file in one statement, so that two sends of it at once store
    one row; an existing one is replaced only with ``replace``."""
    dialect = session.bind.dialect.name if session.bind is not None else ""
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    values = {
        "content": content,
        "size": len(content),
        "sha256": hashlib.sha256(content).hexdigest(),
        "created_at": utcnow(),
    }
    statement = insert(SubmissionFile).values(submission_id=submission_id, name=name, **values)
    keys = [SubmissionFile.submission_id, SubmissionFile.name]
    if replace:
        session.execute(statement.on_conflict_do_update(index_elements=keys, set_=values))
    else:
        session.execute(statement.on_conflict_do_nothing(index_elements=keys))


def delete_files(session: Session, submission_id: int) -> None:
    session.execute(delete(SubmissionFile).where(SubmissionFile.submission_id == submission_id))


def move_files(session: Session, from_id: int, to_id: int) -> None:
    """The files of one submission's grading become another's (a rejudge's run's, applied)."""
    session.execute(
        update(SubmissionFile)
        .where(SubmissionFile.submission_id == from_id)
        .values(submission_id=to_id)
    )


def add_verdict(session: Session, verdict: SubmissionVerdict) -> None:
    session.add(verdict)


def earlier_verdicts(session: Session, submission_id: int) -> Sequence[SubmissionVerdict]:
    """A submission's earlier verdicts, oldest first."""
    return session.scalars(
        select(SubmissionVerdict)
        .where(SubmissionVerdict.submission_id == submission_id)
        .order_by(SubmissionVerdict.id)
    ).all()
