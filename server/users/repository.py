"""Queries for users, API tokens and failed log-ins."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, or_, select
from sqlalchemy.orm import Session

from server.models import ApiToken, LoginAttempt, User


def get_user_by_name(session: Session, name: str) -> User | None:
    return session.scalar(select(User).where(User.name == name))


def get_user(session: Session, user_id: int) -> User | None:
    return session.get(User, user_id)


def list_users(session: Session) -> Sequence[User]:
    return session.scalars(select(User).order_by(User.name)).all()


def get_active_token(session: Session, token_hash: str) -> ApiToken | None:
    return session.scalar(
        select(ApiToken).where(ApiToken.token_hash == token_hash, ApiToken.revoked_at.is_(None))
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
    """Failed log-ins since ``since``: (for this user name, from this address)."""
    recent = select(LoginAttempt).where(LoginAttempt.created_at >= since).subquery()
    by_name = select(func.count()).select_from(recent).where(recent.c.user_name == user_name)
    by_address = select(func.count()).select_from(recent).where(recent.c.address == address)
    return session.scalar(by_name) or 0, session.scalar(by_address) or 0


def add_failed_login(session: Session, *, user_name: str, address: str) -> None:
    session.add(LoginAttempt(user_name=user_name, address=address))
    session.flush()


def forget_failed_logins(session: Session, *, user_name: str, before: datetime) -> None:
    """Drop this name's failures and everyone's expired ones, so the table stays small."""
    session.execute(
        delete(LoginAttempt).where(
            or_(LoginAttempt.user_name == user_name, LoginAttempt.created_at < before)
        )
    )
