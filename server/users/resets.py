"""Password resets without email: an organizer makes a one-time link for a user (the admin
page, or `kerneljudge user reset-link NAME`) and hands it over; opening it sets a new
password, once, within a day. Setting it signs the user out of every browser. Only the
link's SHA-256 is stored, and a newer link for the same user ends the older one."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session

from server.audit import service as audit
from server.errors import BadRequest
from server.models import PasswordReset, User, utcnow
from server.users import links
from server.users import service as users

LIFETIME = timedelta(hours=24)
PATH = "/reset/"
GONE = "this link was used, replaced by a newer one or has run out; ask an organizer for a new one"


def issue(session: Session, organizer: User | None, user: User) -> str:
    """A new one-time key for `user` (its link is ``PATH + key``), written to the audit log
    as ``user.reset_link``; any earlier link of theirs stops working."""
    key, reset = links.issue(
        session,
        PasswordReset,
        user,
        LIFETIME,
        issued_by_id=organizer.id if organizer is not None else None,
    )
    audit.record(
        session,
        organizer,
        "user.reset_link",
        target_type="user",
        target=user.name,
        details={"expires_at": reset.expires_at.isoformat()},
    )
    session.flush()
    return key


def open_reset(session: Session, key: str) -> PasswordReset | None:
    """The link's reset while it still works, else None."""
    return links.working(session, PasswordReset, key)


def redeem(session: Session, key: str, password: str) -> User:
    """Set the password through a working link, which ends it; the user is signed out
    everywhere (a browser someone else holds no longer opens anything)."""
    reset = open_reset(session, key)
    if reset is None:
        raise BadRequest(GONE)
    user = reset.user
    users.set_password(user, password)  # a refused password leaves the link working
    reset.ended_at = utcnow()
    users.end_all_web_sessions(session, user)
    audit.record(session, user, "user.password_reset", target_type="user", target=user.name)
    session.flush()
    return user
