"""A grading's files beside its report (profile mode's Nsight Compute report): taken from a
worker once they pass its checks, kept once per submission and name, and read by whoever
may read the submission's code."""

from __future__ import annotations

import base64
import binascii
import logging

from sqlalchemy.orm import Session

from grader.report import PROFILE_FILE, TERMINAL_STATUSES, Mode
from server import downloads
from server.errors import NotFound
from server.models import Submission, SubmissionFile, User
from server.submissions import reports, repository
from server.submissions.service import can_see_code

log = logging.getLogger(__name__)

MEDIA_TYPE = "application/octet-stream"
# The files a grading may hand over, by name; a worker host is trusted less than the
# service, so it names none of its own.
KEPT = frozenset({PROFILE_FILE})
WHY_NONE = "only a profile-mode grading on a GPU worker with Nsight Compute makes one"


class Refused(ValueError):
    """A file a worker sent that the service does not keep; the message says why."""


def decode(name: str, content_b64: str, limit: int) -> bytes:
    """A file's bytes as a worker sent them, once its name and size are ones the service
    keeps. The size is bounded before decoding, so an oversized file costs no copy."""
    if name not in KEPT:
        raise Refused(f"a file named {name[:100]!r}; a grading's files: {', '.join(KEPT)}")
    if len(content_b64) > 4 * ((limit + 2) // 3):
        raise Refused(f"{name}: over {limit} bytes")
    try:
        content = base64.b64decode(content_b64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise Refused(f"{name}: not base64 ({exc})") from exc
    if len(content) > limit:
        raise Refused(f"{name}: {len(content)} bytes, over {limit}")
    return content


def record(session: Session, submission_id: int, name: str, content: bytes) -> bool:
    """Keep a profile grading's file; False for a submission that is gone or no profile.
    Until the report is recorded a later grading's file replaces an earlier one (the job
    was graded again); after it, the file is only stored if none is there, so a job graded
    twice keeps the file of the report recorded, and one that arrives after its report
    (another results worker took the report first) is still kept."""
    submission = repository.get_submission(session, submission_id, for_update=True)
    if submission is None or submission.mode != Mode.PROFILE:
        log.warning(
            "%s for submission %s dropped: %s",
            name,
            submission_id,
            "no such submission" if submission is None else f"a {submission.mode}-mode run",
        )
        return False
    replace = submission.status not in TERMINAL_STATUSES
    repository.put_file(session, submission_id, name, content, replace=replace)
    return True


def readable_file(
    session: Session, submission_id: int, name: str, viewer: User | None
) -> SubmissionFile:
    """A submission's file for someone who may read its code; anyone else is told what an
    unknown submission tells them, so they learn nothing of its existence."""
    submission = repository.get_submission(session, submission_id)
    if submission is None or not can_see_code(session, viewer, submission):
        raise NotFound(f"no submission {submission_id}")
    found = repository.get_file(session, submission_id, name) if name in KEPT else None
    if found is None:
        raise NotFound(missing(submission, name))
    return found


def missing(submission: Submission, name: str) -> str:
    """Why a submission has no such file, in words its author can act on."""
    if name not in KEPT:
        return f"no file {name!r}: a submission's only file is {PROFILE_FILE!r}"
    head = f"submission {submission.id} has no Nsight Compute report ({name})"
    report = reports.stored(submission)
    if report is None:
        return f"{head}; {WHY_NONE}"
    if name in report.files:
        return (
            f"{head} yet: its worker made one that has not arrived, or was refused (the "
            "results step's log says why)"
        )
    for case in report.cases:
        for profile in case.profiles:
            if profile.why_not_ncu:
                return f"{head}: {profile.why_not_ncu}"
    return f"{head}; {WHY_NONE}"


def download_headers(found: SubmissionFile) -> dict[str, str]:
    """Saved under a name that says whose it is: a name is one of KEPT, safe in a header."""
    return downloads.disposition(f"submission-{found.submission_id}-{found.name}")
