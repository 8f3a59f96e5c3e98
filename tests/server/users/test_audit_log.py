"""The audit log: every admin action (problem uploads by API, page and command line, problem
settings, submission moderation and re-runs, user moderation) is recorded with its actor in
the action's own transaction, and admins read it newest first, a page at a time."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from grader.problem import BUILTIN_DIR
from server.cli import app as cli
from server.db import session_scope
from server.users.repository import get_user_by_name
from tests.server.conftest import Account
from tests.server.problems.test_problems_api import problem_zip, upload
from tests.server.web.test_web_pages import graded, new_problem
from tests.server.web_client import HTML, log_in, make_user, moderate, post_form, sign_in

pytestmark = pytest.mark.anyio


async def audit_entries(
    client: httpx.AsyncClient, admin: Account, **match: str
) -> list[dict[str, Any]]:
    """The newest entries (one page of 200) whose fields equal ``match``, newest first."""
    response = await client.get(
        "/api/v1/admin/audit", params={"per_page": 200}, headers=admin.headers
    )
    assert response.status_code == 200
    return [
        entry
        for entry in response.json()["entries"]
        if all(entry[key] == value for key, value in match.items())
    ]


async def test_problem_upload_by_api_is_recorded(client: httpx.AsyncClient, admin: Account) -> None:
    assert (await upload(client, admin, problem_zip("audited"), "p.zip")).status_code == 201
    changed = problem_zip("audited", description="now with more words")
    assert (await upload(client, admin, changed, "p2.zip")).status_code == 201
    assert (await upload(client, admin, changed, "p2.zip")).status_code == 201

    entries = await audit_entries(client, admin, actor=admin.name, target="audited")
    assert [entry["action"] for entry in entries] == [
        "problem.unchanged",
        "problem.update",
        "problem.add",
    ]
    update, add = entries[1], entries[2]
    assert update["target_type"] == "problem"
    assert update["details"]["version"] == 2 and update["details"]["previous_version"] == 1
    assert update["details"]["source"] == "archive p2.zip"
    assert add["details"]["previous_version"] is None
    assert add["created_at"] <= update["created_at"]
    assert add["actor_id"] is not None


async def test_a_refused_upload_leaves_no_entry(client: httpx.AsyncClient, admin: Account) -> None:
    broken = problem_zip("brokenaudit", extra={"pmpp/brokenaudit/task.yml": b": not yaml ["})
    assert (await upload(client, admin, broken, "b.zip")).status_code == 422
    assert await audit_entries(client, admin, actor=admin.name) == []


async def test_the_command_line_is_recorded_as_cli(
    client: httpx.AsyncClient, admin: Account
) -> None:
    result = CliRunner().invoke(
        cli, ["problem", "add", str(BUILTIN_DIR / "vectorsum"), "--name", "cli-audited"]
    )
    assert result.exit_code == 0, result.output
    entries = await audit_entries(client, admin, target="cli-audited")
    assert [(e["actor"], e["actor_id"], e["action"]) for e in entries] == [
        ("cli", None, "problem.add")
    ]


async def test_admin_pages_record_every_action(
    browser: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    new_problem("auditpage")
    competitor, token = make_user()
    submission_id = graded(token, "auditpage", "audited")
    admin_name, admin_token = make_user("boss", admin=True)
    admin = Account(admin_name, admin_token)
    await log_in(browser, admin_name)

    await post_form(
        browser,
        "/admin/problems/auditpage",
        {"is_public": "off", "deadline": "2030-01-02T03:04", "code_public_after_deadline": "on"},
        from_page="/admin/problems",
    )
    for action in ("hide", "hack", "rerun"):
        response = await moderate(
            browser, "submissions", submission_id, action, f"{action} for the audit"
        )
        assert response.status_code == 303
    with session_scope() as session:
        user = get_user_by_name(session, competitor)
        assert user is not None
        user_id = user.id
    for action in ("ban", "make_admin"):
        await moderate(browser, "users", user_id, action, "shared accounts")
    archive = problem_zip("pageaudit")
    token_page = await browser.get("/admin/problems", headers=HTML)
    csrf = token_page.text.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
    uploaded = await browser.post(
        "/admin/problems",
        data={"csrf_token": csrf},
        files={"archive": ("page.zip", archive)},
        headers=HTML,
    )
    assert uploaded.status_code == 303

    entries = await audit_entries(client, admin, actor=admin_name)
    assert [(e["action"], e["target_type"], e["target"]) for e in entries] == [
        ("problem.add", "problem", "pageaudit"),
        ("user.make_admin", "user", competitor),
        ("user.ban", "user", competitor),
        ("submission.rerun", "submission", str(submission_id)),
        ("submission.hack", "submission", str(submission_id)),
        ("submission.hide", "submission", str(submission_id)),
        ("problem.settings", "problem", "auditpage"),
    ]
    settings = entries[-1]["details"]["changes"]
    assert settings == {
        "is_public": [True, False],
        "deadline": [None, "2030-01-02T03:04:00+00:00"],
        "code_public_after_deadline": [False, True],
    }
    assert entries[3]["details"]["user"] == competitor
    assert entries[5]["details"]["reason"] == "hide for the audit"
    assert entries[2]["details"] == {"reason": "shared accounts"}

    page = await browser.get("/admin/audit", headers=HTML)
    assert page.status_code == 200
    assert "submission.rerun" in page.text and "problem.settings" in page.text
    assert page.text.index("problem.add") < page.text.index("problem.settings")


async def test_a_refused_action_leaves_no_entry(
    browser: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    new_problem("auditbad")
    admin_name, admin_token = make_user("boss", admin=True)
    await log_in(browser, admin_name)
    refused = await post_form(
        browser, "/admin/problems/auditbad", {"deadline": "tomorrow"}, from_page="/admin/problems"
    )
    assert refused.status_code == 422
    assert await audit_entries(client, Account(admin_name, admin_token), actor=admin_name) == []


async def test_the_log_is_paginated_newest_first(client: httpx.AsyncClient, admin: Account) -> None:
    for n in range(3):
        await upload(client, admin, problem_zip(f"paged{n}"), "p.zip")
    first = await client.get("/api/v1/admin/audit", params={"per_page": 2}, headers=admin.headers)
    second = await client.get(
        "/api/v1/admin/audit", params={"per_page": 2, "page": 2}, headers=admin.headers
    )
    body = first.json()
    assert (body["page"], body["per_page"]) == (1, 2) and body["total"] >= 3
    targets = [e["target"] for e in body["entries"] + second.json()["entries"]]
    assert targets[:3] == ["paged2", "paged1", "paged0"]
    ids = [e["id"] for e in body["entries"] + second.json()["entries"]]
    assert ids == sorted(ids, reverse=True)
    for page in (0, 2**75):  # the second would overflow the query's offset
        bad = await client.get("/api/v1/admin/audit", params={"page": page}, headers=admin.headers)
        assert bad.status_code == 422 and bad.json()["error"] == "invalid_request"


async def test_only_admins_read_the_log(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, alice: Account
) -> None:
    assert (await client.get("/api/v1/admin/audit")).status_code == 401
    forbidden = await client.get("/api/v1/admin/audit", headers=alice.headers)
    assert forbidden.status_code == 403 and forbidden.json()["error"] == "forbidden"
    await sign_in(browser)
    assert (await browser.get("/admin/audit", headers=HTML)).status_code == 403
