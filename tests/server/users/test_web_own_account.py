"""The account page's own forms: a new password (this browser stays signed in, the others
are signed out), tokens with scopes and an expiry, and deleting the account."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.server.users.test_web_accounts import signed_in
from tests.server.web_client import (
    HTML,
    PASSWORD,
    client_at,
    log_in,
    make_user,
    post_form,
    sign_in,
)

pytestmark = pytest.mark.anyio

NEW_PASSWORD = "another-long-password"


async def test_changing_the_password_keeps_this_browser_and_signs_out_the_others(
    database: None,
) -> None:
    name, _ = make_user("pw")
    async with client_at("198.51.100.3") as here, client_at("198.51.100.5") as elsewhere:
        await log_in(here, name)
        await log_in(elsewhere, name)
        page = f"/users/{name}"

        async def change(current: str, new: str, again: str) -> httpx.Response:
            fields = {"current_password": current, "password": new, "password_again": again}
            return await post_form(here, "/account/password", fields, from_page=page)

        wrong = await change("not-my-password", NEW_PASSWORD, NEW_PASSWORD)
        assert wrong.status_code == 403 and "the current password is wrong" in wrong.text
        differ = await change(PASSWORD, NEW_PASSWORD, "something-else")
        assert differ.status_code == 422 and "the two passwords differ" in differ.text
        short = await change(PASSWORD, "short", "short")
        assert short.status_code == 422 and "at least 8 characters" in short.text
        assert await signed_in(elsewhere)

        done = await change(PASSWORD, NEW_PASSWORD, NEW_PASSWORD)
        assert done.status_code == 303
        assert "Password changed" in (await here.get(done.headers["location"], headers=HTML)).text
        assert await signed_in(here) and not await signed_in(elsewhere)
        assert (await log_in(elsewhere, name, NEW_PASSWORD)).status_code == 303


async def test_tokens_are_made_with_scopes_and_an_expiry_and_listed_so(
    browser: httpx.AsyncClient,
) -> None:
    name = await sign_in(browser, "tok")
    page = f"/users/{name}"
    form = await browser.get(page, headers=HTML)
    assert 'value="admin"' not in form.text  # only an admin's token may have it
    assert 'value="author"' not in form.text  # nor an author's but an author's
    made = await post_form(
        browser,
        "/account/tokens",
        {"label": "reader", "scope": "read", "expires_days": "30"},
        from_page=page,
    )
    assert made.status_code == 303
    shown = (await browser.get(page, headers=HTML)).text
    row = re.search(r"<td>reader</td>\s*<td class=\"token-scopes\">([^<]*)</td>", shown)
    assert row and row.group(1) == "read"
    assert "never" not in shown.split("reader", 1)[1].split("</tr>", 1)[0]

    for fields, error in (
        ({"label": "none"}, "at least one scope"),
        ({"scope": "admin"}, "only an admin"),
        ({"scope": "author"}, "only an author"),
        ({"scope": "read", "expires_days": "-3"}, "whole number of days"),
    ):
        refused = await post_form(browser, "/account/tokens", fields, from_page=page)
        assert refused.status_code in (403, 422) and error in refused.text, fields


async def test_deleting_the_account_from_its_page(database: None) -> None:
    async with client_at("198.51.100.4") as browser:
        await deleting_the_account(browser)


async def deleting_the_account(browser: httpx.AsyncClient) -> None:
    name = await sign_in(browser, "bye")
    page = f"/users/{name}"
    refused = await post_form(browser, "/account/delete", {"password": "wrong"}, from_page=page)
    assert refused.status_code == 403 and "the current password is wrong" in refused.text
    assert await signed_in(browser)

    deleted = await post_form(browser, "/account/delete", {"password": PASSWORD}, from_page=page)
    assert deleted.status_code == 303 and deleted.headers["location"] == "/login?done=deleted"
    assert "Your account is deleted." in (await browser.get("/login?done=deleted")).text
    assert not await signed_in(browser)
    assert (await log_in(browser, name)).status_code == 401
    assert (await browser.get(page, headers=HTML)).status_code == 404
