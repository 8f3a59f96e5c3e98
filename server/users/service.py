"""Creating users, passwords and log-in, web sessions that can be ended (and the notice each
keeps for its next page), API tokens, and resolving a bearer token to its user."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy.orm import Session

from server.audit import service as audit
from server.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    NotAuthenticated,
    TooManyRequests,
    existing,
)
from server.leaderboards import upkeep
from server.models import ApiToken, User, WebSession, utcnow
from server.settings import Settings
from server.users import repository, scopes
from server.users.scopes import Scope

TOKEN_PREFIX = "kj_"
USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# A token's "last used" is kept to the minute: written at most once a minute per token, and
# never in the request's own transaction (see repository.record_token_use).
TOKEN_USE_RESOLUTION = timedelta(minutes=1)
MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 1024

passwords = PasswordHasher()
# Verified against when the user name is unknown, so a wrong name costs as long as a wrong
# password and timing does not tell which names exist.
_DUMMY_HASH = passwords.hash(secrets.token_urlsafe(16))


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_user(
    session: Session,
    name: str,
    *,
    is_admin: bool = False,
    is_author: bool = False,
    password: str | None = None,
) -> User:
    check_new_name(session, name)
    user = User(name=name, is_admin=is_admin, is_author=is_author)
    if password is not None:
        set_password(user, password)
    session.add(user)
    session.flush()
    return user


def check_new_name(session: Session, name: str) -> None:
    """Raises BadRequest for a name no user may have, Conflict for one that is taken."""
    if not USER_NAME.match(name):
        raise BadRequest(
            "a user name is 1-64 characters: letters, digits, '_', '.', '-', "
            "starting with a letter or digit"
        )
    taken = repository.get_user_by_name(session, name)
    if taken is not None:
        shown = (
            "" if taken.name == name else f" (as {taken.name!r}: names are one whatever their case)"
        )
        raise Conflict(f"user {name!r} already exists{shown}")


def set_password(user: User, password: str) -> None:
    check_password(password)
    user.password_hash = passwords.hash(password)


def check_password(password: str) -> None:
    """Raises BadRequest for a password too short or too long."""
    if len(password) < MIN_PASSWORD_LENGTH:
        raise BadRequest(f"a password has at least {MIN_PASSWORD_LENGTH} characters")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise BadRequest(f"a password has at most {MAX_PASSWORD_LENGTH} characters")


def log_in(session: Session, settings: Settings, name: str, password: str, address: str) -> User:
    """The user whose name and password these are; a banned user is refused. Failures are
    recorded in the database and limited over ``login_window_s`` per name from one address,
    and per address: the guesser is slowed where it guesses from, and the owner, elsewhere,
    is never locked out by someone else's wrong passwords."""
    since = refuse_after_failures(session, settings, name, address)
    user = repository.get_user_by_name(session, name)
    if not verify_password(user, password):
        repository.add_failed_login(session, user_name=name[:64], address=address[:64])
        raise NotAuthenticated("the user name or the password is wrong")
    assert user is not None
    if user.is_banned:
        raise Forbidden(banned_message(session, user))
    if passwords.check_needs_rehash(user.password_hash or ""):
        user.password_hash = passwords.hash(password)
    repository.forget_failed_logins(
        session, user_name=name[:64], address=address[:64], before=since
    )
    return user


def refuse_after_failures(
    session: Session, settings: Settings, name: str, address: str
) -> datetime:
    """TooManyRequests where this name from this address, or this address, failed to log in
    too often lately; else the start of the window the failures are counted over."""
    since = utcnow() - timedelta(seconds=settings.login_window_s)
    for_name_here, here = repository.count_failed_logins(
        session, user_name=name[:64], address=address[:64], since=since
    )
    if for_name_here >= settings.login_max_failures or (
        here >= settings.login_max_failures_per_address
    ):
        raise TooManyRequests(
            "too many failed log-ins from here; wait a few minutes before trying again"
        )
    return since


def verify_password(user: User | None, password: str) -> bool:
    stored = user.password_hash if user is not None else None
    try:
        return passwords.verify(stored or _DUMMY_HASH, password[:MAX_PASSWORD_LENGTH]) and (
            stored is not None
        )
    except (VerificationError, InvalidHashError):
        return False


def start_web_session(session: Session, user: User) -> str:
    """A new signed-in session for `user`; the key its cookie carries (only its hash is kept)."""
    key = secrets.token_urlsafe(32)
    session.add(WebSession(key_hash=hash_token(key), user_id=user.id))
    return key


def web_session_user(
    session: Session, user_id: object, key: object, max_age: timedelta
) -> User | None:
    """The user a session cookie signs in: its key names an open session of that user begun
    less than `max_age` ago, and the user is not banned; else nobody."""
    if not isinstance(user_id, int) or not isinstance(key, str):
        return None
    found = repository.get_open_web_session(session, hash_token(key), utcnow() - max_age)
    if found is None or found.user_id != user_id:
        return None
    user = repository.get_user(session, user_id)
    return None if user is None or user.is_banned else user


def leave_notice(session: Session, key: object, max_age: timedelta, notice: dict[str, Any]) -> bool:
    """Keep ``notice`` (JSON) for the next page this browser session opens, merged into one
    it has not seen yet; False when the key names no open session."""
    found = open_web_session(session, key, max_age)
    if found is None:
        return False
    held = found.notice or {}
    found.notice = {
        "texts": [*held.get("texts", []), *notice.get("texts", [])][-5:],
        "token": notice.get("token") or held.get("token"),
    }
    return True


