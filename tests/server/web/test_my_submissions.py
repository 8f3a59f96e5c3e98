"""My submissions: a signed-in user's own submissions, newest first, narrowed by problem,
mode and status, a page at a time, each linking to its result; signed-out visitors are sent
to log in. A user's public page lists no run on a problem its reader may not see."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import httpx
import pytest
import typer
from sqlalchemy import select
from typer.testing import CliRunner

from server.app import create_app
from server.client import commands
from server.client.api import Api
from server.db import session_scope
from server.models import Problem, User, utcnow
from server.web.pages import MY_SUBMISSIONS_PAGE
from tests.server.rows import submission_row
from tests.server.web.test_web_and_cli_agree import AppTransport
from tests.server.web.test_web_pages import new_problem
from tests.server.web_client import HTML, log_in, make_user, sign_in

pytestmark = pytest.mark.anyio

LISTED = re.compile(r'<td class="num"><a href="/submissions/(\d+)"')


def add_runs(user_name: str, problem: str, *runs: tuple[str, str]) -> list[int]:
    """A finished submission of the user's on the problem for each (mode, status), in this
    order; their ids."""
    with session_scope() as db:
        user = db.scalar(select(User).where(User.name == user_name))
        found = db.scalar(select(Problem).where(Problem.name == problem))
        assert user is not None and found is not None
        made = [
            submission_row(
                user.id,
                found.id,
                problem_version=found.version,
                mode=mode,
                status=status,
                score=1e-3 if status == "passed" and mode == "leaderboard" else None,
                started_at=utcnow(),
                finished_at=utcnow(),
            )
            for mode, status in runs
        ]
        db.add_all(made)
        db.flush()
        return [submission.id for submission in made]


def listed(page: httpx.Response) -> list[int]:
    return [int(found) for found in LISTED.findall(page.text)]


async def test_signed_out_visitors_are_sent_to_log_in(browser: httpx.AsyncClient) -> None:
    response = await browser.get("/submissions/mine?mode=test", headers=HTML)
    assert response.status_code == 303
    assert response.headers["location"] == "/login?next=/submissions/mine%3Fmode%3Dtest"


async def test_a_newcomer_is_told_what_to_do_first(browser: httpx.AsyncClient) -> None:
    await sign_in(browser)
    page = await browser.get("/submissions/mine", headers=HTML)
    assert page.status_code == 200
    assert 'id="no-submissions"' in page.text and "No submissions yet" in page.text
    assert 'href="/submit"' in page.text
    # The header leads here, marked as the page shown.
    assert '<a href="/submissions/mine" aria-current="page">My submissions</a>' in page.text


async def test_own_submissions_newest_first_narrowed_by_problem_mode_and_status(
    browser: httpx.AsyncClient,
) -> None:
    new_problem("mine-a")
    new_problem("mine-b")
    name = await sign_in(browser)
    other, _ = make_user()
    test_passed, test_failed, ranked = add_runs(
        name, "mine-a", ("test", "passed"), ("test", "failed"), ("leaderboard", "passed")
    )
    (on_b,) = add_runs(name, "mine-b", ("benchmark", "error"))
    add_runs(other, "mine-a", ("test", "passed"))

    page = await browser.get("/submissions/mine", headers=HTML)
    assert listed(page) == [on_b, ranked, test_failed, test_passed]
    assert f'href="/submissions/{ranked}"' in page.text and "No submissions yet" not in page.text

    async def narrowed(query: str) -> list[int]:
        response = await browser.get(f"/submissions/mine?{query}", headers=HTML)
        assert response.status_code == 200, response.text
        return listed(response)

    assert await narrowed("problem=mine-a") == [ranked, test_failed, test_passed]
    assert await narrowed("mode=test") == [test_failed, test_passed]
    assert await narrowed("status=passed") == [ranked, test_passed]
    assert await narrowed("problem=mine-a&mode=test&status=failed") == [test_failed]
    assert await narrowed("problem=&mode=&status=") == [on_b, ranked, test_failed, test_passed]
    none = await browser.get("/submissions/mine?problem=mine-b&mode=test", headers=HTML)
    assert listed(none) == [] and "No submissions match these filters." in none.text
    # The form shows the filters as chosen.
    assert '<option value="mine-b" selected>' in none.text
    assert '<option value="test" selected>' in none.text

    # The same filters in the API, for the command line.
    api = await browser.get("/api/v1/submissions?problem=mine-a&mode=test&status=failed")
    assert api.status_code == 401  # the API reads tokens, not the cookie


async def test_a_filter_naming_nothing_there_is_says_so(browser: httpx.AsyncClient) -> None:
    await sign_in(browser)
    status = await browser.get("/submissions/mine?status=won", headers=HTML)
    assert status.status_code == 422
    assert 'id="filter-error"' in status.text and "unknown status &#39;won&#39;" in status.text
    problem = await browser.get("/submissions/mine?problem=nosuch", headers=HTML)
    assert problem.status_code == 404 and "no problem named &#39;nosuch&#39;" in problem.text


async def test_pages_of_fifty_follow_each_other_with_the_filters(
    browser: httpx.AsyncClient,
) -> None:
    new_problem("mine-paged")
    name = await sign_in(browser)
    ids = add_runs(name, "mine-paged", *[("test", "passed")] * (MY_SUBMISSIONS_PAGE + 3))
    add_runs(name, "mine-paged", ("benchmark", "passed"))
    newest_first = ids[::-1]

    first = await browser.get("/submissions/mine?mode=test", headers=HTML)
    assert listed(first) == newest_first[:MY_SUBMISSIONS_PAGE]
    older = re.search(r'href="([^"]+)" rel="next"', first.text)
    assert older is not None and 'rel="first"' not in first.text
    assert older.group(1) == f"/submissions/mine?mode=test&amp;before={newest_first[49]}"

    second = await browser.get(older.group(1).replace("&amp;", "&"), headers=HTML)
    assert listed(second) == newest_first[MY_SUBMISSIONS_PAGE:]
    assert 'rel="next"' not in second.text
    assert 'href="/submissions/mine?mode=test" rel="first"' in second.text


async def test_the_api_narrows_own_submissions_by_status_and_mode(
    client: httpx.AsyncClient,
) -> None:
    new_problem("mine-api")
    name, token = make_user()
    headers = {"Authorization": f"Bearer {token}"}
    passed, failed = add_runs(name, "mine-api", ("test", "passed"), ("test", "failed"))
    add_runs(name, "mine-api", ("benchmark", "failed"))

    def ids(response: httpx.Response) -> list[int]:
        assert response.status_code == 200, response.text
        return [row["id"] for row in response.json()["submissions"]]

    query = "/api/v1/submissions?problem=mine-api&mode=test"
    assert ids(await client.get(query, headers=headers)) == [failed, passed]
    assert ids(await client.get(f"{query}&status=passed", headers=headers)) == [passed]
    wrong = await client.get("/api/v1/submissions?mode=fast", headers=headers)
    assert wrong.status_code == 422 and "unknown mode 'fast'" in wrong.json()["detail"]


def test_the_command_line_narrows_them_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    new_problem("mine-cli")
    name, token = make_user()
    passed, _ = add_runs(name, "mine-cli", ("test", "passed"), ("test", "failed"))
    add_runs(name, "mine-cli", ("benchmark", "passed"))
    transport = AppTransport(create_app())
    monkeypatch.setattr(commands, "api", lambda login: Api(login, transport=transport))
    monkeypatch.setenv("KJ_URL", "http://testserver")
    monkeypatch.setenv("KJ_TOKEN", token)
    cli = typer.Typer()
    commands.register(cli)
    done = CliRunner().invoke(
        cli,
        ["submissions", "--problem", "mine-cli", "--mode", "test", "--status", "passed", "--json"],
    )
    assert done.exit_code == 0, done.output
    assert [row["id"] for row in json.loads(done.output)["submissions"]] == [passed]


async def test_a_users_page_lists_no_run_on_a_problem_its_reader_cannot_see(
    client: httpx.AsyncClient, browser: httpx.AsyncClient
) -> None:
    new_problem("leak-open")
    new_problem("leak-hidden", is_public=False)
    new_problem("leak-later", starts_at=utcnow() + timedelta(days=1))
    new_problem("leak-invalid", status="invalid")
    author, _ = make_user()
    (shown,) = add_runs(author, "leak-open", ("leaderboard", "passed"))
    secret = [
        *add_runs(author, "leak-hidden", ("leaderboard", "passed")),
        *add_runs(author, "leak-later", ("leaderboard", "passed")),
        *add_runs(author, "leak-invalid", ("leaderboard", "passed")),
    ]

    anonymous = await client.get(f"/users/{author}", headers=HTML)
    assert listed(anonymous) == [shown]
    assert "leak-hidden" not in anonymous.text and "leak-later" not in anonymous.text
    await sign_in(browser)
    assert listed(await browser.get(f"/users/{author}", headers=HTML)) == [shown]

    # Its author and the organizers still see every run.
    everything = [*secret[::-1], shown]
    assert (await log_in(client, author)).status_code == 303
    assert listed(await client.get(f"/users/{author}", headers=HTML)) == everything
    transport = httpx.ASGITransport(app=create_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as organizer:
        await sign_in(organizer, admin=True)
        assert listed(await organizer.get(f"/users/{author}", headers=HTML)) == everything


async def test_the_signed_in_name_is_a_link_to_ones_page(browser: httpx.AsyncClient) -> None:
    name = await sign_in(browser)
    home = await browser.get("/", headers=HTML)
    assert f'<a class="who" href="/users/{name}"' in home.text
    own = await browser.get(f"/users/{name}", headers=HTML)
    assert '<a href="/submissions/mine">My submissions</a> lists them all' in own.text
