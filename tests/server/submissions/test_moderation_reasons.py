"""Moderation says why: hiding a submission, marking it hacked and banning a user need a
reason, which the author reads (on the submission's page and API body, or whenever a
banned account is refused) and the audit log keeps."""

from __future__ import annotations

import httpx
import pytest

from server.db import session_scope
from server.users.service import banned_reason, get_user
from tests.server.conftest import Account
from tests.server.users.test_audit_log import audit_entries
from tests.server.web.test_web_pages import graded, new_problem
from tests.server.web_client import HTML, csrf_from, log_in, make_user, post_form

pytestmark = pytest.mark.anyio


async def moderate(
    client: httpx.AsyncClient, admin: Account, sid: int, action: str, reason: str | None = None
) -> httpx.Response:
    return await client.post(
        f"/api/v1/admin/submissions/{sid}/moderation",
        json={"action": action, "reason": reason},
        headers=admin.headers,
    )


async def test_hiding_and_marking_hacked_need_a_reason_the_author_reads(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, admin: Account, alice: Account
) -> None:
    new_problem("reasoned")
    author, token = make_user("author")
    sid = graded(token, "reasoned", "fast")
    mine = Account(author, token)

    for action in ("hide", "hack"):
        refused = await moderate(client, admin, sid, action, "   ")
        assert refused.status_code == 422
        assert refused.json()["detail"] == (
            f"give a reason to {action}: it is shown to whom it concerns"
        )
    assert (await moderate(client, admin, sid, "delete", "x")).status_code == 422
    assert (await moderate(client, alice, sid, "hide", "x")).status_code == 403
    assert (await moderate(client, admin, 999_999, "hide", "x")).status_code == 404
    assert (await moderate(client, admin, sid, "hide", "x" * 1001)).status_code == 422

    hidden = await moderate(client, admin, sid, "hide", "  reads the expected output  ")
    assert hidden.status_code == 200, hidden.text
    assert hidden.json()["hidden_reason"] == "reads the expected output"
    assert (await moderate(client, admin, sid, "hack", "times a cached result")).status_code == 200

    body = (await client.get(f"/api/v1/submissions/{sid}", headers=mine.headers)).json()
    assert body["hidden"] and body["hidden_reason"] == "reads the expected output"
    assert body["hacked"] and body["hacked_reason"] == "times a cached result"
    assert (await client.get(f"/api/v1/submissions/{sid}", headers=alice.headers)).status_code == (
        404
    )

    await log_in(browser, author)
    page = (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    assert 'id="moderation"' in page
    assert "reads the expected output" in page and "times a cached result" in page

    entries = await audit_entries(client, admin, target=str(sid))
    assert [(e["action"], e["details"]["reason"]) for e in entries] == [
        ("submission.hack", "times a cached result"),
        ("submission.hide", "reads the expected output"),
    ]

    # Shown again, the reason goes with the mark; undoing needs none.
    assert (await moderate(client, admin, sid, "unhide")).status_code == 200
    body = (await client.get(f"/api/v1/submissions/{sid}", headers=mine.headers)).json()
    assert not body["hidden"] and body["hidden_reason"] is None
    page = (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    assert "reads the expected output" not in page and "times a cached result" in page


async def test_the_admin_form_refuses_a_hide_without_a_reason(browser: httpx.AsyncClient) -> None:
    new_problem("formreason")
    _, token = make_user()
    sid = graded(token, "formreason", "x")
    organizer, _ = make_user("mod", admin=True)
    await log_in(browser, organizer)
    shown = await browser.get("/admin/submissions", headers=HTML)
    assert f'aria-label="Reason for submission {sid}"' in shown.text
    refused = await browser.post(
        f"/admin/submissions/{sid}",
        data={"csrf_token": csrf_from(shown), "action": "hide", "reason": ""},
        headers=HTML,
    )
    assert refused.status_code == 422 and "give a reason to hide" in refused.text
    done = await post_form(
        browser,
        f"/admin/submissions/{sid}",
        {"action": "hide", "reason": "duplicate of 12"},
        from_page="/admin/submissions",
    )
    assert done.status_code == 303
    assert "duplicate of 12" in (await browser.get("/admin/submissions", headers=HTML)).text


async def test_a_ban_needs_a_reason_the_user_is_told(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, admin: Account
) -> None:
    name, token = make_user("banned")
    path = f"/api/v1/admin/users/{name}/moderation"
    refused = await client.post(path, json={"action": "ban"}, headers=admin.headers)
    assert refused.status_code == 422 and "give a reason to ban" in refused.json()["detail"]
    assert (
        await client.post(path.replace(name, "nobody-here"), json={"action": "ban", "reason": "x"},
                          headers=admin.headers)
    ).status_code == 404  # fmt: skip
    banned = await client.post(
        path, json={"action": "ban", "reason": "ran a miner on the workers"}, headers=admin.headers
    )
    assert banned.status_code == 200, banned.text
    assert banned.json()["banned_reason"] == "ran a miner on the workers"

    told = await client.get("/api/v1/submissions", headers={"Authorization": f"Bearer {token}"})
    assert told.status_code == 403
    assert told.json()["detail"] == "this account is banned: ran a miner on the workers"
    refused_log_in = await log_in(browser, name)
    assert refused_log_in.status_code == 403 and "ran a miner on the workers" in refused_log_in.text
    entry = (await audit_entries(client, admin, action="user.ban", target=name))[0]
    assert entry["details"] == {"reason": "ran a miner on the workers"}

    organizer, _ = make_user("usermod", admin=True)
    await log_in(browser, organizer)
    assert "ran a miner on the workers" in (await browser.get("/admin/users", headers=HTML)).text

    lifted = await client.post(path, json={"action": "unban"}, headers=admin.headers)
    assert lifted.status_code == 200 and lifted.json()["banned_reason"] is None
    with session_scope() as session:
        assert banned_reason(session, get_user(session, name)) is None
