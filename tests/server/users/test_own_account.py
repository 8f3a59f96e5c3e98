"""A user's own account over the REST API: a new password confirmed by the current one
(the other browsers signed out, the audit log told), and deleting the account (its entries
leave the board, its tokens and sessions end, its name stays taken, the last admin stays)."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import select, update

from server.db import session_scope
from server.models import AuditEntry, Submission, User
from server.users.repository import get_user_by_name
from tests.server.conftest import PASSED_REPORT, add_submission
from tests.server.submissions.test_results import record
from tests.server.web_client import HTML, PASSWORD, client_at, log_in, make_user, post_form

pytestmark = pytest.mark.anyio

NEW_PASSWORD = "a-brand-new-password"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def change_password(
    client: httpx.AsyncClient, token: str, current: str, new: str = NEW_PASSWORD
) -> httpx.Response:
    return await client.post(
        "/api/v1/users/me/password",
        json={"current_password": current, "new_password": new},
        headers=bearer(token),
    )


async def delete_account(
    client: httpx.AsyncClient, token: str, password: str = PASSWORD
) -> httpx.Response:
    return await client.request(
        "DELETE", "/api/v1/users/me", json={"password": password}, headers=bearer(token)
    )


async def board(client: httpx.AsyncClient) -> set[str]:
    """Who is on vectoradd's CPU leaderboard."""
    answer = await client.get(
        "/api/v1/leaderboards/vectoradd", params={"gpu": "cpu", "limit": 1000}
    )
    assert answer.status_code == 200, answer.text
    return {entry["user"] for entry in answer.json()["entries"]}


def audited(action: str, name: str) -> bool:
    with session_scope() as session:
        return (
            session.scalar(
                select(AuditEntry.id).where(AuditEntry.action == action, AuditEntry.target == name)
            )
            is not None
        )


async def test_a_new_password_needs_the_current_one_and_signs_browsers_out(
    client: httpx.AsyncClient, browser: httpx.AsyncClient
) -> None:
    name, token = make_user("own")
    assert (await log_in(browser, name)).status_code == 303

    async with client_at("203.0.113.10") as guesser:
        wrong = await change_password(guesser, token, "not-my-password")
    assert wrong.status_code == 403
    assert wrong.json()["detail"] == "the current password is wrong"
    short = await change_password(client, token, PASSWORD, "short")
    assert short.status_code == 422
    assert "at least 8 characters" in short.json()["detail"]
    assert (await browser.get("/submit", headers=HTML)).status_code == 200  # nothing changed

    assert (await change_password(client, token, PASSWORD)).status_code == 204
    assert (await browser.get("/submit", headers=HTML)).status_code == 303  # signed out
    assert (await log_in(browser, name, PASSWORD)).status_code == 401
    assert (await log_in(browser, name, NEW_PASSWORD)).status_code == 303
    # The token still works, and the audit log says what happened.
    assert (await client.get("/api/v1/submissions", headers=bearer(token))).status_code == 200
    assert audited("user.password_change", name)


async def test_wrong_current_passwords_count_as_failed_log_ins(
    client: httpx.AsyncClient,
) -> None:
    _, token = make_user("guess")
    async with client_at("203.0.113.11") as guesser:
        answers = [
            (await change_password(guesser, token, f"guess-{n}")).status_code for n in range(6)
        ]
        assert answers == [403] * 5 + [429]
        # Even the right password waits now, from there: the guesser learns nothing more.
        assert (await change_password(guesser, token, PASSWORD)).status_code == 429
        assert (await delete_account(guesser, token)).status_code == 429
    # The owner, elsewhere, is not locked out.
    assert (await change_password(client, token, PASSWORD)).status_code == 204


async def test_deleting_an_account_takes_it_off_the_board_and_ends_its_access(
    client: httpx.AsyncClient, browser: httpx.AsyncClient
) -> None:
    name, token = make_user("leaving")
    submission_id = add_submission(name, mode="leaderboard")
    record(submission_id, PASSED_REPORT)
    assert name in await board(client)
    assert (await log_in(browser, name)).status_code == 303

    async with client_at("203.0.113.12") as guesser:
        assert (await delete_account(guesser, token, "not-my-password")).status_code == 403
    assert (await delete_account(client, token)).status_code == 204

    assert name not in await board(client)
    refused = await client.get("/api/v1/submissions", headers=bearer(token))
    assert refused.status_code == 401
    assert (await browser.get("/submit", headers=HTML)).status_code == 303
    assert (await log_in(browser, name)).status_code == 401
    assert (await client.get(f"/users/{name}", headers=HTML)).status_code == 404
    # The submission stays for the records (its author's row too); the name stays taken.
    with session_scope() as session:
        assert session.get(Submission, submission_id) is not None
        user = get_user_by_name(session, name)
        assert user is not None and user.is_banned and user.password_hash is None
    taken = await post_form(
        browser,
        "/signup",
        {"name": name, "password": PASSWORD, "password_again": PASSWORD},
        from_page="/signup",
    )
    assert taken.status_code == 422 and "already exists" in taken.text
    assert audited("user.delete", name)


async def test_the_last_admin_cannot_delete_their_account(client: httpx.AsyncClient) -> None:
    first, first_token = make_user("boss", admin=True)
    second, second_token = make_user("boss", admin=True)
    with session_scope() as session:  # only these two are admins for now
        others = session.scalars(
            select(User.id).where(User.is_admin, User.name.not_in((first, second)))
        ).all()
        session.execute(update(User).where(User.id.in_(others)).values(is_admin=False))
    try:
        assert (await delete_account(client, first_token)).status_code == 204
        last = await delete_account(client, second_token)
        assert last.status_code == 409
        assert "last admin" in last.json()["detail"]
    finally:
        with session_scope() as session:
            session.execute(update(User).where(User.id.in_(others)).values(is_admin=True))
