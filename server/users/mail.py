"""Password-reset links by email, where the site can send mail (`KJ_SMTP_HOST` and the
other `KJ_SMTP_*` settings): a user who gave an address on their page asks on `/forgot`
with their name, and the link goes to that address only. The page answers the same whether
or not the name exists or has an address, so it tells no one which accounts there are; one
link is mailed per user every few minutes at most."""

from __future__ import annotations

import logging
import smtplib
from datetime import timedelta
from email.message import EmailMessage
from email.utils import parseaddr

from sqlalchemy.orm import Session

from server.errors import BadRequest
from server.models import PasswordReset, User, utcnow
from server.settings import Settings
from server.users import links, repository, resets

log = logging.getLogger(__name__)

# A user's next mailed link waits this long after the last one.
MAIL_EVERY = timedelta(minutes=5)
SMTP_TIMEOUT_S = 15.0
EMAIL_MAX = 254


def enabled(settings: Settings) -> bool:
    return bool(settings.smtp_host)


def checked_address(text: str) -> str | None:
    """An address a user gives for their resets (empty: none), or BadRequest."""
    address = text.strip()
    if not address:
        return None
    _, parsed = parseaddr(address)
    local, _, domain = parsed.rpartition("@")
    if parsed != address or len(address) > EMAIL_MAX or not local or "." not in domain:
        raise BadRequest(f"{address!r} is not an email address (name@example.org)")
    return address


def send_link(session: Session, settings: Settings, name: str, base_url: str) -> bool:
    """Mail a new link to the named user's address, if they gave one and none was mailed in
    the last few minutes; whether a mail was sent (the caller says the same either way)."""
    user = repository.get_user_by_name(session, name.strip()) if name.strip() else None
    if user is None or user.is_banned or not user.email:
        return False
    last = links.last_issued(session, PasswordReset, user, PasswordReset.issued_by_id.is_(None))
    if last is not None and utcnow() - last < MAIL_EVERY:
        return False
    key = resets.issue(session, None, user)
    link = links.url(settings, base_url, resets.PATH, key)
    try:
        deliver(settings, user, link)
    except (OSError, smtplib.SMTPException):
        log.exception("the password-reset mail for %s could not be sent", user.name)
        session.rollback()  # no link was sent: none should work
        return False
    return True


def deliver(settings: Settings, user: User, link: str) -> None:
    hours = int(resets.LIFETIME.total_seconds() // 3600)
    send_to(
        settings,
        user,
        "Your KernelJudge password",
        f"Someone asked to set a new password for {user.name}.\n\n"
        f"This link sets one; it works once, for {hours} hours:\n\n{link}\n\n"
        "If you did not ask, ignore this mail: your password stays as it is.\n",
    )


def send_to(settings: Settings, user: User, subject: str, text: str) -> None:
    """Mail `text` to the user's address, from the site's."""
    message = EmailMessage()
    message["From"] = settings.smtp_from or f"kerneljudge@{settings.smtp_host}"
    message["To"] = str(user.email)
    message["Subject"] = subject
    message.set_content(text)
    send(settings, message)


def send(settings: Settings, message: EmailMessage) -> None:
    with smtplib.SMTP(settings.smtp_host, settings.smtp_port, timeout=SMTP_TIMEOUT_S) as smtp:
        if settings.smtp_starttls:
            smtp.starttls()
        if settings.smtp_username:
            smtp.login(settings.smtp_username, settings.smtp_password.get_secret_value())
        smtp.send_message(message)
