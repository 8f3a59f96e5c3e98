"""API tokens with scopes and an expiry: a token without `submit` cannot submit, one
without `admin` opens no admin route, an expired one is refused as expired; only an
admin's token may have `admin`."""

from __future__ import annotations

import secrets
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select

from server.db import session_scope
from server.errors import Forbidden
from server.models import ApiToken, utcnow
from server.users.repository import get_user_by_name
from server.users.service import hash_token, issue_token
from tests.server.web_client import make_user

pytestmark = pytest.mark.anyio

CODE = "def custom_kernel(data):\n    return data\n"


def token_for(name: str, scopes: list[str], expires_days: int | None = None) -> dict[str, str]:
    with session_scope() as session:
        user = get_user_by_name(session, name)
        assert user is not None
        token = issue_token(session, user, scope_names=scopes, expires_days=expires_days)
    return {"Authorization": f"Bearer {token}"}


async def test_a_read_only_token_reads_but_cannot_submit(client: httpx.AsyncClient) -> None:
    name, _ = make_user("reader")
    read_only = token_for(name, ["read"])
    assert (await client.get("/api/v1/submissions", headers=read_only)).status_code == 200
    for path, body in (
        ("/api/v1/submissions", {"problem": "vectoradd", "code": CODE}),
        ("/api/v1/batches", {"items": [{"key": "a.py", "problem": "vectoradd", "code": CODE}]}),
    ):
        refused = await client.post(path, json=body, headers=read_only)
        assert refused.status_code == 403, path
        assert "lacks the 'submit' scope" in refused.json()["detail"]
    # A submit-only token submits, but reads nothing.
    submit_only = token_for(name, ["submit"])
    sent = await client.post(
        "/api/v1/submissions", json={"problem": "vectoradd", "code": CODE}, headers=submit_only
    )
    assert sent.status_code == 202, sent.text
    read = await client.get(f"/api/v1/submissions/{sent.json()['id']}", headers=submit_only)
    assert read.status_code == 403
    assert "lacks the 'read' scope" in read.json()["detail"]


async def test_admin_routes_need_the_admin_scope(client: httpx.AsyncClient) -> None:
    name, default_token = make_user("organizer", admin=True)
    audit = "/api/v1/admin/audit"
    no_admin = await client.get(audit, headers=token_for(name, ["read", "submit"]))
    assert no_admin.status_code == 403
    assert "lacks the 'admin' scope" in no_admin.json()["detail"]
    assert (await client.get(audit, headers=token_for(name, ["admin"]))).status_code == 200
    # A token made without choosing has all its user may use, as before scopes.
    default = {"Authorization": f"Bearer {default_token}"}
    assert (await client.get(audit, headers=default)).status_code == 200


def test_only_an_admins_token_may_have_the_admin_scope(database: None) -> None:
    name, _ = make_user("plain")
    with pytest.raises(Forbidden, match="only an admin's token"):
        token_for(name, ["read", "admin"])


async def test_an_authors_tokens_have_the_author_scope_and_no_one_elses(
    client: httpx.AsyncClient,
) -> None:
    name, _ = make_user("plain-author")
    with pytest.raises(Forbidden, match="only an author's token"):
        token_for(name, ["read", "author"])
    with session_scope() as session:
        user = get_user_by_name(session, name)
        assert user is not None
        user.is_author = True
        default = issue_token(session, user)
        scopes = session.scalar(
            select(ApiToken.scopes).where(ApiToken.token_hash == hash_token(default))
        )
    assert scopes is not None and "author" in scopes.split()
    shown = await client.get("/api/v1/problems", headers={"Authorization": f"Bearer {default}"})
    assert shown.status_code == 200


async def test_an_expired_token_is_refused_as_expired(client: httpx.AsyncClient) -> None:
    name, _ = make_user("brief")
    headers = token_for(name, ["read"], expires_days=1)
    assert (await client.get("/api/v1/submissions", headers=headers)).status_code == 200
    token = headers["Authorization"].removeprefix("Bearer ")
    with session_scope() as session:
        stored = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(token)))
        assert stored is not None and stored.expires_at is not None
        assert timedelta(hours=23) < stored.expires_at - utcnow() <= timedelta(days=1)
        stored.expires_at = utcnow() - timedelta(minutes=1)
    expired = await client.get("/api/v1/submissions", headers=headers)
    assert expired.status_code == 401
    assert "expired" in expired.json()["detail"]


async def test_the_cli_makes_tokens_with_scopes_and_an_expiry(client: httpx.AsyncClient) -> None:
    from typer.testing import CliRunner

    from server.cli import app

    runner = CliRunner()
    name = f"cli-{secrets.token_hex(4)}"
    added = runner.invoke(
        app, ["user", "add", name, "--scope", "read", "--expires-days", "7"], catch_exceptions=False
    )
    assert added.exit_code == 0, added.output
    read_only = {"Authorization": f"Bearer {added.stdout.strip().splitlines()[-1]}"}
    assert (await client.get("/api/v1/submissions", headers=read_only)).status_code == 200
    refused = await client.post(
        "/api/v1/submissions", json={"problem": "vectoradd", "code": CODE}, headers=read_only
    )
    assert refused.status_code == 403

    made = runner.invoke(app, ["user", "token", name, "--scope", "submit", "--scope", "read"])
    assert made.exit_code == 0, made.output
    submitter = {"Authorization": f"Bearer {made.stdout.strip().splitlines()[-1]}"}
    sent = await client.post(
        "/api/v1/submissions", json={"problem": "vectoradd", "code": CODE}, headers=submitter
    )
    assert sent.status_code == 202, sent.text

    wrong = runner.invoke(app, ["user", "token", name, "--scope", "admin"])
    assert wrong.exit_code == 1 and "only an admin's token" in wrong.output
