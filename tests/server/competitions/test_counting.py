"""Which submissions count for a team: a ranked (passed, scored, leaderboard-mode, neither
hidden nor hacked) submission on the competition's GPU type to one of its problems, made by
a member while the competition was open and after they registered. Anything else, a late
submission above all, leaves the standings as they were and is not mentioned there."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from tests.server.competitions.rig import (
    OPENED,
    add_competition,
    by_team,
    enter,
    iso,
    problems,
    ranked,
    registered_at,
    standings,
    time_passes,
)
from tests.server.conftest import Account, make_account

pytestmark = pytest.mark.anyio

HOUR = timedelta(hours=1)
CLOSES = OPENED + timedelta(days=2)  # closed three days ago


async def entry(client: httpx.AsyncClient, competition: str, team: str, problem: str) -> int:
    """The submission the public standings show as the team's entry for the problem."""
    board = await standings(client, competition)
    return by_team(board)[team]["problems"][problem]["submission_id"]


async def test_only_the_submissions_that_count_make_the_entry(
    client: httpx.AsyncClient, admin: Account
) -> None:
    names = problems(2)
    name = await add_competition(client, admin, names)
    ada, bob, stranger = make_account(), make_account(), make_account()
    await enter(client, name, ada, bob, team="Red")
    time_passes(name, closes_at=CLOSES)
    counting = ranked(ada, names[0], 5e-3, OPENED + HOUR)
    # Each of these is faster, and none counts:
    ranked(ada, names[0], 1e-3, OPENED + HOUR, mode="benchmark")
    ranked(ada, names[0], 1e-3, OPENED + HOUR, status="failed")
    ranked(ada, names[0], None, OPENED + HOUR)  # passed, but no score
    ranked(ada, names[0], 1e-3, OPENED + HOUR, gpu_type="h200")
    ranked(ada, names[0], 1e-3, OPENED - HOUR)  # before it opened
    ranked(ada, names[0], 1e-3, CLOSES)  # at the close: late
    ranked(ada, names[0], 1e-3, CLOSES + HOUR)  # after it
    ranked(ada, names[0], 1e-3, OPENED + HOUR, is_hidden=True)
    ranked(ada, names[0], 1e-3, OPENED + HOUR, is_hacked=True)
    ranked(stranger, names[0], 1e-3, OPENED + HOUR)  # not a member
    board = await standings(client, name)
    assert [(row["team"], row["rank"]) for row in board["rows"]] == [("Red", 1)]
    assert by_team(board)["Red"]["problems"] == {
        names[0]: {
            "rank": 1,
            "score": 5e-3,
            "submission_id": counting,
            "submitted_at": iso(OPENED + HOUR),
            "value": 100.0,
        }
    }
    assert board["notes"] == [
        f"The competition closed at {CLOSES:%Y-%m-%d %H:%M} UTC; the results are not final "
        "until the organizers publish them."
    ]

    # A member's better submission in time is the team's entry, whoever made it.
    better = ranked(bob, names[0], 4e-3, OPENED + 2 * HOUR)
    assert await entry(client, name, "Red", names[0]) == better


async def test_a_submission_counts_only_once_its_author_registered(
    client: httpx.AsyncClient, admin: Account
) -> None:
    names = problems(1)
    name = await add_competition(client, admin, names)
    ada, bob = make_account(), make_account()
    await enter(client, name, ada, bob, team="Late Joiner")
    registered_at(name, bob, OPENED + 3 * HOUR)
    ranked(bob, names[0], 1e-3, OPENED + 2 * HOUR)  # before bob joined: not the team's
    mine = ranked(ada, names[0], 2e-3, OPENED + HOUR)
    assert await entry(client, name, "Late Joiner", names[0]) == mine
    since = ranked(bob, names[0], 1.5e-3, OPENED + 4 * HOUR)
    assert await entry(client, name, "Late Joiner", names[0]) == since


async def test_a_late_submission_leaves_the_standings_as_they_were(
    client: httpx.AsyncClient, admin: Account
) -> None:
    names = problems(1)
    name = await add_competition(client, admin, names)
    ada, cat = make_account(), make_account()
    await enter(client, name, ada, team="Ahead")
    await enter(client, name, cat, team="Behind")
    time_passes(name, closes_at=CLOSES)
    ranked(ada, names[0], 1e-3, OPENED + HOUR)
    ranked(cat, names[0], 2e-3, OPENED + HOUR)
    before = await standings(client, name)
    ranked(cat, names[0], 1e-6, CLOSES + HOUR)
    after = await standings(client, name)
    # Not a rank, a total, a note or a submission id of it: the same body.
    assert after == before
    assert [row["team"] for row in after["rows"]] == ["Ahead", "Behind"]
