"""Routes for a user's own account (a new password, deleting it) and for organizers:
moderating a user (ban, unban, make or revoke admin), with the reason a banned user is told."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from server.deps import AdminUser, CurrentUser, SessionDep, SettingsDep, client_address
from server.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    NotAuthenticated,
    NotFound,
    TooManyRequests,
    responses,
)
from server.users import accounts, service

router = APIRouter(prefix="/api/v1/admin/users", tags=["admin"])
account_router = APIRouter(prefix="/api/v1/users/me", tags=["account"])


class PasswordChange(BaseModel):
    current_password: str = Field(max_length=4096)
    new_password: str = Field(
        max_length=4096, description="the sign-up rules hold: 8 to 1024 characters"
    )


class AccountDeletion(BaseModel):
    password: str = Field(max_length=4096, description="your current password, to confirm")


@contextmanager
def failed_log_in_kept(session: Session) -> Iterator[None]:
    """A wrong password counts as a failed log-in, though the request fails: its record is
    committed before the refusal goes out (the request's own session rolls back on error)."""
    try:
        yield
    except (Forbidden, TooManyRequests):
        session.commit()
        raise


@account_router.post(
    "/password",
    status_code=204,
    responses=responses(BadRequest, NotAuthenticated, Forbidden, TooManyRequests),
    summary="Change your password (your current one confirms it); your browsers are signed out",
)
def change_password(
    body: PasswordChange,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    user: CurrentUser,
) -> Response:
    with failed_log_in_kept(session):
        accounts.change_password(
            session,
            settings,
            user,
            body.current_password,
            body.new_password,
            client_address(request),
        )
    return Response(status_code=204)


@account_router.delete(
    "",
    status_code=204,
    responses=responses(NotAuthenticated, Forbidden, Conflict, TooManyRequests),
    summary="Delete your account (your password confirms it): it leaves every board, its "
    "tokens stop working, its name stays taken",
)
def delete_account(
    body: AccountDeletion,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    user: CurrentUser,
) -> Response:
    with failed_log_in_kept(session):
        accounts.delete_account(session, settings, user, body.password, client_address(request))
    return Response(status_code=204)


class UserModeration(BaseModel):
    action: str = Field(
        description="'ban', 'unban', 'make_admin', 'revoke_admin', 'make_author' (the user may "
        "add problems of its own, private to it) or 'revoke_author'"
    )
    reason: str | None = Field(
        default=None,
        description="why; required to ban (the user is told it whenever they are refused), "
        "kept in the audit log",
    )


class UserOut(BaseModel):
    name: str
    is_admin: bool
    is_author: bool = Field(description="may add problems of its own, private to it")
    is_banned: bool
    banned_reason: str | None


@router.post(
    "/{name}/moderation",
    response_model=UserOut,
    responses=responses(BadRequest, NotAuthenticated, Forbidden, NotFound),
    summary="Ban, unban, make or revoke admin, make or revoke author (audited with the reason, "
    "which a ban requires)",
)
def moderate_user(
    name: str, moderation: UserModeration, session: SessionDep, admin: AdminUser
) -> UserOut:
    user = service.get_user(session, name)
    service.moderate_user(session, admin, user.id, moderation.action, moderation.reason)
    return UserOut(
        name=user.name,
        is_admin=user.is_admin,
        is_author=user.is_author,
        is_banned=user.is_banned,
        banned_reason=service.banned_reason(session, user),
    )
