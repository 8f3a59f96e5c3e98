"""Queries for users, API tokens, web sessions and failed log-ins."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from sqlalchemy import and_, bindparam, delete, func, or_, select, update
from sqlalchemy.orm import Session, joinedload

from server.db import get_engine
from server.models import ApiToken, LoginAttempt, PasswordReset, User, WebSession

log = logging.getLogger(__name__)
# One background writer for token use: a request never waits on it, nor holds the token's
# row locked until it ends (which let one token submitting and polling at once stall).
_token_use_writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kj-token-use")


def get_user_by_name(session: Session, name: str) -> User | None:
    """User names are one whatever their case: `ada` and `ADA` name the same user. A name
    with a NUL character names nobody (PostgreSQL refuses NUL in any text it is sent)."""
    if "\x00" in name:
        return None
    return session.scalar(select(User).where(func.lower(User.name) == name.lower()))


def get_user(session: Session, user_id: int) -> User | None:
    return session.get(User, user_id)


def list_users(session: Session) -> Sequence[User]:
    return session.scalars(select(User).order_by(User.name)).all()


def get_active_token(session: Session, token_hash: str) -> ApiToken | None:
    """The token with its user, in one query: every authenticated request asks."""
    return session.scalar(
        select(ApiToken)
        .options(joinedload(ApiToken.user))
        .where(ApiToken.token_hash == token_hash, ApiToken.revoked_at.is_(None))
    )


def record_token_use(token_id: int, at: datetime, *, older_than: datetime) -> None:
    """Set the token's last use, later, on another thread, in a transaction of its own that
    writes every use recorded meanwhile; only if the stored one is older than `older_than`,
    so a burst of requests writes once."""
    with _uses_lock:
        idle = not _uses
        _uses[token_id] = (at, older_than)
    if idle:
        _token_use_writer.submit(_write_uses)


# Token uses not written yet, by token id: (when, the stored use it replaces if older).
_uses: dict[int, tuple[datetime, datetime]] = {}
_uses_lock = threading.Lock()


def _write_uses() -> None:
    with _uses_lock:
        uses = sorted(_uses.items())
        _uses.clear()
    if not uses:
        return
    statement = (
        update(ApiToken)
        .where(
            ApiToken.id == bindparam("token"),
            or_(ApiToken.last_used_at.is_(None), ApiToken.last_used_at < bindparam("older")),
        )
        .values(last_used_at=bindparam("used"))
    )
    rows = [{"token": token, "used": at, "older": older} for token, (at, older) in uses]
    try:
        with get_engine().begin() as connection:
            connection.execute(statement, rows)
    except Exception:
        log.warning("could not record the use of %d tokens", len(rows), exc_info=True)


def count_other_admins(session: Session, user_id: int) -> int:
    """Admins other than this user who can still act (not banned, not deleted)."""
    return (
        session.scalar(
            select(func.count())
            .select_from(User)
            .where(User.is_admin.is_(True), User.is_banned.is_(False), User.id != user_id)
        )
        or 0
    )


def revoke_tokens(session: Session, user_id: int, at: datetime) -> None:
    session.execute(
        update(ApiToken)
        .where(ApiToken.user_id == user_id, ApiToken.revoked_at.is_(None))
        .values(revoked_at=at)
    )


def end_password_resets(session: Session, user_id: int, at: datetime) -> None:
    session.execute(
        update(PasswordReset)
        .where(PasswordReset.user_id == user_id, PasswordReset.ended_at.is_(None))
        .values(ended_at=at)
    )


def list_tokens(session: Session, user_id: int) -> Sequence[ApiToken]:
    return session.scalars(
        select(ApiToken).where(ApiToken.user_id == user_id).order_by(ApiToken.id.desc())
    ).all()


def get_token(session: Session, user_id: int, token_id: int) -> ApiToken | None:
    return session.scalar(
        select(ApiToken).where(ApiToken.user_id == user_id, ApiToken.id == token_id)
    )


def count_failed_logins(
    session: Session, *, user_name: str, address: str, since: datetime
) -> tuple[int, int]:
    """Failed log-ins since ``since``: (for this user name from this address, from this
    address for any name)."""
    recent = select(LoginAttempt).where(LoginAttempt.created_at >= since).subquery()
    from_here = select(func.count()).select_from(recent).where(recent.c.address == address)
    for_name = from_here.where(recent.c.user_name == user_name)
    return session.scalar(for_name) or 0, session.scalar(from_here) or 0


def add_failed_login(session: Session, *, user_name: str, address: str) -> None:
    session.add(LoginAttempt(user_name=user_name, address=address))
    session.flush()


def forget_failed_logins(
    session: Session, *, user_name: str, address: str, before: datetime
) -> None:
    """Drop this name's failures from this address and everyone's expired ones, so the
    table stays small (failures from elsewhere still count against the guesser there)."""
    session.execute(
        delete(LoginAttempt).where(
            or_(
                and_(LoginAttempt.user_name == user_name, LoginAttempt.address == address),
                LoginAttempt.created_at < before,
            )
        )
    )


def get_open_web_session(session: Session, key_hash: str, since: datetime) -> WebSession | None:
    """The session with this key, not ended and begun after `since`."""
    return session.scalar(
        select(WebSession).where(
            WebSession.key_hash == key_hash,
            WebSession.ended_at.is_(None),
            WebSession.created_at > since,
        )
    )


def end_web_sessions(
    session: Session,
    ended_at: datetime,
    *,
    user_id: int | None = None,
    key_hash: str | None = None,
    except_key_hash: str | None = None,
) -> None:
    """End the open sessions with this key, or all of this user's (but the one with
    ``except_key_hash``)."""
    query = update(WebSession).where(WebSession.ended_at.is_(None))
    if key_hash is not None:
        query = query.where(WebSession.key_hash == key_hash)
    if user_id is not None:
        query = query.where(WebSession.user_id == user_id)
    if except_key_hash is not None:
        query = query.where(WebSession.key_hash != except_key_hash)
    session.execute(query.values(ended_at=ended_at))
