"""The standings wherever a person reads them: `kerneljudge standings NAME --json` prints the
REST body as it came, the table shows each team's rank, members and entries; the CSV has a
row a team; the pages list the competitions and show the board, escaping what teams name
themselves."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from server.app import create_app
from server.cli import app as cli
from server.client import commands
from server.client.api import Api
from tests.server.competitions.rig import (
    OPENED,
    add_competition,
    enter,
    problems,
    ranked,
)
from tests.server.conftest import Account, make_account

HOUR = timedelta(hours=1)


class InProcess(httpx.BaseTransport):
    """The app in this process for the client's synchronous httpx: each request on an event
    loop of its own."""

    def __init__(self) -> None:
        self.asgi = httpx.ASGITransport(app=create_app())

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        async def send() -> httpx.Response:
            response = await self.asgi.handle_async_request(request)
            content = await response.aread()
            return httpx.Response(response.status_code, headers=response.headers, content=content)

        return asyncio.run(send())


@pytest.fixture
def race(database: None, admin: Account) -> Iterator[tuple[str, list[str], Account]]:
    """Two problems, a team of two ahead of a competitor alone (disqualified later by some
    tests); yields the competition, its problems and a member of the team."""

    async def build() -> tuple[str, list[str], Account]:
        transport = httpx.ASGITransport(app=create_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            names = problems(2)
            name = await add_competition(client, admin, names)
            ada, bob, eve = make_account(), make_account(), make_account()
            await enter(client, name, ada, bob, team="<i>Bold & Co")
            await enter(client, name, eve)
            ranked(ada, names[0], 1e-3, OPENED + HOUR)
            ranked(bob, names[1], 2e-5, OPENED + HOUR)
            ranked(eve, names[0], 3e-3, OPENED + 2 * HOUR)
            return name, names, ada

    yield asyncio.run(build())


def rest(path: str, account: Account | None = None) -> httpx.Response:
    with httpx.Client(transport=InProcess(), base_url="http://test") as http:
        return http.get(path, headers=account.headers if account else {})


def kerneljudge(monkeypatch: pytest.MonkeyPatch, token: str | None, *args: str) -> Any:
    monkeypatch.setenv("KJ_URL", "http://test")
    if token is None:
        monkeypatch.delenv("KJ_TOKEN", raising=False)
    else:
        monkeypatch.setenv("KJ_TOKEN", token)
    monkeypatch.setattr(commands, "api", lambda login: Api(login, transport=InProcess()))
    return CliRunner().invoke(cli, list(args))


def test_standings_json_is_the_rest_body(
    race: tuple[str, list[str], Account], monkeypatch: pytest.MonkeyPatch
) -> None:
    name, _, ada = race
    done = kerneljudge(monkeypatch, ada.token, "standings", name, "--json")
    assert done.exit_code == 0, done.output
    body = rest(f"/api/v1/competitions/{name}/standings", ada).json()
    assert json.loads(done.stdout) == body
    assert body["rows"][0]["yours"] is True
    anonymous = kerneljudge(monkeypatch, None, "standings", name, "--json")
    assert json.loads(anonymous.stdout) == rest(f"/api/v1/competitions/{name}/standings").json()

    unknown = kerneljudge(monkeypatch, ada.token, "standings", "no-such-sprint")
    assert unknown.exit_code == 6
    assert "not found: no competition named 'no-such-sprint'" in " ".join(unknown.output.split())


def test_standings_table(
    race: tuple[str, list[str], Account], monkeypatch: pytest.MonkeyPatch
) -> None:
    name, names, ada = race
    monkeypatch.setenv("COLUMNS", "200")
    done = kerneljudge(monkeypatch, ada.token, "standings", name)
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert "A test sprint" in lines[0] and "rank_points on cpu, live" in lines[0]
    header = next(line for line in lines if "rank" in line and "team" in line)
    assert all(problem in header for problem in names)
    team = next(line for line in lines if "Bold" in line)
    # Shown as the team wrote it, not read as markup; the caller's row marked.
    assert "<i>Bold & Co (you)" in team and "200" in team
    assert "#1 1 ms" in team and "#1 20 µs" in team  # as the result pages write times


def test_the_csv_has_a_row_a_team(race: tuple[str, list[str], Account]) -> None:
    name, names, _ = race
    response = rest(f"/api/v1/competitions/{name}/standings.csv")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert f'filename="{name}_standings.csv"' in response.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(response.text)))
    body = rest(f"/api/v1/competitions/{name}/standings").json()
    assert [row["team"] for row in rows] == [row["team"] for row in body["rows"]]
    first, second = rows
    assert (first["rank"], first["total"]) == ("1", "200.0")
    assert first["members"] == " ".join(body["rows"][0]["members"])
    assert (first[f"{names[0]}_rank"], first[f"{names[0]}_score"]) == ("1", "0.001")
    assert first[f"{names[1]}_submission_id"] == str(
        body["rows"][0]["problems"][names[1]]["submission_id"]
    )
    assert (second["rank"], second[f"{names[1]}_rank"], second["disqualified"]) == ("2", "", "")
    assert rest("/api/v1/competitions/no-such-sprint/standings.csv").status_code == 404


HTML = {"Accept": "text/html"}


def test_the_pages_list_competitions_and_show_the_standings(
    race: tuple[str, list[str], Account], admin: Account
) -> None:
    name, names, _ = race
    listed = rest("/competitions")
    assert listed.status_code == 200
    assert f'href="/competitions/{name}"' in listed.text and "A test sprint" in listed.text
    page = rest(f"/competitions/{name}")
    assert page.status_code == 200
    assert "&lt;i&gt;Bold &amp; Co" in page.text and "<i>Bold" not in page.text
    assert "<strong>ten days</strong>" in page.text  # the description, as Markdown
    assert all(f'href="/problems/{problem}"' in page.text for problem in names)
    assert f"/api/v1/competitions/{name}/standings.csv" in page.text
    with httpx.Client(transport=InProcess(), base_url="http://test") as http:
        missing = http.get("/competitions/no-such-sprint", headers=HTML)
    assert missing.status_code == 404


def test_the_page_shows_a_disqualification_and_the_freeze(
    race: tuple[str, list[str], Account], admin: Account
) -> None:
    name, _, _ = race
    with httpx.Client(transport=InProcess(), base_url="http://test") as http:
        teams = http.get(f"/api/v1/competitions/{name}/standings").json()["rows"]
        solo = teams[1]["team"]
        http.post(
            f"/api/v1/competitions/{name}/teams/{solo}/disqualify",
            json={"reason": "two accounts, one person"},
            headers=admin.headers,
        )
    page = rest(f"/competitions/{name}").text
    assert "disqualified: two accounts, one person" in page
    assert 'id="frozen"' not in page
