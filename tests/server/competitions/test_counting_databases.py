"""The query behind every entry (which submissions count, each team's best) on SQLite and on
PostgreSQL alike: the window, registration, the members' best with ties to the earlier."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from server.competitions.standings import board
from server.models import Competition, CompetitionProblem, Problem, Team, TeamMember, User, utcnow
from tests.server.rows import submission_row
from tests.services import migrated_database


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def session(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Session]:
    with migrated_database(request.param, tmp_path) as db:
        yield db


def test_entries_are_the_members_best_counting_submissions(session: Session) -> None:
    now = utcnow()
    opened = now - timedelta(days=2)
    problem = Problem(name="p", files={}, files_sha256="0" * 64, secret_seed=1, gpu_types=[])
    ann, ben, cat = (User(name=name) for name in ("ann", "ben", "cat"))
    competition = Competition(
        name="c", title="C", gpu_type="cpu", opens_at=opened, closes_at=now - timedelta(hours=1),
        scoring="rank_points", team_size=2, final_runs=5,
        problems=[CompetitionProblem(problem=problem, position=0)],
    )  # fmt: skip
    session.add_all([problem, ann, ben, cat, competition])
    session.flush()
    red = Team(competition_id=competition.id, name="Red", invite_code="r" * 22)
    blue = Team(competition_id=competition.id, name="Blue", invite_code="b" * 22)
    session.add_all([red, blue])
    session.flush()
    session.add_all(
        [
            TeamMember(team_id=red.id, user_id=ann.id, competition_id=competition.id,
                       registered_at=opened),
            TeamMember(team_id=red.id, user_id=ben.id, competition_id=competition.id,
                       registered_at=opened + timedelta(hours=5)),
            TeamMember(team_id=blue.id, user_id=cat.id, competition_id=competition.id,
                       registered_at=opened),
        ]
    )  # fmt: skip

    def add(user: User, score: float, hours: float) -> int:
        row = submission_row(
            user.id, problem.id, mode="leaderboard", status="passed", score=score,
            created_at=opened + timedelta(hours=hours),
        )  # fmt: skip
        session.add(row)
        session.flush()
        return row.id

    ann_first = add(ann, 2e-3, 1)
    add(ann, 2e-3, 3)  # the same score later: not the entry
    add(ben, 1e-3, 4)  # before ben registered
    add(cat, 3e-3, 2)
    add(cat, 1e-6, 47.5)  # after the close
    session.commit()

    found = board(session, competition, None)
    assert [(row.rank, row.team.name) for row in found.rows] == [(1, "Red"), (2, "Blue")]
    red_row = found.rows[0]
    assert red_row.placed is not None
    assert red_row.placed.cells["p"].entry.submission_id == ann_first
    assert red_row.members == ["ann", "ben"]
