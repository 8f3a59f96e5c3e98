"""What organizers' moderation does to the kept leaderboard and its chart, on SQLite and
PostgreSQL: hidden and hacked submissions, re-runs and banned users leave it, the same
user's next best entry takes the place, and undoing puts everything back."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session

from server.leaderboards import service, upkeep
from server.models import Problem, Submission, User
from server.web.charts import best_score_chart
from server.web.page import duration
from tests.server.leaderboards.test_leaderboards import add, session  # noqa: F401 - the fixture


def board(db: Session, problem: Problem, version: int | None = None) -> list[tuple[str, int]]:
    return [(e.user, e.submission_id) for e in service.entries(db, problem, "cpu", version)]


def chart(db: Session, problem: Problem) -> list[tuple[float, str]]:
    return [(r.score, r.user) for r in service.records(db, problem, "cpu")]


def moderated(db: Session, row: Submission | User, **flags: bool) -> None:
    """Set a submission's or a user's moderation flags and tell the leaderboard's upkeep, as
    the moderation services do."""
    for name, value in flags.items():
        setattr(row, name, value)
    if isinstance(row, User):
        upkeep.user_changed(db, row)
    else:
        upkeep.submission_changed(db, row)


def test_hidden_hacked_and_banned_leave_the_leaderboard(session: Session) -> None:  # noqa: F811
    problem = Problem(name="p", files={}, files_sha256="0" * 64, secret_seed=1, gpu_types=[])
    users = [User(name=n) for n in ("ann", "ben", "cat", "dan")]
    session.add_all([problem, *users])
    session.flush()
    ann, ben, cat, dan = users

    def ranked(user: User, score: float, minute: int) -> Submission:
        submission = add(session, user, problem, score, minute)
        upkeep.submission_changed(session, submission)
        return submission

    ann_first = ranked(ann, 1.0, 1)
    ann_next = ranked(ann, 3.0, 2)
    ben_fast = ranked(ben, 0.5, 3)
    cat_ok = ranked(cat, 2.0, 4)
    dan_fastest = ranked(dan, 0.1, 5)
    session.commit()
    assert board(session, problem) == [
        ("dan", dan_fastest.id),
        ("ben", ben_fast.id),
        ("ann", ann_first.id),
        ("cat", cat_ok.id),
    ]
    assert chart(session, problem) == [(1.0, "ann"), (0.5, "ben"), (0.1, "dan")]

    moderated(session, ann_first, is_hidden=True)
    moderated(session, ben_fast, is_hacked=True)
    moderated(session, dan, is_banned=True)
    session.commit()
    assert board(session, problem) == [("cat", cat_ok.id), ("ann", ann_next.id)]
    assert chart(session, problem) == [(3.0, "ann"), (2.0, "cat")]
    drawn = best_score_chart(service.records(session, problem, "cpu"), datetime.now(UTC), duration)
    assert drawn is not None and [p.label.split(" at ")[0] for p in drawn.points] == [
        "ann: 3 s",
        "cat: 2 s",
    ]

    # Undone, in another order: the board and the chart are as they were.
    moderated(session, dan, is_banned=False)
    moderated(session, ann_first, is_hidden=False)
    moderated(session, ben_fast, is_hacked=False)
    session.commit()
    assert board(session, problem)[0] == ("dan", dan_fastest.id)
    assert chart(session, problem) == [(1.0, "ann"), (0.5, "ben"), (0.1, "dan")]


def test_a_re_run_leaves_until_its_new_report(session: Session) -> None:  # noqa: F811
    problem = Problem(name="p", files={}, files_sha256="0" * 64, secret_seed=1, gpu_types=[])
    ann, ben = User(name="ann"), User(name="ben")
    session.add_all([problem, ann, ben])
    session.flush()
    fast = add(session, ann, problem, 1.0, 1)
    slow = add(session, ben, problem, 2.0, 2)
    for submission in (fast, slow):
        upkeep.submission_changed(session, submission)
    # A new version that carries the leaderboard over; the re-run grades against it.
    problem.version = 2
    fast.status, fast.score, fast.problem_version = "queued", None, 2
    upkeep.submission_changed(session, fast)
    session.commit()
    assert board(session, problem) == [("ben", slow.id)]
    assert board(session, problem, version=1) == [("ben", slow.id)]
    assert chart(session, problem) == [(2.0, "ben")]

    fast.status, fast.score = "passed", 1.5
    upkeep.submission_changed(session, fast)
    session.commit()
    assert board(session, problem) == [("ann", fast.id), ("ben", slow.id)]
    assert board(session, problem, version=2) == [("ann", fast.id)]
    # Still submitted at minute 1, before ben's: the record from the start.
    assert chart(session, problem) == [(1.5, "ann")]
    assert [(r.score, r.user) for r in service.records(session, problem, "cpu", 2)] == [
        (1.5, "ann")
    ]

    # An update that archives the leaderboard: the live one starts empty, version 1's stays.
    problem.version, problem.leaderboard_from_version = 3, 3
    session.commit()
    assert board(session, problem) == []
    assert chart(session, problem) == []
    assert board(session, problem, version=1) == [("ben", slow.id)]
    assert service.archived_versions(session, problem) == [1, 2]
