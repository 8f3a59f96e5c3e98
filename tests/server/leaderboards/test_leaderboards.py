"""The leaderboard: each user's best passing leaderboard-mode score, ascending, ties to the
earlier submission; on SQLite and on PostgreSQL. Rows are added as the service records
them: the submission, then ``upkeep.submission_changed``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.db import session_scope
from server.leaderboards import service, upkeep
from server.models import Problem, Submission, User
from tests.server.conftest import Account
from tests.server.rows import submission_row
from tests.services import migrated_database

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgresql"])
def session(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Session]:
    with migrated_database(request.param, tmp_path) as db:
        yield db


def add(
    db: Session, user: User, problem: Problem, score: float | None, minutes: int, **overrides
) -> Submission:  # type: ignore[no-untyped-def]
    fields = dict(
        mode="leaderboard",
        status="passed",
        score=score,
        created_at=T0 + timedelta(minutes=minutes),
    )
    fields.update(overrides)
    submission = submission_row(user.id, problem.id, **fields)
    db.add(submission)
    db.flush()
    return submission


def test_ranking_rules(session: Session) -> None:
    problem = Problem(name="p", files={}, files_sha256="0" * 64, secret_seed=1, gpu_types=[])
    users = [User(name=n) for n in ("ann", "ben", "cat", "dan", "eve")]
    session.add_all([problem, *users])
    session.flush()
    ann, ben, cat, dan, eve = users
    ranked = [
        add(session, ann, problem, 3.0, 1),
        ann_best := add(session, ann, problem, 2.0, 2),
        add(session, ann, problem, 2.0, 3),  # same score later: not the one shown
        ben_first := add(session, ben, problem, 2.0, 0),  # ties ann, earlier: ranks above her
        add(session, cat, problem, 1.0, 5, status="failed"),  # not passing
        cat_ok := add(session, cat, problem, 4.0, 6),
        add(session, dan, problem, 0.5, 7, mode="benchmark"),  # not leaderboard mode
        add(session, eve, problem, 0.1, 8, gpu_type="h200"),  # other device type
    ]
    for submission in ranked:
        upkeep.submission_changed(session, submission)
    session.commit()

    board = service.entries(session, problem, "cpu")
    assert [(e.rank, e.user, e.score, e.submission_id) for e in board] == [
        (1, "ben", 2.0, ben_first.id),
        (2, "ann", 2.0, ann_best.id),
        (3, "cat", 4.0, cat_ok.id),
    ]
    assert [e.user for e in service.entries(session, problem, "h200")] == ["eve"]
    # Read again (from the cache now), and rebuilt from the submissions table: the same.
    assert service.entries(session, problem, "cpu") == board
    upkeep.rebuild(session)
    session.commit()
    assert service.entries(session, problem, "cpu") == board


@pytest.mark.anyio
async def test_leaderboard_endpoint(client: httpx.AsyncClient, alice: Account) -> None:
    with session_scope() as db:
        problem = db.scalar(select(Problem).where(Problem.name == "vectoradd"))
        user = db.scalar(select(User).where(User.name == alice.name))
        assert problem is not None and user is not None
        mine = add(db, user, problem, 1e-3, 0, created_at=datetime.now(UTC))
        upkeep.submission_changed(db, mine)
    board = (await client.get("/api/v1/leaderboards/vectoradd")).json()
    assert board["problem"] == "vectoradd" and board["gpu"] == "cpu"
    shown = [entry for entry in board["entries"] if entry["user"] == alice.name]
    assert shown and shown[0]["score"] == 1e-3
    assert [entry["rank"] for entry in board["entries"]] == list(
        range(1, len(board["entries"]) + 1)
    )

    response = await client.get("/api/v1/leaderboards/vectoradd", params={"gpu": "b200"})
    assert response.status_code == 422 and "b200" in response.json()["detail"]
    response = await client.get("/api/v1/leaderboards/unknown-problem")
    assert response.status_code == 404 and response.json()["error"] == "not_found"
