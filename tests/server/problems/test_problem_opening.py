"""A problem uploaded hidden or with a start time: competitors cannot list, read, rank on or
submit to it (a scheduled one says when it opens) until its start time or its
competition's opening; admins see it, and its admin row says which it is."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import typer
from typer.testing import CliRunner

from grader.problem import BUILTIN_DIR
from server.app import create_app
from server.cli import app as cli
from server.client import commands
from server.client.api import Api
from server.db import session_scope
from server.problems import repository
from tests.server.competitions.rig import add_competition
from tests.server.conftest import Account
from tests.server.problems.test_problem_lifecycle import record_round, submit
from tests.server.problems.test_problems_api import problem_zip, upload
from tests.server.users.test_audit_log import audit_entries
from tests.server.web.test_web_and_cli_agree import AppTransport
from tests.server.web.test_web_pages import new_problem
from tests.server.web_client import HTML, csrf_from, log_in, make_user

pytestmark = pytest.mark.anyio


async def listed(client: httpx.AsyncClient, account: Account | None = None) -> set[str]:
    headers = account.headers if account else {}
    return {p["name"] for p in (await client.get("/api/v1/problems", headers=headers)).json()}


def admin_row(page: str, name: str) -> str:
    start = page.index(f'<tr id="p-{name}">')
    return page[start : page.index("</tr>", start)]


async def test_a_hidden_upload_stays_unlisted_until_its_competition_opens(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, admin: Account, alice: Account
) -> None:
    made = await upload(client, admin, problem_zip("secret"), "p.zip", hidden="true")
    assert made.status_code == 201, made.text
    assert made.json()["hidden"] is True
    record_round("secret")

    assert "secret" not in await listed(client, alice)
    read = await client.get("/api/v1/problems/secret", headers=alice.headers)
    assert read.status_code == 404 and read.json()["detail"] == "no problem named 'secret'"
    assert (await client.get("/api/v1/leaderboards/secret")).status_code == 404
    assert (await submit(client, alice, "secret")).status_code == 404
    assert "secret" in await listed(client, admin)
    entry = (await audit_entries(client, admin, action="problem.add", target="secret"))[0]
    assert entry["details"]["is_public"] is False

    organizer = make_user("hider", admin=True)[0]
    await log_in(browser, organizer)
    row = admin_row((await browser.get("/admin/problems", headers=HTML)).text, "secret")
    assert 'data-status="hidden">hidden</span>' in row and ">live<" not in row

    # Its competition opened five days ago: from now on everyone sees it.
    await add_competition(client, admin, ["secret"])
    assert "secret" in await listed(client, alice)
    assert (await client.get("/api/v1/leaderboards/secret")).status_code == 200
    assert (await submit(client, alice, "secret", "leaderboard")).status_code == 202
    row = admin_row((await browser.get("/admin/problems", headers=HTML)).text, "secret")
    assert 'data-status="live">live</span>' in row


async def test_a_scheduled_upload_says_when_it_opens(
    client: httpx.AsyncClient,
    browser: httpx.AsyncClient,
    admin: Account,
    alice: Account,
) -> None:
    made = await upload(
        client, admin, problem_zip("soon"), "p.zip", starts_at="2099-01-02T03:04:00Z"
    )
    assert made.status_code == 201, made.text
    assert made.json()["starts_at"].startswith("2099-01-02T03:04")
    record_round("soon")

    assert "soon" not in await listed(client)
    for path in ("/api/v1/problems/soon", "/api/v1/leaderboards/soon"):
        hidden = await client.get(path, headers=alice.headers)
        assert hidden.status_code == 404
        assert hidden.json()["detail"] == "problem 'soon' opens at 2099-01-02 03:04 UTC"
    refused = await submit(client, alice, "soon")
    assert refused.status_code == 404 and "opens at 2099-01-02 03:04 UTC" in refused.text

    organizer = make_user("scheduler", admin=True)[0]
    await log_in(browser, organizer)
    row = admin_row((await browser.get("/admin/problems", headers=HTML)).text, "soon")
    assert "opens 2099-01-02 03:04 UTC</span>" in row and ">live<" not in row


def test_the_command_line_says_when_a_problem_opens(
    alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kerneljudge leaderboard` and `submit` name the opening, not "no problem named"."""
    new_problem("clisoon", starts_at=datetime(2099, 1, 2, 3, 4, tzinfo=UTC))
    app = create_app()
    monkeypatch.setattr(commands, "api", lambda login: Api(login, transport=AppTransport(app)))
    monkeypatch.setenv("KJ_URL", "http://testserver")
    monkeypatch.setenv("KJ_TOKEN", alice.token)
    tool = typer.Typer()
    commands.register(tool)
    done = CliRunner().invoke(tool, ["leaderboard", "clisoon"])
    assert done.exit_code != 0
    said = " ".join(done.output.split())
    assert "problem 'clisoon' opens at 2099-01-02 03:04 UTC" in said, said


async def test_an_upload_with_a_bad_start_time_is_refused(
    client: httpx.AsyncClient, admin: Account
) -> None:
    naive = await upload(client, admin, problem_zip("naive"), "p.zip", starts_at="2099-01-02T03:04")
    assert naive.status_code == 422 and "time zone" in naive.json()["detail"]
    garbled = await upload(client, admin, problem_zip("naive"), "p.zip", starts_at="tomorrow")
    assert garbled.status_code == 422
    with session_scope() as session:
        assert repository.get_problem(session, "naive") is None


async def test_the_upload_form_hides_and_schedules(
    browser: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    await log_in(browser, make_user("uploader", admin=True)[0])
    page = await browser.get("/admin/problems", headers=HTML)
    assert 'name="visibility" value="hidden"' in page.text and 'name="starts_at"' in page.text
    sent = await browser.post(
        "/admin/problems",
        data={
            "csrf_token": csrf_from(page),
            "visibility": "hidden",
            "starts_at": "2099-05-06T07:08",
        },
        files={"archive": ("p.zip", problem_zip("formed"))},
        headers=HTML,
    )
    assert sent.status_code == 303, sent.text
    with session_scope() as session:
        problem = repository.get_problem(session, "formed")
        assert problem is not None and not problem.is_public
        assert problem.starts_at is not None and problem.starts_at.year == 2099


def test_the_command_line_adds_a_problem_hidden_and_scheduled(
    database: None, tmp_path: Path
) -> None:
    shutil.copytree(BUILTIN_DIR / "vectoradd", tmp_path / "clihidden")
    shutil.copy(BUILTIN_DIR / "utils.py", tmp_path / "utils.py")
    done = CliRunner().invoke(
        cli,
        ["problem", "add", str(tmp_path / "clihidden"), "--hidden"],
    )
    assert done.exit_code == 0, done.output
    assert "hidden: only admins see it until a competition of its opens" in done.stdout
    done = CliRunner().invoke(
        cli,
        ["problem", "add", str(tmp_path / "clihidden"), "--visible",
         "--starts-at", "2099-01-01T00:00Z"],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "opens at 2099-01-01 00:00 UTC" in done.stdout
    with session_scope() as session:
        problem = repository.get_problem(session, "clihidden")
        assert problem is not None and problem.is_public
    refused = CliRunner().invoke(
        cli, ["problem", "add", str(tmp_path / "clihidden"), "--starts-at", "2099-01-01"]
    )
    assert refused.exit_code == 1 and "with its time zone" in refused.output
