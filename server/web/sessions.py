"""The session cookie's secret, the CSRF token and the signed-in user of a browser request."""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.sessions import SessionMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from server.errors import BadRequest, Forbidden
from server.models import User
from server.settings import Settings, get_settings
from server.users import service as users

SECRET_KEY_FILE = "secret_key"
SESSION_COOKIE = "kj_session"
SESSION_MAX_AGE_S = 14 * 24 * 3600
# The cookie's key of its server-side session (server.models.WebSession).
SESSION_KEY = "sid"
CSRF_FIELD = "csrf_token"
# Paths that never use the session: the REST API authenticates by token, and static files
# answered late would otherwise send back an older cookie over a fresher one (a log-in lost).
SESSIONLESS_PREFIXES = ("/api/", "/static/", "/healthz", "/docs", "/openapi.json")


class PageSessions:
    """Starlette's signed-cookie sessions, for the pages only."""

    def __init__(self, app: ASGIApp, *, secret_key: str, https_only: bool) -> None:
        self.app = app
        self.with_sessions = SessionMiddleware(
            app,
            secret_key=secret_key,
            session_cookie=SESSION_COOKIE,
            max_age=SESSION_MAX_AGE_S,
            same_site="lax",
            https_only=https_only,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope["path"].startswith(SESSIONLESS_PREFIXES):
            await self.with_sessions(scope, receive, send)
        else:
            await self.app(scope, receive, send)


class CsrfFailed(Forbidden):
    """A form arrived without the token of the session that showed it."""

    code = "csrf_failed"


def secret_key(settings: Settings) -> str:
    """``KJ_SECRET_KEY``; in development, when unset, one generated once and kept in the data
    dir so that every process of this install signs alike. Outside development it must be set
    (`Settings.check_secret_key`)."""
    settings.check_secret_key()
    if settings.secret_key:
        return settings.secret_key
    settings.ensure_data_dir()
    return read_or_create_key(settings.data_dir / SECRET_KEY_FILE)


def read_or_create_key(path: Path) -> str:
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    key = secrets.token_urlsafe(48)
    with os.fdopen(descriptor, "w") as out:
        out.write(key + "\n")
    return key


def csrf_token(request: Request) -> str:
    """This session's CSRF token, made on first use."""
    token = request.session.get("csrf")
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        request.session["csrf"] = token
    return token


async def read_form(request: Request, settings: Settings) -> FormData:
    """The posted form, after checking its CSRF token against the session's."""
    try:
        form = await request.form(
            max_files=1, max_fields=20, max_part_size=max(settings.max_code_bytes + 1, 1 << 20)
        )
    except StarletteHTTPException as exc:
        raise BadRequest(f"the form could not be read: {exc.detail}") from exc
    sent = form.get(CSRF_FIELD)
    expected = request.session.get("csrf")
    if not (
        isinstance(sent, str)
        and isinstance(expected, str)
        and secrets.compare_digest(sent.encode(), expected.encode())
    ):
        raise CsrfFailed("this form has expired or did not come from this site; reload the page")
    return form


async def posted_form(
    request: Request, settings: Annotated[Settings, Depends(get_settings)]
) -> AsyncIterator[FormData]:
    """The posted form as a dependency: read on the event loop, so that the page handler
    can be a plain function whose database work (and password hashing) runs in the thread
    pool; its uploaded files are closed after the response."""
    form = await read_form(request, settings)
    try:
        yield form
    finally:
        await form.close()


PostedForm = Annotated[FormData, Depends(posted_form)]


def sign_in(request: Request, session: Session, user: User) -> None:
    """A fresh session for this user: nothing set before signing in carries over, and the
    cookie names a session the server can end."""
    request.session.clear()
    request.session["user_id"] = user.id
    request.session[SESSION_KEY] = users.start_web_session(session, user)
    csrf_token(request)


def signed_in_user(request: Request, session: Session) -> User | None:
    """The user this request's cookie signs in, while its session is open."""
    return users.web_session_user(
        session,
        request.session.get("user_id"),
        request.session.get(SESSION_KEY),
        timedelta(seconds=SESSION_MAX_AGE_S),
    )


def sign_out(request: Request, session: Session) -> None:
    """This browser's session ends (a copy of its cookie opens nothing afterwards)."""
    users.end_web_session(session, request.session.get(SESSION_KEY))
    request.session.clear()
