"""Signing up on the site's own form, as the organizers chose (`KJ_SIGNUP`): ``open`` to
anyone, ``invite`` with an organizer's code (server/users/invites.py), ``verified`` with an
email address proved by a mailed link (server/users/verification.py), or ``closed``, where
only organizers add accounts (`kerneljudge user add`)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from server.errors import BadRequest, KernelJudgeError
from server.models import User
from server.settings import Settings
from server.users import invites, verification
from server.users import service as users

CLOSED = "sign-up is closed on this site; ask the organizers for an account"


class SignUpRefused(BadRequest):
    """Why a sign-up was refused, and the form's field it is about ('form': none)."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(detail)
        self.field = field


def sign_up(
    session: Session,
    settings: Settings,
    *,
    name: str,
    password: str,
    invite_code: str = "",
    email: str = "",
    base_url: str,
) -> User:
    """The new account, in this transaction, which the caller rolls back on SignUpRefused
    (an invite's use or a link is never kept for a refused sign-up)."""
    mode = settings.signup_mode
    if mode == "closed":
        raise SignUpRefused("form", CLOSED)
    address = None
    if mode == "verified":
        try:
            address = verification.checked_address(settings, email)
        except BadRequest as exc:
            raise SignUpRefused("email", exc.detail) from exc
    try:
        user = users.create_user(session, name, password=password)
    except KernelJudgeError as exc:
        raise SignUpRefused("password" if "password" in exc.detail else "name", exc.detail) from exc
    if mode == "invite":
        try:
            user.invite_id = invites.take_use(session, invite_code).id
        except BadRequest as exc:
            raise SignUpRefused("invite", exc.detail) from exc
    if address is not None:
        user.email = address
        user.is_verified = False
        session.flush()
        try:
            verification.send_link(session, settings, user, base_url)
        except KernelJudgeError as exc:
            raise SignUpRefused("email", exc.detail) from exc
    return user
