"""Creating users, issuing API tokens and resolving a bearer token to its user."""

from __future__ import annotations

import hashlib
import re
import secrets

from sqlalchemy.orm import Session

from server.errors import BadRequest, Conflict, NotAuthenticated
from server.models import ApiToken, User, utcnow
from server.users import repository

TOKEN_PREFIX = "kj_"
USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_user(session: Session, name: str, *, is_admin: bool = False) -> User:
    if not USER_NAME.match(name):
        raise BadRequest(
            "a user name is 1-64 characters: letters, digits, '_', '.', '-', "
            "starting with a letter or digit"
        )
    if repository.get_user_by_name(session, name) is not None:
        raise Conflict(f"user {name!r} already exists")
    user = User(name=name, is_admin=is_admin)
    session.add(user)
    session.flush()
    return user


def issue_token(session: Session, user: User, label: str = "") -> str:
    """Create a token and return it; only its hash is kept, so this is the one chance to see it."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(
        ApiToken(user_id=user.id, token_hash=hash_token(token), prefix=token[:10], label=label)
    )
    session.flush()
    return token


def authenticate(session: Session, token: str) -> User:
    record = repository.get_active_token(session, hash_token(token))
    if record is None:
        raise NotAuthenticated("the API token is unknown or revoked")
    record.last_used_at = utcnow()
    return record.user
