"""Routes for organizers: everyone's submissions, narrowed by problem, user, status and
mode; moderating one (hide, mark hacked, re-run), with the reason its author reads."""

from __future__ import annotations

from fastapi import APIRouter, Query

from server.deps import AdminUser, RowId, SessionDep
from server.errors import BadRequest, Conflict, Forbidden, NotAuthenticated, NotFound, responses
from server.submissions import service
from server.submissions.endpoints import (
    Before,
    Limit,
    ModeFilter,
    StatusFilter,
    next_before,
    submission_out,
    summary_fields,
)
from server.submissions.schemas import (
    AdminSubmissionList,
    AdminSubmissionSummary,
    Moderation,
    SubmissionOut,
)

router = APIRouter(prefix="/api/v1/admin/submissions", tags=["admin"])


@router.get(
    "",
    response_model=AdminSubmissionList,
    responses=responses(BadRequest, NotAuthenticated, Forbidden, NotFound),
    summary="Everyone's submissions, newest first, narrowed by problem, user, status and mode",
)
def list_submissions(
    session: SessionDep,
    admin: AdminUser,
    problem: str | None = Query(default=None, max_length=100, description="a problem's name"),
    user: str | None = Query(default=None, max_length=64, description="a user's name"),
    status: StatusFilter = None,
    mode: ModeFilter = None,
    before: Before = None,
    limit: Limit = 50,
) -> AdminSubmissionList:
    found = service.list_recent(
        session,
        limit,
        service.SubmissionFilter.of(problem, user, status, mode),
        before=before,
    )
    return AdminSubmissionList(
        submissions=[
            AdminSubmissionSummary(
                **summary_fields(s),
                user=s.user.name,
                hidden=s.is_hidden,
                hacked=s.is_hacked,
                flags=list(s.flags),
            )
            for s in found
        ],
        next_before=next_before(found, limit),
    )


@router.post(
    "/{submission_id}/moderation",
    response_model=SubmissionOut,
    responses=responses(BadRequest, NotAuthenticated, Forbidden, NotFound, Conflict),
    summary="Hide, unhide, mark hacked, unmark or re-run a submission (audited with the "
    "reason, which hiding and marking hacked require and its author reads)",
)
def moderate_submission(
    submission_id: RowId, moderation: Moderation, session: SessionDep, admin: AdminUser
) -> SubmissionOut:
    submission = service.moderate(
        session, submission_id, moderation.action, admin, moderation.reason
    )
    return submission_out(session, submission, admin)
