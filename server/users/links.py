"""One-time links (password resets, address verifications): only a key's SHA-256 is stored;
a link works once, until it runs out, and a newer one for the same user ends the older ones."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, select, update
from sqlalchemy.orm import Session

from server.models import EmailVerification, PasswordReset, User, utcnow
from server.settings import Settings
from server.users import service as users

Link = TypeVar("Link", PasswordReset, EmailVerification)

KEY_MAX = 128


def issue(
    session: Session, model: type[Link], user: User, lifetime: timedelta, **columns: Any
) -> tuple[str, Link]:
    """A new key for `user` and its row (with `columns` besides the common ones); the user's
    earlier links of this kind stop working."""
    now = utcnow()
    session.execute(
        update(model).where(model.user_id == user.id, model.ended_at.is_(None)).values(ended_at=now)
    )
    key = secrets.token_urlsafe(32)
    link = model(
        key_hash=users.hash_token(key),
        user_id=user.id,
        created_at=now,
        expires_at=now + lifetime,
        **columns,
    )
    session.add(link)
    return key, link


def working(session: Session, model: type[Link], key: str) -> Link | None:
    """The link of this key while it still works, else None."""
    if not key or len(key) > KEY_MAX:
        return None
    return session.scalar(
        select(model).where(
            model.key_hash == users.hash_token(key),
            model.ended_at.is_(None),
            model.expires_at > utcnow(),
        )
    )


def last_issued(
    session: Session, model: type[Link], user: User, *where: ColumnElement[bool]
) -> datetime | None:
    """When the user's newest link of this kind (narrowed by `where`) was made, if any."""
    return session.scalar(
        select(model.created_at)
        .where(model.user_id == user.id, *where)
        .order_by(model.created_at.desc())
        .limit(1)
    )


def url(settings: Settings, base_url: str, path: str, key: str) -> str:
    """The link to hand over: the site's public address (else the request's), path, key."""
    return f"{(settings.public_url or base_url).rstrip('/')}{path}{key}"
