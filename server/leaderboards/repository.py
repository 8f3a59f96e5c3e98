"""The leaderboard query: each user's best passing leaderboard-mode score."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Row, func, select
from sqlalchemy.orm import Session

from server.models import Submission, User


@dataclass(frozen=True)
class Versions:
    """Which versions of a problem a leaderboard ranks: ``first`` and later, or ``only``."""

    first: int = 1
    only: int | None = None

    def condition(self) -> ColumnElement[bool]:
        if self.only is not None:
            return Submission.problem_version == self.only
        return Submission.problem_version >= self.first


ALL_VERSIONS = Versions()


def ranked_conditions(
    problem_id: int, gpu_type: str, versions: Versions
) -> list[ColumnElement[bool]]:
    """What puts a submission on a leaderboard: a passed, scored leaderboard-mode run against
    one of the versions ranked, that organizers have neither hidden nor marked as hacked."""
    return [
        Submission.problem_id == problem_id,
        versions.condition(),
        Submission.gpu_type == gpu_type,
        Submission.mode == "leaderboard",
        Submission.status == "passed",
        Submission.score.is_not(None),
        Submission.is_hidden.is_(False),
        Submission.is_hacked.is_(False),
    ]


def best_scores(
    session: Session, problem_id: int, gpu_type: str, versions: Versions = ALL_VERSIONS
) -> Sequence[Row]:
    """Rows (user name, score, submission id, submitted at, version), best first; among equal scores
    the earlier submission wins, both within one user and between users. Banned users are
    left out."""
    ranked = (
        select(
            Submission.id,
            Submission.user_id,
            Submission.score,
            Submission.created_at,
            Submission.problem_version,
            func.row_number()
            .over(
                partition_by=Submission.user_id,
                order_by=(Submission.score, Submission.created_at, Submission.id),
            )
            .label("place"),
        )
        .where(*ranked_conditions(problem_id, gpu_type, versions))
        .subquery()
    )
    return session.execute(
        select(
            User.name,
            ranked.c.score,
            ranked.c.id,
            ranked.c.created_at,
            ranked.c.problem_version,
        )
        .join(User, User.id == ranked.c.user_id)
        .where(ranked.c.place == 1, User.is_banned.is_(False))
        .order_by(ranked.c.score, ranked.c.created_at, ranked.c.id)
    ).all()


def ranked_history(
    session: Session, problem_id: int, gpu_type: str, versions: Versions = ALL_VERSIONS
) -> Sequence[Row]:
    """Every ranked submission's (submitted at, score, user name), oldest first."""
    return session.execute(
        select(Submission.created_at, Submission.score, User.name)
        .join(User, User.id == Submission.user_id)
        .where(*ranked_conditions(problem_id, gpu_type, versions), User.is_banned.is_(False))
        .order_by(Submission.created_at, Submission.id)
    ).all()


def reports(session: Session, submission_ids: list[int]) -> dict[int, dict[str, Any]]:
    if not submission_ids:
        return {}
    rows = session.execute(
        select(Submission.id, Submission.report).where(Submission.id.in_(submission_ids))
    ).all()
    return {sid: report or {} for sid, report in rows}


def competitor_counts(session: Session) -> dict[int, int]:
    """Problem id -> how many users have a visible submission to it."""
    rows = session.execute(
        select(Submission.problem_id, func.count(func.distinct(Submission.user_id)))
        .where(Submission.is_hidden.is_(False))
        .group_by(Submission.problem_id)
    ).all()
    return {problem_id: count for problem_id, count in rows}


def ranked_versions(session: Session, problem_id: int) -> list[int]:
    """The versions of a problem that have ranked submissions, oldest first."""
    return list(
        session.scalars(
            select(Submission.problem_version)
            .where(Submission.problem_id == problem_id, Submission.mode == "leaderboard")
            .distinct()
            .order_by(Submission.problem_version)
        ).all()
    )
