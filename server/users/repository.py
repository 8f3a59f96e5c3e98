"""Queries for users and API tokens."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import ApiToken, User


def get_user_by_name(session: Session, name: str) -> User | None:
    return session.scalar(select(User).where(User.name == name))


def get_active_token(session: Session, token_hash: str) -> ApiToken | None:
    return session.scalar(
        select(ApiToken).where(ApiToken.token_hash == token_hash, ApiToken.revoked_at.is_(None))
    )
