"""Routes: submit a kernel, read a submission's status and report."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from pydantic import ValidationError
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException

from server.deps import CurrentUser, RowId, SessionDep, SettingsDep
from server.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    NotAuthenticated,
    NotFound,
    PayloadTooLarge,
    TooManyRequests,
    responses,
)
from server.models import Submission
from server.settings import Settings
from server.submissions import repository, service
from server.submissions.schemas import SubmissionAccepted, SubmissionCreate, SubmissionOut

router = APIRouter(prefix="/api/v1/submissions", tags=["submissions"])

SUBMISSION_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": SubmissionCreate.model_json_schema()},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["problem", "file"],
                    "properties": {
                        "problem": {"type": "string"},
                        "file": {"type": "string", "format": "binary"},
                        "mode": {"type": "string", "enum": list(service.MODES)},
                        "gpu": {"type": "string"},
                    },
                }
            },
        },
    }
}


async def read_submission_request(request: Request, settings: Settings) -> SubmissionCreate:
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        return await read_multipart(request, settings)
    if not content_type.startswith("application/json"):
        raise BadRequest("send JSON {problem, code, mode, gpu?} or multipart form data with a file")
    try:
        body = json.loads(await request.body())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"the body is not valid JSON: {exc}") from exc
    return validate_body(body)


async def read_multipart(request: Request, settings: Settings) -> SubmissionCreate:
    limit = settings.max_code_bytes
    try:
        form = await request.form(max_files=1, max_fields=10, max_part_size=limit + 1)
    except StarletteHTTPException as exc:  # Starlette's answer to a broken multipart body
        raise BadRequest(f"the multipart body could not be read: {exc.detail}") from exc
    try:
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise BadRequest("multipart submissions need a 'file' field holding the code")
        code = service.decode_code(await upload.read(limit + 1), settings)
        fields: dict[str, Any] = {"code": code}
        for key in ("problem", "mode", "gpu"):
            value = form.get(key)
            if isinstance(value, str) and value:
                fields[key] = value
    finally:
        await form.close()  # the spooled upload files
    return validate_body(fields)


def validate_body(body: object) -> SubmissionCreate:
    try:
        return SubmissionCreate.model_validate(body)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'body'}: {error['msg']}"
            for error in exc.errors()
        )
        raise BadRequest(problems) from exc


@router.post(
    "",
    status_code=202,
    response_model=SubmissionAccepted,
    openapi_extra=SUBMISSION_BODY,
    responses=responses(
        BadRequest,
        PayloadTooLarge,
        NotAuthenticated,
        Forbidden,
        NotFound,
        Conflict,
        TooManyRequests,
    ),
    summary="Submit a kernel for grading",
)
async def create_submission(
    request: Request, session: SessionDep, settings: SettingsDep, user: CurrentUser
) -> SubmissionAccepted:
    body = await read_submission_request(request, settings)
    submission = service.create_submission(
        session,
        settings,
        user,
        problem_name=body.problem,
        code=body.code,
        mode=body.mode,
        gpu=body.gpu,
    )
    # The row must be committed before a worker can be told about it.
    session.commit()
    service.enqueue(submission, settings)
    return SubmissionAccepted(id=submission.id, status="queued")


@router.get(
    "/{submission_id}",
    response_model=SubmissionOut,
    responses=responses(NotAuthenticated, NotFound),
    summary="A submission's status and report",
)
def read_submission(submission_id: RowId, session: SessionDep, user: CurrentUser) -> SubmissionOut:
    submission = service.get_submission_for(session, submission_id, user)
    return submission_out(session, submission)


def submission_out(session: SessionDep, submission: Submission) -> SubmissionOut:
    report = submission.report or {}
    return SubmissionOut(
        id=submission.id,
        problem=submission.problem.name,
        problem_version=submission.problem_version,
        user=submission.user.name,
        mode=submission.mode,
        gpu=submission.gpu_type,
        status=submission.status,
        score=submission.score,
        message=submission.message,
        flags=submission.flags,
        hidden=submission.is_hidden,
        hacked=submission.is_hacked,
        cases=list(report.get("cases", [])),
        queue_position=(
            repository.queue_position(session, submission)
            if submission.status == "queued"
            else None
        ),
        worker=submission.worker,
        device_name=report.get("device_name"),
        device_peaks=report.get("device_peaks"),
        stdout=str(report.get("stdout", "")),
        stderr=str(report.get("stderr", "")),
        code_sha256=submission.code_sha256,
        code=submission.code,
        created_at=submission.created_at,
        started_at=submission.started_at,
        finished_at=submission.finished_at,
    )
