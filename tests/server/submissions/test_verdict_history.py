"""A re-run keeps the verdict it replaces: the submission's API body and page list its
earlier verdicts with their times, each message shown as the current one would be."""

from __future__ import annotations

import httpx
import pytest

from server.db import session_scope
from server.submissions import service
from tests.server.conftest import Account, worker_report
from tests.server.web.test_web_pages import graded, new_problem
from tests.server.web_client import HTML, log_in, make_user

pytestmark = pytest.mark.anyio


async def rerun(client: httpx.AsyncClient, admin: Account, sid: int) -> httpx.Response:
    return await client.post(
        f"/api/v1/admin/submissions/{sid}/moderation",
        json={"action": "rerun"},
        headers=admin.headers,
    )


def record(sid: int, status: str, message: str, mode: str = "test") -> None:
    report = worker_report(status, mode=mode, message=message)
    with session_scope() as session:
        assert service.record_report(session, sid, report, "test-worker")


async def test_a_rerun_keeps_the_earlier_verdicts(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, admin: Account
) -> None:
    new_problem("history")
    author, token = make_user("rerunner")
    mine = Account(author, token)
    sid = graded(token, "history", "first", score=2.5e-5, mode="test")
    before = (await client.get(f"/api/v1/submissions/{sid}", headers=mine.headers)).json()
    assert before["history"] == []

    queued = await rerun(client, admin, sid)
    assert queued.status_code == 200 and queued.json()["status"] == "queued"
    assert (await rerun(client, admin, sid)).status_code == 409  # still queued
    record(sid, "failed", "case 3 differs")
    assert (await rerun(client, admin, sid)).status_code == 200
    record(sid, "passed", "all cases passed again")

    body = (await client.get(f"/api/v1/submissions/{sid}", headers=mine.headers)).json()
    assert body["status"] == "passed"
    history = body["history"]
    assert [(h["status"], h["score"]) for h in history] == [("passed", 2.5e-5), ("failed", None)]
    assert history[1]["message"] == "case 3 differs"
    assert history[0]["replaced_at"] <= history[1]["finished_at"] <= history[1]["replaced_at"]

    await log_in(browser, author)
    page = (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    section = page[page.index('id="history"') :]
    assert "Earlier verdicts" in page
    assert section.index('data-status="passed"') < section.index('data-status="failed"')
    assert "case 3 differs" in section


async def test_a_ranked_runs_earlier_details_stay_withheld(
    client: httpx.AsyncClient, admin: Account
) -> None:
    """The author reads an earlier ranked verdict as they read the current one: no error
    text."""
    new_problem("rankhistory")
    author, token = make_user("rankrerun")
    sid = graded(token, "rankhistory", "x", mode="leaderboard")
    assert (await rerun(client, admin, sid)).status_code == 200
    record(sid, "error", "Traceback: secret expected output 42", mode="leaderboard")
    assert (await rerun(client, admin, sid)).status_code == 200

    mine = (
        await client.get(f"/api/v1/submissions/{sid}", headers=Account(author, token).headers)
    ).json()
    assert "secret expected output" not in mine["history"][1]["message"]
    assert "withheld" in mine["history"][1]["message"]
    theirs = (await client.get(f"/api/v1/submissions/{sid}", headers=admin.headers)).json()
    assert "secret expected output" in theirs["history"][1]["message"]
