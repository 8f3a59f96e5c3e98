"""The organizers' review page of a competition: the final judging started after the close
with K runs, its progress and preview, published or discarded; a team disqualified with a
reason; a rejudge of one of its problems started, followed and decided. Each form calls the
API's service (audited alike), says a refusal next to it, needs its CSRF token, and refuses
non-admins."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from itertools import count

import httpx
import pytest

from tests.server.competitions.rig import add_competition, problems
from tests.server.competitions.test_judging import closed_race, grade, passed
from tests.server.conftest import Account
from tests.server.submissions.test_results import record
from tests.server.users.test_audit_log import audit_entries
from tests.server.web.test_competition_forms import field_error
from tests.server.web_client import HTML, client_at, log_in, make_user, post_form

pytestmark = pytest.mark.anyio

_addresses = count(1)


@asynccontextmanager
async def organizer() -> AsyncIterator[tuple[httpx.AsyncClient, Account]]:
    """A new admin signed in on a browser of its own, with an API token too."""
    name, token = make_user("organizer", admin=True)
    async with client_at(f"10.35.0.{next(_addresses)}") as browser:
        assert (await log_in(browser, name)).status_code == 303
        yield browser, Account(name, token)


async def act(
    browser: httpx.AsyncClient, competition: str, action: str, fields: dict[str, str] | None = None
) -> httpx.Response:
    return await post_form(
        browser,
        f"/competitions/{competition}/review/{action}",
        fields or {},
        from_page=f"/competitions/{competition}/review",
    )


async def followed(browser: httpx.AsyncClient, response: httpx.Response) -> str:
    assert response.status_code == 303, response.text[-2000:]
    return (await browser.get(response.headers["location"], headers=HTML)).text


async def test_the_final_judging_is_started_followed_and_published(
    client: httpx.AsyncClient,
) -> None:
    async with organizer() as (browser, admin):
        name, names, _, _ = await closed_race(client, admin, how_many=1)
        standings_page = await browser.get(f"/competitions/{name}", headers=HTML)
        assert f'href="/competitions/{name}/review"' in standings_page.text

        bad = await act(browser, name, "judgings", {"runs": "99"})
        assert bad.status_code == 422 and "from 1 to 20" in field_error(bad, "runs")
        page = await followed(browser, await act(browser, name, "judgings", {"runs": "2"}))
        assert "2 runs of each entry queued" in page
        assert "0 of 4 runs graded, 4 queued or running" in page
        # Not ready: publishing waits, and says why.
        early = await act(browser, name, "judging/publish")
        assert early.status_code == 409
        assert "only a ready one" in field_error(early, "judging")

        body = (
            await client.get(f"/api/v1/competitions/{name}/judging", headers=admin.headers)
        ).json()
        grade(body, "Red", names[0], [passed(3e-3), passed(3.2e-3)])
        grade(body, "Blue", names[0], [passed(1e-3), passed(1.2e-3)])
        page = (await browser.get(f"/competitions/{name}/review", headers=HTML)).text
        assert "4 of 4 runs graded" in page and "status-ready" in page
        preview = page.split('class="table judging-preview"', 1)[1].split("</table>", 1)[0]
        rows = re.findall(r"<tr>\s*<td>(\w+)", preview)
        assert rows == ["Blue", "Red"]  # judged order: Blue's median is faster now
        assert "1.1 ms" in preview and "3.1 ms" in preview  # the medians

        page = await followed(browser, await act(browser, name, "judging/publish"))
        assert f"Final judging {body['id']} published." in page
        assert 'action="/competitions/' + name + '/review/judging/publish"' not in page
    assert await audit_entries(client, admin, action="judging.start", target=name)
    assert await audit_entries(client, admin, action="judging.publish", target=name)
    final = (await client.get(f"/api/v1/competitions/{name}/standings")).json()
    assert final["final"] and [row["team"] for row in final["rows"]] == ["Blue", "Red"]


async def test_a_judging_waits_for_the_close_and_can_be_discarded(
    client: httpx.AsyncClient,
) -> None:
    async with organizer() as (browser, admin):
        open_one = await add_competition(client, admin, problems(1))
        page = (await browser.get(f"/competitions/{open_one}/review", headers=HTML)).text
        assert "It starts after the close" in page and "Start the final judging" not in page
        early = await act(browser, open_one, "judgings", {"runs": ""})
        assert early.status_code == 409 and "closes at" in field_error(early, "runs")

        name, _, _, _ = await closed_race(client, admin, how_many=1)
        await followed(browser, await act(browser, name, "judgings", {"runs": ""}))
        page = await followed(browser, await act(browser, name, "judging/discard"))
        assert "discarded" in page and "Start the final judging" in page  # again, if wanted
    assert await audit_entries(client, admin, action="judging.discard", target=name)


async def test_a_team_is_disqualified_with_a_reason(client: httpx.AsyncClient) -> None:
    async with organizer() as (browser, admin):
        name, _, _, _ = await closed_race(client, admin, how_many=1)
        blank = await act(browser, name, "disqualify", {"team": "Red", "reason": "  "})
        assert blank.status_code == 422
        assert "say why" in field_error(blank, "disqualify")
        unknown = await act(browser, name, "disqualify", {"team": "Nobody", "reason": "x"})
        assert unknown.status_code == 404

        done = await act(browser, name, "disqualify", {"team": "Red", "reason": "shared code"})
        page = await followed(browser, done)
        assert "Team Red disqualified: shared code" in page
        again = await act(browser, name, "disqualify", {"team": "Red", "reason": "twice"})
        assert again.status_code == 409
        assert "was disqualified at" in field_error(again, "disqualify")
    [entry] = await audit_entries(client, admin, action="team.disqualify", target=f"{name}/Red")
    assert entry["details"]["reason"] == "shared code"
    rows = (await client.get(f"/api/v1/competitions/{name}/standings")).json()["rows"]
    assert rows[-1]["team"] == "Red" and rows[-1]["disqualified"]["reason"] == "shared code"


async def test_a_rejudge_of_a_problem_is_started_followed_and_decided(
    client: httpx.AsyncClient,
) -> None:
    async with organizer() as (browser, admin):
        name, names, _, _ = await closed_race(client, admin, how_many=1)
        page = await followed(
            browser,
            await act(browser, name, "rejudges", {"problem": names[0], "while_open": "on"}),
        )
        [rejudge_id] = re.findall(r"Rejudge (\d+) started: 2 submissions", page)
        assert "0 of 2 graded" in page
        early = await act(browser, name, f"rejudges/{rejudge_id}/apply")
        assert early.status_code == 409
        assert "only a ready one" in field_error(early, f"rejudge-{rejudge_id}")

        body = (
            await client.get(f"/api/v1/admin/rejudges/{rejudge_id}", headers=admin.headers)
        ).json()
        for change in body["changes"]:
            record(change["run_id"], passed(5e-3))
        page = (await browser.get(f"/competitions/{name}/review", headers=HTML)).text
        assert "2 of 2 graded" in page and "2 would change" in page

        page = await followed(browser, await act(browser, name, f"rejudges/{rejudge_id}/apply"))
        assert f"Rejudge {rejudge_id} applied." in page

        nothing = await act(browser, name, "rejudges", {"problem": names[0], "status": "timeout"})
        assert nothing.status_code == 422
        assert "nothing to rejudge" in field_error(nothing, "rejudge")
    assert await audit_entries(client, admin, action="rejudge.start", target=rejudge_id)
    assert await audit_entries(client, admin, action="rejudge.apply", target=rejudge_id)


async def test_organizer_forms_refuse_non_admins_and_need_the_csrf_token(
    client: httpx.AsyncClient,
) -> None:
    async with organizer() as (browser, admin):
        name, _, _, _ = await closed_race(client, admin, how_many=1)
        await browser.get(f"/competitions/{name}/review", headers=HTML)
        forged = await browser.post(
            f"/competitions/{name}/review/disqualify",
            data={"team": "Red", "reason": "forged"},
            headers=HTML,
        )
        assert forged.status_code == 403
    competitor, _ = make_user("competitor")
    async with client_at("10.35.1.1") as plain:
        assert (await log_in(plain, competitor)).status_code == 303
        assert (await plain.get(f"/competitions/{name}/review", headers=HTML)).status_code == 403
        shown = await plain.get(f"/competitions/{name}", headers=HTML)
        assert "/review" not in shown.text
        for action, fields in (
            ("disqualify", {"team": "Red", "reason": "not mine to say"}),
            ("judgings", {"runs": "1"}),
            ("rejudges", {"problem": "vectoradd"}),
            ("judging/publish", {}),
            ("judging/discard", {}),
            ("rejudges/1/apply", {}),
        ):
            refused = await post_form(
                plain,
                f"/competitions/{name}/review/{action}",
                fields,
                from_page=f"/competitions/{name}",
            )
            assert refused.status_code == 403, action
    async with client_at("10.35.1.2") as stranger:
        away = await stranger.get(f"/competitions/{name}/review", headers=HTML)
        assert away.status_code == 303 and away.headers["location"].startswith("/login")
    rows = (await client.get(f"/api/v1/competitions/{name}/standings")).json()["rows"]
    assert all(row["disqualified"] is None for row in rows)
    assert not await audit_entries(client, admin, action="judging.start", target=name)
