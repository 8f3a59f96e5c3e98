"""Entering a competition on its page: forming a team, its invite link opened by another
competitor, joining by code, entering alone; each refusal said next to its field with
nothing kept; every form needs its CSRF token."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from itertools import count

import httpx
import pytest

from server.models import utcnow
from tests.server.competitions.rig import add_competition, problems, time_passes
from tests.server.conftest import Account
from tests.server.web_client import HTML, client_at, field_error, log_in, make_user, post_form

pytestmark = pytest.mark.anyio

_addresses = count(1)
INVITE_LINK = re.compile(r'id="invite-link" class="token">([^<]+)<')


def competitor(prefix: str = "entrant") -> Account:
    name, token = make_user(prefix)
    return Account(name, token)


@asynccontextmanager
async def signed_in(prefix: str = "entrant") -> AsyncIterator[tuple[httpx.AsyncClient, Account]]:
    """A browser of its own with a new competitor signed in."""
    account = competitor(prefix)
    async with client_at(f"10.34.0.{next(_addresses)}") as browser:
        assert (await log_in(browser, account.name)).status_code == 303
        yield browser, account


async def enter(
    browser: httpx.AsyncClient, competition: str, action: str, fields: dict[str, str]
) -> httpx.Response:
    return await post_form(
        browser,
        f"/competitions/{competition}/{action}",
        fields,
        from_page=f"/competitions/{competition}",
    )


async def test_a_team_is_formed_and_joined_by_its_invite_link(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name = await add_competition(client, admin, problems(1), team_size=3)
    async with signed_in("ada") as (ada_browser, ada):
        formed = await enter(ada_browser, name, "teams", {"team_name": "  Fast   Lane "})
        assert formed.status_code == 303
        assert formed.headers["location"] == f"/competitions/{name}#your-team"
        page = await ada_browser.get(formed.headers["location"], headers=HTML)
        assert "You formed team Fast Lane." in page.text
        assert "Your team: Fast Lane" in page.text and 'id="enter"' not in page.text
        link_match = INVITE_LINK.search(page.text)
        assert link_match
        link = link_match.group(1)
    api = (await client.get(f"/api/v1/competitions/{name}", headers=ada.headers)).json()
    assert link == f"http://test/competitions/{name}/join?invite={api['your_team']['invite']}"

    # Signed out, the link asks to log in first and comes back.
    path = link.removeprefix("http://test")
    async with client_at("10.34.1.1") as stranger:
        away = await stranger.get(path, headers=HTML)
        assert away.status_code == 303
        assert away.headers["location"].startswith("/login?next=")
        assert "invite" in away.headers["location"]

    async with signed_in("bob") as (bob_browser, bob):
        offer = await bob_browser.get(path, headers=HTML)
        assert offer.status_code == 200
        assert "You are invited to join team <strong>Fast Lane</strong> (1 of 3" in offer.text
        joined = await post_form(
            bob_browser,
            f"/competitions/{name}/join",
            {"invite": api["your_team"]["invite"]},
            from_page=path,
        )
        assert joined.status_code == 303
        page = await bob_browser.get(joined.headers["location"], headers=HTML)
        assert "You joined team Fast Lane." in page.text
        assert "Members (2 of 3)" in page.text
    mine = (await client.get(f"/api/v1/competitions/{name}", headers=bob.headers)).json()
    assert mine["your_team"]["members"] == [ada.name, bob.name]


async def test_a_pasted_link_joins_too_and_a_wrong_code_is_said(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name = await add_competition(client, admin, problems(1))
    made = await client.post(
        f"/api/v1/competitions/{name}/teams", json={"name": "Red"}, headers=competitor().headers
    )
    invite = made.json()["invite"]
    async with signed_in() as (browser, _):
        wrong = await enter(browser, name, "join", {"invite": "not-a-code"})
        assert wrong.status_code == 404
        assert field_error(wrong, "invite").startswith("no team of competition")
        assert 'value="not-a-code"' in wrong.text  # what was typed stays
        opened = await browser.get(f"/competitions/{name}/join?invite=nothing", headers=HTML)
        assert "no team of competition" in field_error(opened, "invite")
        pasted = await enter(
            browser, name, "join", {"invite": f"http://x/competitions/{name}/join?invite={invite}"}
        )
        assert pasted.status_code == 303


async def test_entering_alone(client: httpx.AsyncClient, admin: Account) -> None:
    name = await add_competition(client, admin, problems(1), team_size=1)
    async with signed_in() as (browser, ada):
        shown = await browser.get(f"/competitions/{name}", headers=HTML)
        assert 'id="team_name"' not in shown.text  # teams of one: no team forms
        entered = await enter(browser, name, "register", {})
        assert entered.status_code == 303
        page = await browser.get(entered.headers["location"], headers=HTML)
        assert f"You entered alone, as team {ada.name}." in page.text
        assert 'id="invite-link"' not in page.text  # nobody can join a team of one


async def test_refusals_are_said_next_to_their_field_and_keep_nothing(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name = await add_competition(client, admin, problems(1), team_size=2)
    made = await client.post(
        f"/api/v1/competitions/{name}/teams", json={"name": "Pair"}, headers=competitor().headers
    )
    invite = made.json()["invite"]
    filler = competitor()
    await client.post(
        f"/api/v1/competitions/{name}/join", json={"invite": invite}, headers=filler.headers
    )
    async with signed_in() as (browser, ada):
        full = await enter(browser, name, "join", {"invite": invite})
        assert full.status_code == 409
        assert field_error(full, "invite") == "team &#39;Pair&#39; is full: 2 of 2 members"

        bad = await enter(browser, name, "teams", {"team_name": "a/b"})
        assert bad.status_code == 422
        assert "without &#39;/&#39;" in field_error(bad, "team_name")
        taken = await enter(browser, name, "teams", {"team_name": "pair"})
        assert taken.status_code == 409 and "has a team named" in field_error(taken, "team_name")

        assert (await enter(browser, name, "teams", {"team_name": "Mine"})).status_code == 303
        again = await enter(browser, name, "register", {})
        assert again.status_code == 409
        assert "one team per competition" in field_error(again, "register")
    teams = (await client.get(f"/api/v1/competitions/{name}")).json()["teams"]
    assert teams == 2
    mine = (await client.get(f"/api/v1/competitions/{name}", headers=ada.headers)).json()
    assert mine["your_team"]["team"] == "Mine"


async def test_a_closed_competition_takes_no_entry(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name = await add_competition(client, admin, problems(1))
    async with signed_in() as (browser, _):
        token_page = await browser.get(f"/competitions/{name}", headers=HTML)
        assert 'id="enter"' in token_page.text
        time_passes(name, closes_at=utcnow() - timedelta(minutes=1))
        shown = await browser.get(f"/competitions/{name}", headers=HTML)
        assert "Enter alone" not in shown.text
        # A form shown before the close, sent after it.
        token = re.search(r'name="csrf_token" value="([^"]+)"', token_page.text)
        assert token
        late = await browser.post(
            f"/competitions/{name}/register", data={"csrf_token": token.group(1)}, headers=HTML
        )
        assert late.status_code == 409
        assert "teams can no longer be formed or joined" in late.text


async def test_entry_forms_need_the_csrf_token_and_a_signed_in_user(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name = await add_competition(client, admin, problems(1))
    async with signed_in() as (browser, _):
        await browser.get(f"/competitions/{name}", headers=HTML)
        for action, fields in (
            ("teams", {"team_name": "Forged"}),
            ("join", {"invite": "anything"}),
            ("register", {}),
        ):
            forged = await browser.post(f"/competitions/{name}/{action}", data=fields, headers=HTML)
            assert forged.status_code == 403, action
            assert "did not come from this site" in forged.text
    async with client_at("10.34.2.1") as stranger:
        shown = await stranger.get(f"/competitions/{name}", headers=HTML)
        assert "to enter." in shown.text and 'id="team_name"' not in shown.text
    assert (await client.get(f"/api/v1/competitions/{name}")).json()["teams"] == 0
