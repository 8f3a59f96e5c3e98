"""What organizers' moderation does to the leaderboard query, on SQLite and PostgreSQL:
hidden and hacked submissions and banned users leave it, and the next best entry of the
same user takes the place."""

from __future__ import annotations

from sqlalchemy.orm import Session

from server.leaderboards.repository import best_scores, ranked_history
from server.models import Problem, User
from tests.server.test_leaderboards import add, session  # noqa: F401 - the fixture


def test_hidden_hacked_and_banned_leave_the_leaderboard(session: Session) -> None:  # noqa: F811
    problem = Problem(name="p", files={}, files_sha256="0" * 64, secret_seed=1, gpu_types=[])
    users = [User(name=n) for n in ("ann", "ben", "cat", "dan")]
    session.add_all([problem, *users])
    session.flush()
    ann, ben, cat, dan = users
    add(session, ann, problem, 1.0, 1, is_hidden=True)
    ann_next = add(session, ann, problem, 3.0, 2)
    add(session, ben, problem, 0.5, 3, is_hacked=True)
    cat_ok = add(session, cat, problem, 2.0, 4)
    add(session, dan, problem, 0.1, 5)
    dan.is_banned = True
    session.commit()

    rows = best_scores(session, problem.id, "cpu")
    assert [(r[0], r[2]) for r in rows] == [("cat", cat_ok.id), ("ann", ann_next.id)]
    history = ranked_history(session, problem.id, "cpu")
    assert [(r[1], r[2]) for r in history] == [(3.0, "ann"), (2.0, "cat")]
