"""A user's own account: changing their password and deleting the account, each confirmed
with the current password.

A wrong password counts as a failed log-in under the same limits (the caller commits it
before answering), so a stolen session or token does not let anyone guess it.

Deleting keeps the user's row, so their submissions, the audit log and every competition's
history keep their foreign keys: the account is banned for good (every leaderboard,
standing and rejudge already leaves banned users out; the audit log's ``user.delete`` tells
it from a ban, and no one can lift it), its password, email, admin right, tokens, web
sessions and reset links go, and its name stays taken. The last admin cannot delete their
account."""

from __future__ import annotations

from sqlalchemy.orm import Session

from server.audit import service as audit
from server.errors import Conflict, Forbidden
from server.leaderboards import upkeep
from server.models import User, utcnow
from server.settings import Settings
from server.users import repository
from server.users import service as users

WRONG_PASSWORD = "the current password is wrong"


def confirm_password(
    session: Session, settings: Settings, user: User, password: str, address: str
) -> None:
    """Forbidden unless ``password`` is the user's; a wrong one is recorded as a failed
    log-in (TooManyRequests once there were too many)."""
    users.refuse_after_failures(session, settings, user.name, address)
    if not users.verify_password(user, password):
        repository.add_failed_login(session, user_name=user.name[:64], address=address[:64])
        raise Forbidden(WRONG_PASSWORD)


def change_password(
    session: Session,
    settings: Settings,
    user: User,
    current: str,
    new: str,
    address: str,
    *,
    keep_web_session: object = None,
) -> None:
    """Set a new password (the sign-up rules hold) and sign out every other browser of the
    user: all but the web session keyed ``keep_web_session``. Tokens keep working.
    Audited as ``user.password_change``."""
    confirm_password(session, settings, user, current, address)
    users.set_password(user, new)
    users.end_all_web_sessions(session, user, but=keep_web_session)
    audit.record(session, user, "user.password_change", target_type="user", target=user.name)


def delete_account(
    session: Session, settings: Settings, user: User, password: str, address: str
) -> None:
    """Delete the user's account as the module says; audited as ``user.delete``."""
    confirm_password(session, settings, user, password, address)
    if user.is_admin and repository.count_other_admins(session, user.id) == 0:
        raise Conflict("you are the last admin: make another user an admin first")
    now = utcnow()
    user.is_banned = True
    user.is_admin = False
    user.password_hash = None
    user.email = None
    repository.revoke_tokens(session, user.id, now)
    repository.end_password_resets(session, user.id, now)
    users.end_all_web_sessions(session, user)
    upkeep.user_changed(session, user)
    audit.record(session, user, users.DELETED, target_type="user", target=user.name)
