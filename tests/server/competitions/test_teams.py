"""Entering a competition: forming a team (its invite code unguessable), joining one with the
code, entering alone; one team per competition, at most team_size members, and every refusal
a 4xx that says why."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from server.db import session_scope
from server.models import Competition, TeamMember, User
from tests.server.competitions.rig import OPENED, add_competition, iso, problems
from tests.server.conftest import Account, make_account

pytestmark = pytest.mark.anyio


async def form(
    client: httpx.AsyncClient, competition: str, member: Account, team: str
) -> httpx.Response:
    return await client.post(
        f"/api/v1/competitions/{competition}/teams", json={"name": team}, headers=member.headers
    )


async def join(
    client: httpx.AsyncClient, competition: str, member: Account, invite: str
) -> httpx.Response:
    return await client.post(
        f"/api/v1/competitions/{competition}/join", json={"invite": invite}, headers=member.headers
    )


async def test_a_team_is_formed_and_joined_with_its_invite_code(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name = await add_competition(client, admin, problems(1), team_size=3)
    ada, bob = make_account(), make_account()
    made = await form(client, name, ada, "Fast Lane")
    assert made.status_code == 201, made.text
    invite = made.json()["invite"]
    assert made.json() == {"team": "Fast Lane", "invite": invite, "members": [ada.name]}
    # 128 random bits, URL-safe; another team's code is another.
    assert len(invite) >= 22 and invite.replace("-", "").replace("_", "").isalnum()
    other = await form(client, name, make_account(), "Other")
    assert other.json()["invite"] != invite

    joined = await join(client, name, bob, invite)
    assert joined.status_code == 200, joined.text
    assert joined.json()["members"] == [ada.name, bob.name]
    mine = (await client.get(f"/api/v1/competitions/{name}", headers=bob.headers)).json()
    assert mine["your_team"] == {
        "team": "Fast Lane",
        "invite": invite,
        "members": [ada.name, bob.name],
    }
    assert mine["teams"] == 2
    assert (await client.get(f"/api/v1/competitions/{name}")).json()["your_team"] is None


async def test_a_full_team_takes_nobody_more(client: httpx.AsyncClient, admin: Account) -> None:
    name = await add_competition(client, admin, problems(1), team_size=2)
    made = await form(client, name, make_account(), "Pair")
    assert (await join(client, name, make_account(), made.json()["invite"])).status_code == 200
    third = await join(client, name, make_account(), made.json()["invite"])
    assert third.status_code == 409
    assert third.json()["detail"] == "team 'Pair' is full: 2 of 2 members"


async def test_one_team_per_competition(client: httpx.AsyncClient, admin: Account) -> None:
    first = await add_competition(client, admin, problems(1))
    ada = make_account()
    made = await form(client, first, ada, "Solo Act")
    invite = made.json()["invite"]
    # The same team again, another team, a team of one: all refused.
    for response in (
        await join(client, first, ada, invite),
        await form(client, first, ada, "Second Team"),
        await client.post(f"/api/v1/competitions/{first}/register", headers=ada.headers),
    ):
        assert response.status_code == 409, response.text
        assert "you are in team 'Solo Act'" in response.json()["detail"]
        assert "one team per competition" in response.json()["detail"]
    # Another competition is another matter.
    second = await add_competition(client, admin, problems(1))
    assert (await form(client, second, ada, "Solo Act")).status_code == 201


async def test_the_database_holds_one_team_per_user_and_competition_too(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name = await add_competition(client, admin, problems(1))
    ada = make_account()
    await form(client, name, ada, "Red")
    other = await form(client, name, make_account(), "Blue")
    with session_scope() as db:
        competition_id = db.scalar(select(Competition.id).where(Competition.name == name))
        ada_id = db.scalar(select(User.id).where(User.name == ada.name))
        blue = db.scalar(
            select(TeamMember.team_id)
            .where(TeamMember.competition_id == competition_id)
            .order_by(TeamMember.team_id.desc())
        )
        assert other.status_code == 201 and blue is not None
    with pytest.raises(IntegrityError), session_scope() as db:
        db.add(TeamMember(team_id=blue, user_id=ada_id, competition_id=competition_id))
        db.flush()


async def test_entering_alone_is_a_team_of_one_named_after_you(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name = await add_competition(client, admin, problems(1), team_size=1)
    ada = make_account()
    entered = await client.post(f"/api/v1/competitions/{name}/register", headers=ada.headers)
    assert entered.status_code == 200, entered.text
    assert (entered.json()["team"], entered.json()["members"]) == (ada.name, [ada.name])
    # Teams of one: nobody joins it.
    full = await join(client, name, make_account(), entered.json()["invite"])
    assert full.status_code == 409 and "is full: 1 of 1" in full.json()["detail"]


async def test_team_names_are_one_whatever_their_case(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name = await add_competition(client, admin, problems(1))
    assert (await form(client, name, make_account(), "Fast Lane")).status_code == 201
    taken = await form(client, name, make_account(), "  fast   lane ")
    assert (
        taken.status_code == 409
        and "has a team named 'fast lane' already" in taken.json()["detail"]
    )
    for bad in ("", "   ", "a/b", "x" * 65, "bell\x07", "nul\x00"):
        refused = await form(client, name, make_account(), bad)
        assert refused.status_code == 422, bad


async def test_refusals_say_why(client: httpx.AsyncClient, admin: Account) -> None:
    name = await add_competition(client, admin, problems(1))
    ada = make_account()
    wrong = await join(client, name, ada, "not-a-code")
    assert wrong.status_code == 404
    assert wrong.json()["detail"].startswith(
        f"no team of competition {name!r} has this invite code"
    )
    # Another competition's code opens nothing here.
    elsewhere = await add_competition(client, admin, problems(1))
    code = (await form(client, elsewhere, make_account(), "Away")).json()["invite"]
    assert (await join(client, name, ada, code)).status_code == 404

    unknown = await form(client, "no-such-sprint", ada, "Team")
    assert unknown.status_code == 404 and "no competition named 'no-such-sprint'" in unknown.text
    assert (
        await client.post(f"/api/v1/competitions/{name}/teams", json={"name": "Anon"})
    ).status_code == 401

    closes = OPENED + timedelta(days=1)
    closed = await add_competition(client, admin, problems(1), closes_at=iso(closes))
    for response in (
        await form(client, closed, ada, "Late"),
        await join(client, closed, ada, code),
        await client.post(f"/api/v1/competitions/{closed}/register", headers=ada.headers),
    ):
        assert response.status_code == 409
        assert response.json()["detail"] == (
            f"competition {closed!r} closed at {closes:%Y-%m-%d %H:%M} UTC; teams can no "
            "longer be formed or joined"
        )


async def test_a_disqualified_team_takes_nobody_more(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name = await add_competition(client, admin, problems(1))
    made = await form(client, name, make_account(), "Cheats")
    await client.post(
        f"/api/v1/competitions/{name}/teams/Cheats/disqualify",
        json={"reason": "shared code"},
        headers=admin.headers,
    )
    refused = await join(client, name, make_account(), made.json()["invite"])
    assert refused.status_code == 409
    assert refused.json()["detail"] == "team 'Cheats' is disqualified: shared code"
