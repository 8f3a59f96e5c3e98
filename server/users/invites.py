"""Invite codes, for a site whose sign-up asks for one (`KJ_SIGNUP=invite`): organizers make
them (admin page or `kerneljudge invite create`), each good for a number of sign-ups until it
expires or is revoked. Taking a use is one conditional UPDATE, so two people racing for a
code's last use cannot both have it."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from server.audit import service as audit
from server.errors import BadRequest, NotFound
from server.models import Invite, User, utcnow

# Letters and digits that read alike in any font are left out: codes are typed by hand.
ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_GROUPS = 3
MAX_USES = 100_000
MAX_DAYS = 3650
MAX_NOTE_CHARS = 200


def new_code() -> str:
    """Like ``K7QM-3HVT-WX2P``: 60 random bits."""
    return "-".join("".join(secrets.choice(ALPHABET) for _ in range(4)) for _ in range(CODE_GROUPS))


def normal(code: str) -> str:
    """A code as typed, in the form it is kept: capitals, no spaces."""
    return "".join(code.split()).upper()[:32]


def create(
    session: Session,
    organizer: User | None,
    *,
    uses: int = 1,
    expires_days: int | None = None,
    note: str = "",
) -> Invite:
    """A new code for ``uses`` sign-ups, lasting ``expires_days`` days (None: until revoked),
    written to the audit log as ``invite.create``."""
    if not 1 <= uses <= MAX_USES:
        raise BadRequest(f"an invite serves 1 to {MAX_USES} sign-ups")
    if expires_days is not None and not 1 <= expires_days <= MAX_DAYS:
        raise BadRequest(f"an invite lasts 1 to {MAX_DAYS} days")
    note = note.strip()
    if len(note) > MAX_NOTE_CHARS:
        raise BadRequest(f"the note is over {MAX_NOTE_CHARS} characters")
    now = utcnow()
    invite = Invite(
        code=new_code(),
        note=note,
        max_uses=uses,
        uses=0,
        created_at=now,
        expires_at=now + timedelta(days=expires_days) if expires_days is not None else None,
    )
    session.add(invite)
    session.flush()
    audit.record(
        session,
        organizer,
        "invite.create",
        target_type="invite",
        target=invite.code,
        details={"uses": uses, "expires_days": expires_days, "note": note},
    )
    return invite


def list_invites(session: Session) -> Sequence[Invite]:
    """Every code, newest first."""
    return session.scalars(select(Invite).order_by(Invite.id.desc())).all()


def get(session: Session, code: str) -> Invite:
    invite = session.scalar(select(Invite).where(Invite.code == normal(code)))
    if invite is None:
        raise NotFound(f"no invite code {code!r}")
    return invite


def revoke(session: Session, organizer: User | None, code: str) -> Invite:
    """The code no longer lets anyone sign up (accounts made with it stay), written to the
    audit log as ``invite.revoke``."""
    invite = get(session, code)
    if invite.revoked_at is None:
        invite.revoked_at = utcnow()
        audit.record(session, organizer, "invite.revoke", target_type="invite", target=invite.code)
    return invite


def state(invite: Invite) -> str:
    """'usable', 'used up', 'expired' or 'revoked'."""
    if invite.revoked_at is not None:
        return "revoked"
    if invite.expires_at is not None and invite.expires_at <= utcnow():
        return "expired"
    if invite.uses >= invite.max_uses:
        return "used up"
    return "usable"


def take_use(session: Session, code: str) -> Invite:
    """One use of the code, for a sign-up in this transaction; a BadRequest saying why where
    it is unknown, used up, expired or revoked. The UPDATE only counts the use while one is
    left, so of two sign-ups racing for the last use exactly one has it."""
    if not code.strip():
        raise BadRequest("sign-up on this site needs an invite code; ask the organizers")
    now = utcnow()
    taken = session.execute(
        update(Invite)
        .where(
            Invite.code == normal(code),
            Invite.revoked_at.is_(None),
            or_(Invite.expires_at.is_(None), Invite.expires_at > now),
            Invite.uses < Invite.max_uses,
        )
        .values(uses=Invite.uses + 1)
        .execution_options(synchronize_session=False)
    )
    invite = session.scalar(
        select(Invite).where(Invite.code == normal(code)).execution_options(populate_existing=True)
    )
    if invite is None:
        raise BadRequest("no such invite code; check it, or ask the organizers for one")
    if taken.rowcount != 1:  # type: ignore[attr-defined]
        why = state(invite)
        raise BadRequest(
            f"this invite code is {'used up' if why == 'usable' else why}; "
            "ask the organizers for a new one"
        )
    return invite
