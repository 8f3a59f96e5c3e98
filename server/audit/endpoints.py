"""Routes: the audit log of admin actions, for admins."""

from __future__ import annotations

from fastapi import APIRouter, Query

from server.audit import service
from server.audit.schemas import AuditEntryOut, AuditLog
from server.deps import AdminUser, SessionDep
from server.errors import BadRequest, Forbidden, NotAuthenticated, responses

router = APIRouter(prefix="/api/v1/admin", tags=["admin"])


@router.get(
    "/audit",
    response_model=AuditLog,
    responses=responses(BadRequest, NotAuthenticated, Forbidden),
    summary="Admin actions, newest first",
)
def read_audit_log(
    session: SessionDep,
    admin: AdminUser,
    page: int = Query(default=1, ge=1, le=service.MAX_PAGE),
    per_page: int = Query(default=50, ge=1, le=service.MAX_PER_PAGE),
) -> AuditLog:
    found = service.list_page(session, page, per_page)
    return AuditLog(
        entries=[AuditEntryOut.model_validate(entry) for entry in found.entries],
        page=found.page,
        per_page=found.per_page,
        total=found.total,
    )
