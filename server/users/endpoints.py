"""Routes for organizers: moderating a user (ban, unban, make or revoke admin), with the
reason a banned user is told."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from server.deps import AdminUser, SessionDep
from server.errors import BadRequest, Forbidden, NotAuthenticated, NotFound, responses
from server.users import service

router = APIRouter(prefix="/api/v1/admin/users", tags=["admin"])


class UserModeration(BaseModel):
    action: str = Field(description="'ban', 'unban', 'make_admin' or 'revoke_admin'")
    reason: str | None = Field(
        default=None,
        description="why; required to ban (the user is told it whenever they are refused), "
        "kept in the audit log",
    )


class UserOut(BaseModel):
    name: str
    is_admin: bool
    is_banned: bool
    banned_reason: str | None


@router.post(
    "/{name}/moderation",
    response_model=UserOut,
    responses=responses(BadRequest, NotAuthenticated, Forbidden, NotFound),
    summary="Ban, unban, make admin or revoke admin (audited with the reason, which a ban "
    "requires)",
)
def moderate_user(
    name: str, moderation: UserModeration, session: SessionDep, admin: AdminUser
) -> UserOut:
    user = service.get_user(session, name)
    service.moderate_user(session, admin, user.id, moderation.action, moderation.reason)
    return UserOut(
        name=user.name,
        is_admin=user.is_admin,
        is_banned=user.is_banned,
        banned_reason=service.banned_reason(session, user),
    )
