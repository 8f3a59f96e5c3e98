"""The leaderboard query: each user's best passing leaderboard-mode score."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Row, func, select
from sqlalchemy.orm import Session

from server.models import Submission, User


def best_scores(session: Session, problem_id: int, gpu_type: str) -> Sequence[Row]:
    """Rows (user name, score, submission id, submitted at), best first; among equal scores
    the earlier submission wins, both within one user and between users."""
    ranked = (
        select(
            Submission.id,
            Submission.user_id,
            Submission.score,
            Submission.created_at,
            func.row_number()
            .over(
                partition_by=Submission.user_id,
                order_by=(Submission.score, Submission.created_at, Submission.id),
            )
            .label("place"),
        )
        .where(
            Submission.problem_id == problem_id,
            Submission.gpu_type == gpu_type,
            Submission.mode == "leaderboard",
            Submission.status == "passed",
            Submission.score.is_not(None),
        )
        .subquery()
    )
    return session.execute(
        select(User.name, ranked.c.score, ranked.c.id, ranked.c.created_at)
        .join(User, User.id == ranked.c.user_id)
        .where(ranked.c.place == 1)
        .order_by(ranked.c.score, ranked.c.created_at, ranked.c.id)
    ).all()
