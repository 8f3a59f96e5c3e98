"""Organizers narrow everyone's submissions by problem, user, status and mode, on the admin
page and through the API; a filter naming nothing there is, is refused with what there is."""

from __future__ import annotations

import httpx
import pytest

from tests.server.conftest import Account
from tests.server.web.test_web_pages import graded, new_problem
from tests.server.web_client import HTML, log_in, make_user

pytestmark = pytest.mark.anyio


def rows(page: str) -> set[int]:
    """The submission ids the admin list shows."""
    found = set()
    for part in page.split('<tr id="s')[1:]:
        found.add(int(part.split('"', 1)[0]))
    return found


async def test_the_admin_list_filters_by_problem_user_status_and_mode(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, admin: Account, alice: Account
) -> None:
    new_problem("filtera")
    new_problem("filterb")
    ann, ann_token = make_user("fann")
    ben, ben_token = make_user("fben")
    a_ranked = graded(ann_token, "filtera", "1")
    a_test = graded(ann_token, "filtera", "2", mode="test")
    b_ranked = graded(ben_token, "filtera", "3")
    b_other = graded(ben_token, "filterb", "4", mode="benchmark")

    async def listed(**params: str) -> httpx.Response:
        return await client.get("/api/v1/admin/submissions", params=params, headers=admin.headers)

    async def ids(**params: str) -> set[int]:
        response = await listed(**params)
        assert response.status_code == 200, response.text
        return {s["id"] for s in response.json()["submissions"]}

    ours = {a_ranked, a_test, b_ranked, b_other}
    assert await ids(problem="filtera") & ours == {a_ranked, a_test, b_ranked}
    assert await ids(user=ann) == {a_ranked, a_test}
    assert await ids(user=ben, mode="leaderboard") == {b_ranked}
    assert await ids(problem="filterb", status="passed") == {b_other}
    assert await ids(problem="filtera", status="failed") == set()
    body = (await listed(user=ann, limit="1")).json()
    assert [s["id"] for s in body["submissions"]] == [a_test]
    assert body["submissions"][0]["user"] == ann and body["next_before"] == a_test
    assert await ids(user=ann, before=str(a_test)) == {a_ranked}

    unknown = await listed(problem="nope")
    assert unknown.status_code == 404 and unknown.json()["detail"] == "no problem named 'nope'"
    assert (await listed(user="nobody-at-all")).status_code == 404
    bad = await listed(status="won")
    assert bad.status_code == 422 and "choose one of queued, running, passed" in bad.text
    assert (await listed(mode="ranked")).status_code == 422
    assert (await client.get("/api/v1/admin/submissions", headers=alice.headers)).status_code == 403

    organizer, _ = make_user("filterer", admin=True)
    await log_in(browser, organizer)
    page = await browser.get(
        "/admin/submissions", params={"problem": "filtera", "user": ben}, headers=HTML
    )
    assert page.status_code == 200 and rows(page.text) == {b_ranked}
    assert '<option value="filtera" selected>' in page.text
    page = await browser.get(
        "/admin/submissions", params={"mode": "test", "user": ann, "status": ""}, headers=HTML
    )
    assert rows(page.text) == {a_test}
    refused = await browser.get("/admin/submissions", params={"user": "ghost"}, headers=HTML)
    assert refused.status_code == 404 and "no user named &#39;ghost&#39;" in refused.text
    assert rows(refused.text) == set()
