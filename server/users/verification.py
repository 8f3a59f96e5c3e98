"""Verified addresses, for a site whose sign-up asks for one (`KJ_SIGNUP=verified`): a new
account is created unverified and a one-time link is mailed to its address (as password-reset
links are, server/users/mail.py); following it within a day verifies the account, which may
then submit. The user can have a new link mailed from their page every few minutes. Only the
link's SHA-256 is kept, and a newer link ends the older ones."""

from __future__ import annotations

import logging
import smtplib
from datetime import timedelta

from sqlalchemy.orm import Session

from server.audit import service as audit
from server.errors import BadRequest, Forbidden, TooManyRequests
from server.models import EmailVerification, User, utcnow
from server.settings import Settings
from server.users import links, mail

log = logging.getLogger(__name__)

LIFETIME = timedelta(hours=24)
PATH = "/verify/"
GONE = (
    "this link was used, replaced by a newer one or has run out; "
    "have a new one mailed from your page"
)
UNVERIFIED = (
    "verify your email address before submitting: follow the link mailed to you "
    "(your page can mail a new one)"
)


def refuse_unverified(user: User) -> None:
    """Forbidden while the user's address is not verified."""
    if not user.is_verified:
        raise Forbidden(UNVERIFIED)


def checked_address(settings: Settings, text: str) -> str:
    """The address a new account signs up with, in one of the allowed domains where the
    site names them; else BadRequest."""
    address = mail.checked_address(text)
    if address is None:
        raise BadRequest("sign-up on this site needs your email address, to verify it")
    domain = address.rpartition("@")[2].lower()
    allowed = settings.signup_email_domains
    if allowed and not any(domain == d or domain.endswith("." + d) for d in allowed):
        raise BadRequest(f"sign-up takes addresses at {', '.join(allowed)} only")
    return address


def issue(session: Session, user: User) -> str:
    """A new one-time key for the user's address (its link is ``PATH + key``); any earlier
    link of theirs stops working."""
    assert user.email is not None
    key, _ = links.issue(session, EmailVerification, user, LIFETIME, email=user.email)
    session.flush()
    return key


def send_link(session: Session, settings: Settings, user: User, base_url: str) -> None:
    """Mail a new link to the user's address; TooManyRequests where one went in the last
    few minutes, BadRequest where the mail could not be sent (no link is then made)."""
    if user.is_verified or not user.email:
        raise BadRequest("this account has no address waiting to be verified")
    last = links.last_issued(session, EmailVerification, user)
    if last is not None and utcnow() - last < mail.MAIL_EVERY:
        raise TooManyRequests("a link was mailed a moment ago; wait a few minutes for it")
    key = issue(session, user)
    link = links.url(settings, base_url, PATH, key)
    try:
        deliver(settings, user, link)
    except (OSError, smtplib.SMTPException) as exc:
        log.exception("the verification mail for %s could not be sent", user.name)
        raise BadRequest("the mail could not be sent; try again in a while") from exc


def verify(session: Session, key: str) -> User | None:
    """Verify the account through a working link, which ends it; None where the link no
    longer works (or the user changed their address since it was mailed)."""
    found = links.working(session, EmailVerification, key)
    if found is None or found.user.email != found.email:
        return None
    user = found.user
    found.ended_at = utcnow()
    user.is_verified = True
    audit.record(
        session, user, "user.verify", target_type="user", target=user.name,
        details={"email": found.email},
    )  # fmt: skip
    session.flush()
    return user


def deliver(settings: Settings, user: User, link: str) -> None:
    hours = int(LIFETIME.total_seconds() // 3600)
    mail.send_to(
        settings,
        user,
        "Verify your KernelJudge account",
        f"Someone signed up as {user.name} with this address.\n\n"
        f"This link verifies it, so the account may submit; it works once, for {hours} "
        f"hours:\n\n{link}\n\nIf it was not you, ignore this mail.\n",
    )
