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
    """Why a sign-up was refused: each reason by the form's field it is about ('form':
    none), all of them at once where they can be told apart."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(errors.values()))
        self.errors = errors


def sign_up(
    session: Session,
    settings: Settings,
    *,
    name: str,
    password: str,
    password_again: str,
    invite_code: str = "",
    email: str = "",
    base_url: str,
) -> User:
    """The new account, in this transaction, which the caller rolls back on SignUpRefused
    (an invite's use or a link is never kept for a refused sign-up). What is wrong with the
    name, the passwords and the address is told at once; the invite code's use is taken
    only once the rest is right."""
    way = settings.signup_mode
    if way == "closed":
        raise SignUpRefused({"form": CLOSED})
    errors: dict[str, str] = {}
    address = None
    if way == "verified":
        try:
            address = verification.checked_address(settings, email)
        except BadRequest as exc:
            errors["email"] = exc.detail
    try:
        users.check_new_name(session, name)
    except KernelJudgeError as exc:
        errors["name"] = exc.detail
    try:
        users.check_password(password)
    except KernelJudgeError as exc:
        errors["password"] = exc.detail
    if password != password_again:
        errors["password_again"] = "the two passwords differ"
    if errors:
        raise SignUpRefused(errors)
    user = users.create_user(session, name, password=password)
    if way == "invite":
        try:
            user.invite_id = invites.take_use(session, invite_code).id
        except BadRequest as exc:
            raise SignUpRefused({"invite": exc.detail}) from exc
    if address is not None:
        user.email = address
        user.is_verified = False
        session.flush()
        try:
            verification.send_link(session, settings, user, base_url)
        except KernelJudgeError as exc:
            raise SignUpRefused({"email": exc.detail}) from exc
    return user
