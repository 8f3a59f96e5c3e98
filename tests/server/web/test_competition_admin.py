"""Organizers add a competition on the admin pages by pasting its YAML file, and change it by
editing that file until it opens: each mistake said at the file with what was typed kept and
nothing made, each change audited, an opened competition's file shown but not editable, and
the pages closed to competitors."""

from __future__ import annotations

import html
from datetime import timedelta

import httpx
import pytest
import yaml

from server.models import utcnow
from tests.server.competitions.rig import OPENED, competition_file, problems, unique
from tests.server.conftest import Account
from tests.server.users.test_audit_log import audit_entries
from tests.server.web_client import HTML, post_form, sign_in

pytestmark = pytest.mark.anyio


async def paste(browser: httpx.AsyncClient, path: str, file: object) -> httpx.Response:
    text = file if isinstance(file, str) else yaml.safe_dump(file, sort_keys=False)
    return await post_form(browser, path, {"file": text}, from_page=path)


async def test_an_organizer_adds_a_competition_from_its_file_and_edits_it_until_it_opens(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, admin: Account
) -> None:
    await sign_in(browser, "organizer", admin=True)
    page = await browser.get("/admin/competitions", headers=HTML)
    assert page.status_code == 200 and "name: spring-sprint" in html.unescape(page.text)
    opens = utcnow().replace(microsecond=0) + timedelta(days=2)
    file = competition_file(
        problems(2),
        opens_at=opens.isoformat(),
        closes_at=(opens + timedelta(days=7)).isoformat(),
    )
    added = await paste(browser, "/admin/competitions", file)
    assert added.status_code == 303, added.text
    assert added.headers["location"] == f"/admin/competitions#c-{file['name']}"
    listed = await browser.get("/admin/competitions", headers=HTML)
    assert f'id="c-{file["name"]}"' in listed.text and "upcoming" in listed.text
    assert f"Competition {file['name']} added." in listed.text
    made = (await client.get(f"/api/v1/competitions/{file['name']}")).json()
    assert made["title"] == file["title"] and len(made["problems"]) == 2

    edit_path = f"/admin/competitions/{file['name']}"
    shown = await browser.get(edit_path, headers=HTML)
    assert f"title: {file['title']}" in html.unescape(shown.text)
    edited = await paste(browser, edit_path, {**file, "title": "A sprint renamed"})
    assert edited.status_code == 303
    after = await browser.get(edited.headers["location"], headers=HTML)
    assert "Changed: title." in after.text
    assert (await client.get(f"/api/v1/competitions/{file['name']}")).json()["title"] == (
        "A sprint renamed"
    )
    [entry] = await audit_entries(client, admin, action="competition.edit", target=file["name"])
    assert entry["details"]["changes"]["title"] == [file["title"], "A sprint renamed"]
    assert await audit_entries(client, admin, action="competition.create", target=file["name"])


async def test_a_broken_file_is_said_at_the_file_and_nothing_is_made(
    client: httpx.AsyncClient, browser: httpx.AsyncClient
) -> None:
    await sign_in(browser, "organizer", admin=True)
    file = competition_file(problems(1), name="Not A URL")
    del file["title"]
    refused = await paste(browser, "/admin/competitions", file)
    assert refused.status_code == 422
    said = html.unescape(refused.text)
    assert "title: Field required" in said
    assert "name: 'Not A URL' cannot be a competition's name" in said
    assert "name: Not A URL" in said, "what was typed is kept"
    assert (await client.get("/api/v1/competitions/not-a-url")).status_code == 404

    not_yaml = await paste(browser, "/admin/competitions", "name: [unclosed")
    assert not_yaml.status_code == 422 and "this is not YAML" in not_yaml.text
    a_list = await paste(browser, "/admin/competitions", "- one\n- two\n")
    assert a_list.status_code == 422 and "a mapping of its fields" in a_list.text
    unknown = await paste(browser, "/admin/competitions", competition_file(["no-such-problem"]))
    assert unknown.status_code == 422 and "no-such-problem" in unknown.text


async def test_an_opened_competitions_file_is_shown_and_cannot_be_changed(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, admin: Account
) -> None:
    await sign_in(browser, "organizer", admin=True)
    file = competition_file(problems(1))
    assert utcnow() > OPENED
    made = await client.post("/api/v1/competitions", json=file, headers=admin.headers)
    assert made.status_code == 201, made.text
    path = f"/admin/competitions/{file['name']}"
    shown = await browser.get(path, headers=HTML)
    assert "can no longer be changed" in shown.text and "<textarea" not in shown.text
    token_page = await browser.get("/admin/competitions", headers=HTML)
    token = token_page.text.split('name="csrf_token" value="')[1].split('"')[0]
    refused = await browser.post(
        path,
        data={"file": yaml.safe_dump({**file, "title": "Too late"}), "csrf_token": token},
        headers=HTML,
    )
    assert refused.status_code == 422 and "can no longer be changed" in refused.text
    assert (await client.get(f"/api/v1/competitions/{file['name']}")).json()["title"] == (
        file["title"]
    )


async def test_the_pages_are_for_organizers_only(browser: httpx.AsyncClient) -> None:
    await sign_in(browser, "competitor")
    for path in ("/admin/competitions", f"/admin/competitions/{unique('comp')}"):
        response = await browser.get(path, headers=HTML)
        assert response.status_code == 403, path
