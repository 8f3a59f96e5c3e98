"""What tests build by hand instead of through the API: a submission row as the service
would have written it, and a problem archive as an organizer uploads it."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import Session

from server.models import Problem, Submission, User


def submission_row(
    user_id: int, problem_id: int, *, problem_version: int = 1, mode: str, **fields: Any
) -> Submission:
    """A CPU submission of placeholder code (its hash all zeros, no flags) unless `fields`
    say otherwise; not yet added to a session."""
    defaults: dict[str, Any] = {"code": "x", "code_sha256": "0" * 64, "gpu_type": "cpu"}
    return Submission(
        user_id=user_id,
        problem_id=problem_id,
        problem_version=problem_version,
        mode=mode,
        **{**defaults, "flags": [], **fields},
    )


def added_submission(
    db: Session, user: User, problem: Problem, *, mode: str, **fields: Any
) -> Submission:
    """A submission of `user` against `problem`'s current version, as `submission_row` makes
    it, added to `db` and flushed (it has its id)."""
    submission = submission_row(
        user.id, problem.id, problem_version=problem.version, mode=mode, **fields
    )
    db.add(submission)
    db.flush()
    return submission


def zip_of(entries: Mapping[str, str | bytes]) -> bytes:
    """A zip archive holding each of `entries`' texts under its name."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return buffer.getvalue()
