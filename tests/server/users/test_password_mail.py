"""Password-reset links by email, against a real SMTP server (aiosmtpd) on a port of its
own: a user keeps an address on their page; asking on /forgot with their name mails a link
there, and the page answers the same for a name that does not exist or has no address."""

from __future__ import annotations

import re
from collections.abc import Iterator
from email import message_from_bytes
from email.message import Message
from typing import Any

import httpx
import pytest
from aiosmtpd.controller import Controller

from rig.processes import free_port
from tests.server.conftest import changed_settings
from tests.server.web_client import HTML, csrf_from, log_in, make_user, post_form, sign_in

pytestmark = pytest.mark.anyio

ON_ITS_WAY = "a link that sets a new password is on its way"


class Inbox:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(message_from_bytes(envelope.content))
        return "250 OK"


@pytest.fixture
def inbox() -> Iterator[Inbox]:
    received = Inbox()
    port = free_port()
    controller = Controller(received, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        with changed_settings(
            smtp_host="127.0.0.1",
            smtp_port=str(port),
            smtp_starttls="false",
            smtp_from="judge@example.org",
        ):
            yield received
    finally:
        controller.stop()


async def ask(client: httpx.AsyncClient, name: str) -> httpx.Response:
    return await post_form(client, "/forgot", {"name": name}, from_page="/forgot")


async def test_a_link_is_mailed_to_the_address_the_user_kept(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, inbox: Inbox
) -> None:
    name = await sign_in(browser, "mailed")
    page = f"/users/{name}"
    bad = await post_form(browser, "/account/email", {"email": "not an address"}, from_page=page)
    assert bad.status_code == 422 and "is not an email address" in bad.text
    saved = await post_form(
        browser, "/account/email", {"email": "mailed@example.org"}, from_page=page
    )
    assert saved.status_code == 303
    shown = (await browser.get(page, headers=HTML)).text
    assert 'value="mailed@example.org"' in shown and "Password-reset mail goes to" in shown
    assert "mailed@example.org" not in (await client.get(page, headers=HTML)).text

    login = (await client.get("/login", headers=HTML)).text
    assert 'href="/forgot"' in login
    answered = await ask(client, name)
    assert answered.status_code == 200 and ON_ITS_WAY in answered.text
    (mail,) = inbox.messages
    assert mail["To"] == "mailed@example.org" and mail["From"] == "judge@example.org"
    body = str(mail.get_payload(decode=True), "utf-8")
    link = re.search(r"http://test(/reset/[\w-]+)", body)
    assert link, body

    # Asked again at once, for a name that does not exist, or one without an address: the
    # same answer, and no mail.
    for who in (name, "nobody-by-that-name", make_user("silent")[0]):
        again = await ask(client, who)
        assert again.status_code == 200 and ON_ITS_WAY in again.text
    assert len(inbox.messages) == 1

    form = await client.get(link.group(1), headers=HTML)
    assert form.status_code == 200
    data = {"password": "mailed new password", "password_again": "mailed new password"}
    done = await client.post(
        link.group(1), data={**data, "csrf_token": csrf_from(form)}, headers=HTML
    )
    assert done.status_code == 303
    assert (await log_in(client, name, "mailed new password")).status_code == 303


async def test_without_smtp_the_page_says_to_ask_an_organizer(client: httpx.AsyncClient) -> None:
    page = await client.get("/forgot", headers=HTML)
    assert page.status_code == 200 and "ask an organizer" in page.text
    assert 'href="/forgot"' not in (await client.get("/login", headers=HTML)).text
    token = csrf_from(await client.get("/login", headers=HTML))
    refused = await client.post("/forgot", data={"name": "x", "csrf_token": token}, headers=HTML)
    assert refused.status_code == 404
