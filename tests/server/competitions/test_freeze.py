"""The freeze: from freeze_at the public board counts only the submissions made before it;
a member's own team's row, read with their token, counts all of theirs (marked live), and
organizers read the live board. Disqualified teams come last, unranked, with the reason."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from server.models import utcnow
from tests.server.competitions.rig import (
    OPENED,
    add_competition,
    by_team,
    enter,
    problems,
    ranked,
    red_and_blue,
    standings,
    time_passes,
)
from tests.server.conftest import Account, make_account
from tests.server.users.test_audit_log import audit_entries

pytestmark = pytest.mark.anyio


async def frozen_race(
    client: httpx.AsyncClient, admin: Account
) -> tuple[str, str, Account, Account]:
    """Red leads at the freeze, an hour ago. The competition, its problem, and Red's and
    Blue's members."""
    names = problems(1)
    name, red, blue = await red_and_blue(client, admin, names)
    freeze = utcnow() - timedelta(hours=1)
    time_passes(name, freeze_at=freeze)
    ranked(red, names[0], 2e-3, OPENED + timedelta(hours=1))
    ranked(blue, names[0], 3e-3, OPENED + timedelta(hours=2))
    return name, names[0], red, blue


async def test_the_public_board_stops_moving_at_the_freeze(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name, problem, red, blue = await frozen_race(client, admin)
    before = await standings(client, name)
    assert before["frozen"] is True and before["final"] is False
    assert [(row["rank"], row["team"]) for row in before["rows"]] == [(1, "Red"), (2, "Blue")]
    assert before["notes"][0].startswith("The board is frozen since ")

    after_freeze = ranked(blue, problem, 1e-3, utcnow() - timedelta(minutes=30))
    public = await standings(client, name)
    assert public == before
    # A competitor of another team reads the frozen board, their own row aside.
    seen_by_red = await standings(client, name, red)
    assert [(row["rank"], row["team"], row["live"]) for row in seen_by_red["rows"]] == [
        (1, "Red", True),
        (2, "Blue", False),
    ]
    assert by_team(seen_by_red)["Blue"]["problems"][problem]["score"] == 3e-3

    # Blue's own members see their row with everything they submitted, placed against the
    # frozen board: first, ahead of Red's frozen rank 1.
    seen_by_blue = await standings(client, name, blue)
    assert seen_by_blue["frozen"] is True
    rows = [(row["rank"], row["team"], row["yours"], row["live"]) for row in seen_by_blue["rows"]]
    assert rows == [(1, "Blue", True, True), (1, "Red", False, False)]
    assert by_team(seen_by_blue)["Blue"]["problems"][problem]["submission_id"] == after_freeze
    assert by_team(seen_by_blue)["Red"] == by_team(public)["Red"]

    # Organizers see the live board.
    live = await standings(client, name, admin)
    assert live["frozen"] is False
    assert [(row["rank"], row["team"]) for row in live["rows"]] == [(1, "Blue"), (2, "Red")]
    assert any("The public board is frozen since" in note for note in live["notes"])


async def test_a_disqualified_team_is_shown_last_with_the_reason(
    client: httpx.AsyncClient, admin: Account, alice: Account
) -> None:
    names = problems(1)
    name = await add_competition(client, admin, names)
    cheat, honest, third = make_account(), make_account(), make_account()
    await enter(client, name, cheat, team="Copycats")
    await enter(client, name, honest, team="Honest")
    await enter(client, name, third, team="Third")
    ranked(cheat, names[0], 1e-3, OPENED + timedelta(hours=1))
    ranked(honest, names[0], 2e-3, OPENED + timedelta(hours=1))
    ranked(third, names[0], 3e-3, OPENED + timedelta(hours=1))
    path = f"/api/v1/competitions/{name}/teams/copycats/disqualify"
    reason = {"reason": "submitted the same kernel as another team"}
    assert (await client.post(path, json=reason, headers=alice.headers)).status_code == 403
    done = await client.post(path, json=reason, headers=admin.headers)
    assert done.status_code == 200, done.text
    assert done.json()["team"] == "Copycats"
    assert done.json()["disqualified"]["reason"] == reason["reason"]

    board = await standings(client, name)
    assert [(row["rank"], row["team"], row["total"]) for row in board["rows"]] == [
        (1, "Honest", 100.0),
        (2, "Third", 50.0),
        (None, "Copycats", None),
    ]
    assert board["rows"][-1]["disqualified"]["reason"] == reason["reason"]
    assert board["rows"][-1]["problems"] == {}
    entries = await audit_entries(
        client, admin, action="team.disqualify", target=f"{name}/Copycats"
    )
    assert [(e["actor"], e["details"]["reason"]) for e in entries] == [
        (admin.name, reason["reason"])
    ]

    again = await client.post(path, json=reason, headers=admin.headers)
    assert again.status_code == 409 and "was disqualified at" in again.json()["detail"]
    unknown = await client.post(
        f"/api/v1/competitions/{name}/teams/nobody/disqualify", json=reason, headers=admin.headers
    )
    assert unknown.status_code == 404 and "no team named 'nobody'" in unknown.json()["detail"]
    empty = await client.post(
        f"/api/v1/competitions/{name}/teams/Honest/disqualify",
        json={"reason": "  "},
        headers=admin.headers,
    )
    assert empty.status_code == 422 and "say why" in empty.json()["detail"]