def take_notice(session: Session, key: object, max_age: timedelta) -> dict[str, Any] | None:
    """The notice kept for this browser session, which it then no longer holds."""
    found = open_web_session(session, key, max_age)
    if found is None or not found.notice:
        return None
    notice, found.notice = dict(found.notice), None
    return notice


def open_web_session(session: Session, key: object, max_age: timedelta) -> WebSession | None:
    if not isinstance(key, str):
        return None
    return repository.get_open_web_session(session, hash_token(key), utcnow() - max_age)


def end_web_session(session: Session, key: object) -> None:
    if isinstance(key, str):
        repository.end_web_sessions(session, utcnow(), key_hash=hash_token(key))


def end_all_web_sessions(session: Session, user: User, *, but: object = None) -> None:
    """Log out everywhere: every browser signed in as `user` is signed out, but the one
    whose session key is ``but``, where given."""
    repository.end_web_sessions(
        session,
        utcnow(),
        user_id=user.id,
        except_key_hash=hash_token(but) if isinstance(but, str) else None,
    )


def issue_token(
    session: Session,
    user: User,
    label: str = "",
    *,
    scope_names: Iterable[str] | None = None,
    expires_days: int | None = None,
) -> str:
    """Create a token with these scopes (None: all its user may use) lasting this many days
    (None: until revoked) and return it; only its hash is kept, so this is the one chance to
    see it."""
    chosen = scopes.default_for(user) if scope_names is None else scopes.parse(scope_names, user)
    now = utcnow()
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(
        ApiToken(
            user_id=user.id,
            token_hash=hash_token(token),
            prefix=token[:10],
            label=label,
            scopes=" ".join(chosen),
            created_at=now,
            expires_at=scopes.expiry(expires_days, now),
        )
    )
    session.flush()
    return token


def list_tokens(session: Session, user: User) -> Sequence[ApiToken]:
    return repository.list_tokens(session, user.id)


def revoke_token(session: Session, user: User, token_id: int) -> None:
    token = existing(
        repository.get_token(session, user.id, token_id), f"no token {token_id} of yours"
    )
    if token.revoked_at is None:
        token.revoked_at = utcnow()


def authenticate(session: Session, token: str, scope: Scope = Scope.READ) -> User:
    """The token's user, where the token may be used for ``scope`` (server/users/scopes.py)."""
    record = repository.get_active_token(session, hash_token(token))
    if record is None:
        raise NotAuthenticated("the API token is unknown or revoked")
    now = utcnow()
    scopes.check(record, scope, now)
    if record.user.is_banned:
        raise Forbidden(banned_message(session, record.user))
    if record.last_used_at is None or record.last_used_at < now - TOKEN_USE_RESOLUTION:
        repository.record_token_use(record.id, now, older_than=now - TOKEN_USE_RESOLUTION)
    return record.user


def get_user_by_id(session: Session, user_id: int) -> User:
    return existing(repository.get_user(session, user_id), f"no user {user_id}")


def get_user(session: Session, name: str) -> User:
    return existing(repository.get_user_by_name(session, name), f"no user named {name!r}")


def list_users(session: Session) -> Sequence[User]:
    return repository.list_users(session)


USER_MODERATIONS = ("ban", "unban", "make_admin", "revoke_admin", "make_author", "revoke_author")
# The audit log's action of a user deleting their own account.
DELETED = "user.delete"


def banned_reason(session: Session, user: User) -> str | None:
    """Why the organizers banned the user, as the audit log keeps it (None: not banned, or
    banned before reasons were asked)."""
    return audit.reason_for(session, "user.ban", "user", user.name) if user.is_banned else None


def is_deleted(session: Session, user: User) -> bool:
    """Whether the user deleted their account (server/users/accounts.py): a deleted account
    is banned, and the audit log says why."""
    return user.is_banned and audit.happened(session, DELETED, "user", user.name)


def banned_message(session: Session, user: User) -> str:
    """What a banned user is told when refused: the organizers' reason, if they gave one."""
    reason = banned_reason(session, user)
    return "this account is banned" + (f": {reason}" if reason else "")


def moderate_user(
    session: Session, admin: User, user_id: int, action: str, reason: str | None = None
) -> User:
    """Ban, unban, make or drop admin, make or drop author, written to the audit log with the
    reason, which a ban requires (the user is told it when refused). An admin cannot ban or demote
    themselves, so a site never loses its last admin by a slip."""
    if action not in USER_MODERATIONS:
        raise BadRequest(f"unknown action {action!r}; choose one of {', '.join(USER_MODERATIONS)}")
    reason = audit.reason_of(action, reason, ("ban",))
    user = get_user_by_id(session, user_id)
    if is_deleted(session, user):
        raise Conflict(f"{user.name!r} deleted their account; it stays as it is")
    if user.id == admin.id and action in ("ban", "revoke_admin"):
        raise BadRequest("you cannot ban yourself or take away your own admin rights")
    if action == "ban":
        user.is_banned = True
        end_all_web_sessions(session, user)
    elif action == "unban":
        user.is_banned = False
    elif action == "make_admin":
        user.is_admin = True
    elif action == "revoke_admin":
        user.is_admin = False
    elif action == "make_author":
        user.is_author = True
    elif action == "revoke_author":
        user.is_author = False
    else:
        raise BadRequest(f"unknown action {action!r}")
    if action in ("ban", "unban"):
        session.flush()
        upkeep.user_changed(session, user)
    audit.record(
        session,
        admin,
        f"user.{action}",
        target_type="user",
        target=user.name,
        details={"reason": reason} if reason else None,
    )
    return user
