"""Routes for organizers: moderating a submission (hide, mark hacked, re-run), with the
reason its author reads."""

from __future__ import annotations

from fastapi import APIRouter

from server.deps import AdminUser, RowId, SessionDep
from server.errors import BadRequest, Conflict, Forbidden, NotAuthenticated, NotFound, responses
from server.submissions import service
from server.submissions.endpoints import submission_out
from server.submissions.schemas import Moderation, SubmissionOut

router = APIRouter(prefix="/api/v1/admin/submissions", tags=["admin"])


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
