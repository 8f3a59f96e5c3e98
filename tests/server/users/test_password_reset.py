"""Password resets without email: an organizer makes a one-time link on the admin page (or
with `kerneljudge user reset-link`), the user opens it and sets a new password; the link
works once, within a day, and the newest only; setting the password signs the user out of
every browser."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select, update

from server.app import create_app
from server.db import session_scope
from server.models import AuditEntry, PasswordReset, utcnow
from tests.server.web_client import HTML, PASSWORD, csrf_from, log_in, make_user, post_form, sign_in

pytestmark = pytest.mark.anyio

NEW_PASSWORD = "a much longer passphrase"
LINK = re.compile(r'<code id="reset-link" class="token">(http://test/reset/[\w-]+)</code>')


@pytest.fixture
async def organizer(browser: httpx.AsyncClient) -> httpx.AsyncClient:
    """A browser signed in as an organizer, who makes the links."""
    await sign_in(browser, "organizer", admin=True)
    return browser


async def make_link(organizer: httpx.AsyncClient, user_id: int) -> str:
    made = await post_form(
        organizer, f"/admin/users/{user_id}/reset-link", {}, from_page="/admin/users"
    )
    assert made.status_code == 303, made.text
    page = (await organizer.get("/admin/users", headers=HTML)).text
    match = LINK.search(page)
    assert match, page
    assert "shown this once" in page
    again = (await organizer.get("/admin/users", headers=HTML)).text
    assert not LINK.search(again)  # shown once
    return match.group(1).removeprefix("http://test")


def user_id_of(name: str) -> int:
    from server.users.repository import get_user_by_name

    with session_scope() as session:
        user = get_user_by_name(session, name)
        assert user is not None
        return user.id


async def set_password(
    client: httpx.AsyncClient, path: str, password: str, again: str = ""
) -> httpx.Response:
    form = await client.get(path, headers=HTML)
    assert form.status_code == 200, form.text
    data = {"password": password, "password_again": again or password}
    return await client.post(path, data={**data, "csrf_token": csrf_from(form)}, headers=HTML)


async def test_an_organizers_link_sets_a_new_password_once_and_signs_the_user_out(
    client: httpx.AsyncClient, organizer: httpx.AsyncClient
) -> None:
    name, _ = make_user("forgetful")
    path = await make_link(organizer, user_id_of(name))

    # Somewhere the user is still signed in (a browser left open elsewhere).
    transport = httpx.ASGITransport(app=create_app())  # browsers with cookie jars of their own
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as elsewhere:
        await log_in(elsewhere, name)
        assert (await elsewhere.get("/submit", headers=HTML)).status_code == 200

        async with httpx.AsyncClient(transport=transport, base_url="http://test") as user:
            form = await user.get(path, headers=HTML)
            assert form.status_code == 200 and f"<strong>{name}</strong>" in form.text
            differ = await set_password(user, path, NEW_PASSWORD, "something else entirely")
            assert differ.status_code == 422 and "the two passwords differ" in differ.text
            short = await set_password(user, path, "short")
            assert short.status_code == 422 and "at least 8 characters" in short.text
            done = await set_password(user, path, NEW_PASSWORD)  # the link still worked
            assert done.status_code == 303 and done.headers["location"] == "/login?done=reset"
            shown = await user.get("/login?done=reset", headers=HTML)
            assert "Your new password is set" in shown.text

            used = await user.get(path, headers=HTML)
            assert used.status_code == 410 and "ask an organizer for a new one" in used.text
            data = {"password": NEW_PASSWORD, "csrf_token": csrf_from(shown)}
            late = await user.post(path, data=data, headers=HTML)
            assert late.status_code == 410

            old = await log_in(user, name, PASSWORD)
            assert old.status_code == 401
            new = await log_in(user, name, NEW_PASSWORD)
            assert new.status_code == 303

        # The browser left open was signed out.
        opened = await elsewhere.get("/submit", headers=HTML)
        assert opened.status_code == 303 and opened.headers["location"].startswith("/login")

    with session_scope() as session:
        actions = session.scalars(
            select(AuditEntry.action).where(AuditEntry.target == name).order_by(AuditEntry.id)
        ).all()
    assert actions == ["user.reset_link", "user.password_reset"]


async def test_only_the_newest_link_works_and_only_for_a_day(
    client: httpx.AsyncClient, organizer: httpx.AsyncClient
) -> None:
    name, _ = make_user("twice")
    first = await make_link(organizer, user_id_of(name))
    second = await make_link(organizer, user_id_of(name))
    assert (await client.get(first, headers=HTML)).status_code == 410
    assert (await client.get(second, headers=HTML)).status_code == 200
    with session_scope() as session:
        session.execute(update(PasswordReset).values(expires_at=utcnow() - timedelta(seconds=1)))
    expired = await client.get(second, headers=HTML)
    assert expired.status_code == 410 and "run out" in expired.text
    assert (await client.get("/reset/not-a-key", headers=HTML)).status_code == 410

    competitor, _ = make_user("competitor")
    transport = httpx.ASGITransport(app=create_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as other:
        await log_in(other, competitor)
        refused = await other.post(
            f"/admin/users/{user_id_of(name)}/reset-link",
            data={"csrf_token": csrf_from(await other.get("/", headers=HTML))},
            headers=HTML,
        )
        assert refused.status_code == 403


def test_the_cli_prints_a_link_that_works(database: None) -> None:
    name, _ = make_user("cli")
    url = "https://judge.example/"
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", "user", "reset-link", name, "--url", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    link = done.stdout.strip()
    assert re.fullmatch(r"https://judge\.example/reset/[\w-]{40,}", link), link
    assert "works once, for 24 hours" in done.stderr
    missing = subprocess.run(
        [sys.executable, "-m", "server.cli", "user", "reset-link", "nobody-here"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert missing.returncode == 1 and "no user named 'nobody-here'" in missing.stderr
