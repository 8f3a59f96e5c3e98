"""A competition's freeze holds on its problems' own leaderboards and runs too: from the
freeze until the final results are published, everyone but the organizers reads each
problem's leaderboard as it stood at the freeze (the reader's own entry counting all of
theirs), and the runs made since are their authors' and the organizers' alone."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from server.competitions.schemas import Kind, Stored
from server.db import session_scope
from server.leaderboards import service as leaderboards
from server.leaderboards import upkeep
from server.models import Competition, Judging, Problem, User, utcnow
from tests.server.competitions.rig import (
    OPENED,
    add_competition,
    enter,
    problems,
    ranked,
    time_passes,
)
from tests.server.conftest import Account, make_account
from tests.server.web_client import HTML

pytestmark = pytest.mark.anyio


def rebuilt(problem: str) -> None:
    """The problem's boards made again from its submissions (the rig records runs as rows)."""
    with session_scope() as db:
        upkeep.rebuild(db, db.scalar(select(Problem).where(Problem.name == problem)))


async def board(
    client: httpx.AsyncClient, problem: str, reader: Account | None = None
) -> dict[str, Any]:
    response = await client.get(
        f"/api/v1/leaderboards/{problem}", headers=reader.headers if reader else {}
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


def rows(leaderboard: dict[str, Any]) -> list[tuple[int, str, float]]:
    return [(e["rank"], e["user"], e["score"]) for e in leaderboard["entries"]]


async def test_a_frozen_competitions_problems_show_their_boards_as_at_the_freeze(
    client: httpx.AsyncClient, admin: Account
) -> None:
    (problem,) = problems(1)
    name = await add_competition(client, admin, [problem])
    red, blue, outsider = make_account(), make_account(), make_account()
    await enter(client, name, red, team="Red")
    await enter(client, name, blue, team="Blue")
    ranked(red, problem, 2e-3, OPENED + timedelta(hours=1))
    ranked(blue, problem, 3e-3, OPENED + timedelta(hours=2))
    freeze = utcnow() - timedelta(hours=1)
    time_passes(name, freeze_at=freeze)
    after_freeze = ranked(blue, problem, 1e-3, utcnow() - timedelta(minutes=30))
    trial = ranked(blue, problem, 9e-4, utcnow() - timedelta(minutes=20), mode="benchmark")
    rebuilt(problem)

    frozen = [(1, red.name, 2e-3), (2, blue.name, 3e-3)]
    public = await board(client, problem)
    assert rows(public) == frozen and public["total"] == 2
    assert public["frozen_at"] is not None and public["you"] is None
    # A reader outside the competition and a competitor of another team: the same board.
    assert rows(await board(client, problem, outsider)) == frozen
    seen_by_red = await board(client, problem, red)
    assert rows(seen_by_red) == frozen and seen_by_red["you"]["score"] == 2e-3
    # Blue's own entry counts the run after the freeze, ranked against the frozen rows;
    # the rows stay as they stood.
    seen_by_blue = await board(client, problem, blue)
    assert rows(seen_by_blue) == frozen
    you = seen_by_blue["you"]
    assert (you["rank"], you["score"], you["submission_id"]) == (1, 1e-3, after_freeze)
    # Organizers read the live board.
    live = await board(client, problem, admin)
    assert live["frozen_at"] is None
    assert rows(live) == [(1, blue.name, 1e-3), (2, red.name, 2e-3)]

    # The problem page says so and shows the frozen board; the runs since are private.
    page = (await client.get(f"/problems/{problem}", headers=HTML)).text
    assert 'id="frozen"' in page and f"/submissions/{after_freeze}" not in page
    for sid in (after_freeze, trial):
        assert (await client.get(f"/submissions/{sid}", headers=HTML)).status_code == 404
        other = await client.get(f"/api/v1/submissions/{sid}", headers=red.headers)
        assert other.status_code == 404
        own = await client.get(f"/api/v1/submissions/{sid}", headers=blue.headers)
        assert own.status_code == 200
        assert (await client.get(f"/api/v1/submissions/{sid}", headers=admin.headers)).is_success
    blue_page = (await client.get(f"/users/{blue.name}", headers=HTML)).text
    assert f'/submissions/{after_freeze}"' not in blue_page
    assert f'/submissions/{trial}"' not in blue_page

    # Closing keeps the board frozen; publishing the final results opens it.
    time_passes(name, closes_at=utcnow() - timedelta(minutes=5))
    assert rows(await board(client, problem)) == frozen
    assert (await client.get(f"/submissions/{trial}", headers=HTML)).status_code == 404
    with session_scope() as db:
        competition = db.scalar(select(Competition).where(Competition.name == name))
        assert competition is not None
        db.add(
            Judging(
                kind=Kind.FINAL,
                competition_id=competition.id,
                runs=1,
                status=Stored.PUBLISHED,
                entries={},
            )
        )
    # (read with a token: an anonymous reader may get the copy of the last second)
    opened = await board(client, problem, outsider)
    assert opened["frozen_at"] is None
    assert rows(opened) == [(1, blue.name, 1e-3), (2, red.name, 2e-3)]
    published = await client.get(f"/api/v1/submissions/{after_freeze}", headers=red.headers)
    assert published.status_code == 200


def competitors_on_home(page: str, problem: str) -> int:
    """The home page's competitor count of ``problem``."""
    row = page.split(f'href="/problems/{problem}"', 1)[1].split("</tr>", 1)[0]
    found = re.search(r'<td class="num">(\d+)</td>', row)
    assert found is not None, row
    return int(found.group(1))


async def test_the_home_pages_competitor_count_stops_at_the_freeze(
    client: httpx.AsyncClient, admin: Account
) -> None:
    (problem,) = problems(1)
    name = await add_competition(client, admin, [problem])
    red, late = make_account(), make_account()
    await enter(client, name, red, team="Red")
    await enter(client, name, late, team="Late")
    ranked(red, problem, 2e-3, OPENED + timedelta(hours=1))
    time_passes(name, freeze_at=utcnow() - timedelta(hours=1))
    # A competitor whose first run came after the freeze is not counted in public yet.
    ranked(late, problem, 1e-3, utcnow() - timedelta(minutes=30))
    rebuilt(problem)

    assert competitors_on_home((await client.get("/", headers=HTML)).text, problem) == 1
    with session_scope() as db:
        viewer = db.scalar(select(User).where(User.name == admin.name))
        the_problem = db.scalar(select(Problem).where(Problem.name == problem))
        assert the_problem is not None
        assert leaderboards.competitor_counts(db, viewer)[the_problem.id] == 2
        assert leaderboards.competitor_counts(db, None)[the_problem.id] == 1
