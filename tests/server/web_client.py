"""Driving the pages from tests without a browser: read a form's CSRF token, post forms, log in."""

from __future__ import annotations

import re
from itertools import count

import httpx

from server.app import create_app
from server.db import session_scope
from server.users.service import create_user, issue_token

HTML = {"Accept": "text/html"}
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
PASSWORD = "correct-horse-battery"

_names = count()


def csrf_from(response: httpx.Response) -> str:
    match = CSRF.search(response.text)
    assert match, f"no CSRF token on {response.url}"
    return match.group(1)


def field_error(response: httpx.Response, field: str) -> str:
    """The error a form page says next to ``field``."""
    match = re.search(rf'id="{field}-error" role="alert">([^<]*)<', response.text)
    assert match, f"no error next to {field}: {response.status_code}"
    return match.group(1)


async def post_form(
    client: httpx.AsyncClient, path: str, data: dict[str, str], *, from_page: str
) -> httpx.Response:
    """Post a form the way a browser does: fetch the page that shows it, send its token."""
    token = csrf_from(await client.get(from_page, headers=HTML))
    return await client.post(path, data={**data, "csrf_token": token}, headers=HTML)


async def moderate(
    client: httpx.AsyncClient, kind: str, row_id: int, action: str, reason: str | None = None
) -> httpx.Response:
    """An organizer's moderation form on the admin page of `kind` ("submissions" or
    "users"), for the row `row_id`, with its reason if one is given."""
    data = {"action": action} if reason is None else {"action": action, "reason": reason}
    return await post_form(client, f"/admin/{kind}/{row_id}", data, from_page=f"/admin/{kind}")


async def submit_form(client: httpx.AsyncClient, fields: dict[str, str]) -> httpx.Response:
    """The submit page's form, sent with these fields."""
    return await post_form(client, "/submit", fields, from_page="/submit")


def make_user(prefix: str = "web", *, admin: bool = False) -> tuple[str, str]:
    """A user with a password; returns (name, API token)."""
    name = f"{prefix}{next(_names)}"
    with session_scope() as session:
        user = create_user(session, name, is_admin=admin, password=PASSWORD)
        token = issue_token(session, user)
    return name, token


async def log_in(client: httpx.AsyncClient, name: str, password: str = PASSWORD) -> httpx.Response:
    return await post_form(
        client, "/login", {"name": name, "password": password}, from_page="/login"
    )


async def sign_in(client: httpx.AsyncClient, prefix: str = "web", *, admin: bool = False) -> str:
    """A new user with a password, logged in on `client`; returns the user's name."""
    name, _ = make_user(prefix, admin=admin)
    assert (await log_in(client, name)).status_code == 303
    return name


def client_at(address: str) -> httpx.AsyncClient:
    """A client (and browser, keeping its cookies) of its own address: its wrong passwords
    count against that address alone, not against every other test's client."""
    transport = httpx.ASGITransport(app=create_app(), client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://test")
