"""What the competition tests build: problems of their own (copies of vectoradd), a
competition file, teams entered through the API with their registration moved back to the
opening, and ranked submissions written as the results step records them."""

from __future__ import annotations

from datetime import datetime, timedelta
from itertools import count
from typing import Any

import httpx
from sqlalchemy import select, update

from server.db import session_scope
from server.models import Competition, Problem, TeamMember, User, utcnow
from tests.server.conftest import Account, make_account
from tests.server.rows import added_submission
from tests.server.web.test_web_pages import new_problem

_names = count()

# Every competition here opened five days ago and closes in five days, unless a test says.
OPENED = utcnow().replace(microsecond=0) - timedelta(days=5)
LATER = OPENED + timedelta(days=30)  # for a competition that has not opened yet


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_names)}"


def problems(how_many: int) -> list[str]:
    """New problems (vectoradd's files under new names), offered on the CPU."""
    names = [unique("cp") for _ in range(how_many)]
    for name in names:
        new_problem(name)
    return names


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def competition_file(problem_names: list[str], **fields: Any) -> dict[str, Any]:
    """A valid competition file as JSON: open now, rank_points, teams of up to three."""
    body: dict[str, Any] = {
        "name": unique("comp"),
        "title": "A test sprint",
        "description": "Three problems, **ten days**.",
        "problems": [{"name": name} for name in problem_names],
        "gpu": "cpu",
        "opens_at": iso(OPENED),
        "closes_at": iso(OPENED + timedelta(days=10)),
        "scoring": "rank_points",
        "team_size": 3,
        "final_runs": 5,
    }
    body.update(fields)
    return body


async def add_competition(
    client: httpx.AsyncClient, admin: Account, problem_names: list[str], **fields: Any
) -> str:
    body = competition_file(problem_names, **fields)
    response = await client.post("/api/v1/competitions", json=body, headers=admin.headers)
    assert response.status_code == 201, response.text
    return str(body["name"])


async def enter(
    client: httpx.AsyncClient, competition: str, *members: Account, team: str | None = None
) -> str:
    """The first member forms the team (or, without a name, enters alone); the others join
    with its invite code. Everyone's registration is moved back to the opening, so their
    submissions from then on count. The team's name."""
    first, *others = members
    if team is None:
        made = await client.post(
            f"/api/v1/competitions/{competition}/register", headers=first.headers
        )
        assert made.status_code == 200, made.text
    else:
        made = await client.post(
            f"/api/v1/competitions/{competition}/teams", json={"name": team}, headers=first.headers
        )
        assert made.status_code == 201, made.text
    for member in others:
        joined = await client.post(
            f"/api/v1/competitions/{competition}/join",
            json={"invite": made.json()["invite"]},
            headers=member.headers,
        )
        assert joined.status_code == 200, joined.text
    for member in members:
        registered_at(competition, member, OPENED)
    return str(made.json()["team"])


async def red_and_blue(
    client: httpx.AsyncClient, admin: Account, problem_names: list[str], **fields: Any
) -> tuple[str, Account, Account]:
    """A competition on these problems with two teams of one entered, Red and Blue: its name
    and their members."""
    name = await add_competition(client, admin, problem_names, **fields)
    red, blue = make_account(), make_account()
    await enter(client, name, red, team="Red")
    await enter(client, name, blue, team="Blue")
    return name, red, blue


def registered_at(competition: str, member: Account, at: datetime) -> None:
    with session_scope() as db:
        competition_id = db.scalar(select(Competition.id).where(Competition.name == competition))
        user_id = db.scalar(select(User.id).where(User.name == member.name))
        db.execute(
            update(TeamMember)
            .where(TeamMember.competition_id == competition_id, TeamMember.user_id == user_id)
            .values(registered_at=at)
        )


def ranked(
    member: Account,
    problem: str,
    score: float | None,
    at: datetime,
    *,
    sol_fraction: float | None = None,
    **fields: Any,
) -> int:
    """A passed leaderboard-mode submission on the CPU, as recorded; its id. ``fields``
    change any column (mode, status, gpu_type, is_hidden, ...)."""
    with session_scope() as db:
        user = db.scalar(select(User).where(User.name == member.name))
        record = db.scalar(select(Problem).where(Problem.name == problem))
        assert user is not None and record is not None
        values: dict[str, Any] = {
            "mode": "leaderboard",
            "status": "passed",
            "score": score,
            "sol_fraction": sol_fraction,
            "created_at": at,
            "finished_at": at,
            **fields,
        }
        return added_submission(db, user, record, **values).id


async def standings(
    client: httpx.AsyncClient, competition: str, viewer: Account | None = None
) -> dict[str, Any]:
    response = await client.get(
        f"/api/v1/competitions/{competition}/standings",
        headers=viewer.headers if viewer is not None else {},
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


def by_team(board: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["team"]: row for row in board["rows"]}


def time_passes(competition: str, **moments: datetime) -> None:
    """As if the clock had moved on: the competition's ``closes_at`` or ``freeze_at`` set to
    a moment past, which an organizer cannot do once it opened."""
    with session_scope() as db:
        db.execute(update(Competition).where(Competition.name == competition).values(**moments))
