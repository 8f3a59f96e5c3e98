"""The precomputed leaderboards against the rules computed straight from the submissions
table, on SQLite and PostgreSQL: random submissions, reports out of order, equal scores and
times, hiding, hacking, re-runs, bans and new versions that archive the leaderboard. After
every step the kept tables must give what the rules give, and a rebuild must give the same
rows again."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.leaderboards import service, upkeep
from server.leaderboards.repository import Versions
from server.models import LeaderboardEntry, LeaderboardRecord, Problem, Submission, User
from server.submissions import reports
from tests.server.leaderboards.test_leaderboard_moderation import chart
from tests.server.leaderboards.test_leaderboards import T0, add, session  # noqa: F401 - the fixture

GPUS = ("cpu", "h200")
SCORES = (1.0, 1.5, 2.0, 2.0, 3.0, 4.0, 0.5)  # few values: equal scores are common


@dataclass(frozen=True)
class Expected:
    user: str
    score: float
    submission_id: int
    problem_version: int
    sol_fraction: float | None


def rules_board(db: Session, problem: Problem, gpu: str, versions: Versions) -> list[Expected]:
    """Each unbanned user's best ranked submission (lowest score, then earliest, then lowest
    id) among the versions, best first by the same order: computed in Python from every
    submission, as the rules read."""
    best: dict[int, Submission] = {}
    for s in ranked_submissions(db, problem, gpu, versions):
        if s.user.is_banned:
            continue
        held = best.get(s.user_id)
        if held is None or order(s) < order(held):
            best[s.user_id] = s
    return [
        Expected(
            s.user.name,
            s.score or 0.0,
            s.id,
            s.problem_version,
            s.sol_fraction if s.sol_fraction is not None else stored_fraction(s),
        )
        for s in sorted(best.values(), key=order)
    ]


def stored_fraction(submission: Submission) -> float | None:
    report = reports.stored(submission)
    return report.sol_fraction if report is not None else None


def rules_records(
    db: Session, problem: Problem, gpu: str, versions: Versions
) -> list[tuple[object, float, str]]:
    """Every ranked submission of an unbanned user that beat all earlier ones, oldest first."""
    found: list[tuple[object, float, str]] = []
    for s in sorted(
        ranked_submissions(db, problem, gpu, versions), key=lambda s: (s.created_at, s.id)
    ):
        assert s.score is not None
        if not s.user.is_banned and (not found or s.score < found[-1][1]):
            found.append((s.created_at, s.score, s.user.name))
    return found


def ranked_submissions(
    db: Session, problem: Problem, gpu: str, versions: Versions
) -> list[Submission]:
    def on_board(s: Submission) -> bool:
        if versions.only is not None:
            return s.problem_version == versions.only
        return s.problem_version >= versions.first

    return [
        s
        for s in db.scalars(select(Submission).where(Submission.problem_id == problem.id))
        if s.gpu_type == gpu
        and on_board(s)
        and s.mode == "leaderboard"
        and s.status == "passed"
        and s.score is not None
        and not s.is_hidden
        and not s.is_hacked
    ]


def order(s: Submission) -> tuple[float, object, int]:
    return (s.score or 0.0, s.created_at, s.id)


def assert_boards_follow_the_rules(db: Session, problem: Problem) -> None:
    for gpu in GPUS:
        for version in (None, *range(1, problem.version + 1)):
            versions = service.versions_ranked(problem, version)
            expected = rules_board(db, problem, gpu, versions)
            got = service.entries(db, problem, gpu, version)
            assert [
                Expected(e.user, e.score, e.submission_id, e.problem_version, e.sol_fraction)
                for e in got
            ] == expected, (gpu, version)
            assert [e.rank for e in got] == list(range(1, len(got) + 1))
            records = [(r.at, r.score, r.user) for r in service.records(db, problem, gpu, version)]
            assert records == rules_records(db, problem, gpu, versions), (gpu, version)


def kept_rows(db: Session) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    db.flush()
    entries = db.execute(
        select(
            LeaderboardEntry.problem_id,
            LeaderboardEntry.gpu_type,
            LeaderboardEntry.problem_version,
            LeaderboardEntry.user_id,
            LeaderboardEntry.submission_id,
            LeaderboardEntry.score,
            LeaderboardEntry.sol_fraction,
            LeaderboardEntry.submitted_at,
        ).order_by(LeaderboardEntry.submission_id)
    ).all()
    records = db.execute(
        select(
            LeaderboardRecord.problem_id,
            LeaderboardRecord.gpu_type,
            LeaderboardRecord.problem_version,
            LeaderboardRecord.at,
            LeaderboardRecord.score,
            LeaderboardRecord.user_id,
            LeaderboardRecord.submission_id,
        ).order_by(LeaderboardRecord.submission_id)
    ).all()
    return [tuple(r) for r in entries], [tuple(r) for r in records]


def report(fraction: float | None) -> dict[str, object]:
    case: dict[str, object] = {"kind": "benchmark", "status": "passed"}
    if fraction is not None:
        case["roofline"] = {"sol_fraction": fraction}
    return {"status": "passed", "cases": [case]}


@pytest.mark.parametrize("seed", [1, 2])
def test_kept_boards_follow_the_rules_through_every_change(session: Session, seed: int) -> None:  # noqa: F811
    db = session
    rng = random.Random(seed)
    problem = Problem(name="p", files={}, files_sha256="0" * 64, secret_seed=1, gpu_types=[])
    users = [User(name=f"u{i}") for i in range(7)]
    db.add_all([problem, *users])
    db.flush()
    submissions: list[Submission] = []
    revision = problem.leaderboard_revision

    for step in range(200):
        action = rng.choices(
            ["submit", "report", "hide", "hack", "rerun", "ban", "version"],
            weights=[40, 20, 10, 8, 8, 5, 2],
        )[0]
        changed = False
        if action == "submit" or not submissions:
            # Created at one of few moments, in any order: equal times, late reports.
            status = rng.choice(["passed", "passed", "passed", "failed", "queued"])
            s = add(
                db,
                rng.choice(users),
                problem,
                rng.choice(SCORES) if status == "passed" else None,
                rng.randrange(0, 40),
                gpu_type=rng.choice(GPUS),
                problem_version=rng.randint(problem.leaderboard_from_version, problem.version),
                mode=rng.choice(["leaderboard", "leaderboard", "leaderboard", "benchmark"]),
                status=status,
                report=report(rng.choice([None, 0.25, 0.5])) if status == "passed" else None,
            )
            submissions.append(s)
            changed = upkeep.submission_changed(db, s)
        elif action == "report":
            waiting = [s for s in submissions if s.status == "queued"]
            if waiting:
                s = rng.choice(waiting)
                s.status, s.score = "passed", rng.choice(SCORES)
                s.report = report(0.4)
                changed = upkeep.submission_changed(db, s)
        elif action in ("hide", "hack"):
            s = rng.choice(submissions)
            field = "is_hidden" if action == "hide" else "is_hacked"
            setattr(s, field, not getattr(s, field))
            changed = upkeep.submission_changed(db, s)
        elif action == "rerun":
            s = rng.choice(submissions)
            s.status, s.score, s.report, s.sol_fraction = "queued", None, None, None
            s.problem_version = problem.version
            changed = upkeep.submission_changed(db, s)
        elif action == "ban":
            user = rng.choice(users)
            user.is_banned = not user.is_banned
            changed = upkeep.user_changed(db, user)
        elif action == "version":
            problem.version += 1
            if rng.random() < 0.5:
                problem.leaderboard_from_version = problem.version
        db.flush()
        db.refresh(problem)
        # The revision moves exactly when a hook says the boards changed.
        assert (problem.leaderboard_revision > revision) == changed, (step, action)
        revision = problem.leaderboard_revision
        if step % 17 == 0:
            assert_boards_follow_the_rules(db, problem)

    assert_boards_follow_the_rules(db, problem)
    assert sum(1 for s in submissions if s.status == "passed") > 50
    kept = kept_rows(db)
    upkeep.rebuild(db, problem)
    assert kept_rows(db) == kept
    upkeep.rebuild(db)
    assert kept_rows(db) == kept
    assert_boards_follow_the_rules(db, problem)


def test_a_database_from_before_the_tables_is_rebuilt_once(session: Session) -> None:  # noqa: F811
    db = session
    problem = Problem(name="p", files={}, files_sha256="0" * 64, secret_seed=1, gpu_types=[])
    ann, ben = User(name="ann"), User(name="ben")
    db.add_all([problem, ann, ben])
    db.flush()
    assert not upkeep.rebuild_if_empty(db)  # nothing ranked: nothing to do
    # Recorded before the tables existed: no hook ran, no fraction was stored.
    add(db, ann, problem, 2.0, 1, report=report(0.25))
    add(db, ben, problem, 1.0, 2, report=report(None))
    db.commit()
    assert service.entries(db, problem, "cpu") == []

    assert upkeep.rebuild_if_empty(db)
    db.commit()
    board = service.entries(db, problem, "cpu")
    assert [(e.user, e.score, e.sol_fraction) for e in board] == [
        ("ben", 1.0, None),
        ("ann", 2.0, 0.25),
    ]
    assert chart(db, problem) == [(2.0, "ann"), (1.0, "ben")]
    assert not upkeep.rebuild_if_empty(db)


def test_a_report_graded_late_takes_records_from_later_submissions(session: Session) -> None:  # noqa: F811
    db = session
    problem = Problem(name="p", files={}, files_sha256="0" * 64, secret_seed=1, gpu_types=[])
    ann, ben, cat = (User(name=n) for n in ("ann", "ben", "cat"))
    db.add_all([problem, ann, ben, cat])
    db.flush()
    for user, score, minute in ((ben, 3.0, 10), (cat, 2.0, 20), (cat, 0.5, 30)):
        upkeep.submission_changed(db, add(db, user, problem, score, minute))
    assert chart(db, problem) == [(3.0, "ben"), (2.0, "cat"), (0.5, "cat")]

    def passes_late(minute: int, score: float) -> None:
        """ann's submission of `minute`, still running after the others, passes now."""
        submission = add(db, ann, problem, None, minute, status="running")
        submission.status, submission.score = "passed", score
        upkeep.submission_changed(db, submission)

    passes_late(15, 2.5)  # submitted before cat's first, graded after all of them
    assert chart(db, problem) == [(3.0, "ben"), (2.5, "ann"), (2.0, "cat"), (0.5, "cat")]
    passes_late(5, 1.0)
    assert [(r.at, r.score, r.user) for r in service.records(db, problem, "cpu")] == [
        (T0 + timedelta(minutes=5), 1.0, "ann"),
        (T0 + timedelta(minutes=30), 0.5, "cat"),
    ]
    assert [e.user for e in service.entries(db, problem, "cpu")] == ["cat", "ann", "ben"]
