"""Routes: submit a kernel, read a submission's status and report, download its files."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import ValidationError
from sqlalchemy.orm import Session
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException

from grader.report import flag_codes
from server import downloads, turns
from server.deps import (
    MAX_ROW_ID,
    CurrentUser,
    OptionalUser,
    RowId,
    SessionDep,
    SettingsDep,
    TokenCredentials,
    as_token_user,
)
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
from server.leaderboards import standing
from server.leaderboards.schemas import StandingOut
from server.models import Submission, User
from server.problems import baselines
from server.problems.schemas import SpeedupOut
from server.settings import Settings, get_settings
from server.submissions import disclosure, files, reports, service
from server.submissions.schemas import (
    EarlierVerdict,
    FingerprintOut,
    ProgressOut,
    SubmissionAccepted,
    SubmissionCreate,
    SubmissionList,
    SubmissionOut,
    SubmissionSummary,
)
from server.users.scopes import Scope

# Keyset pagination of submission lists, newest first.
Before = Annotated[int | None, Query(ge=1, le=MAX_ROW_ID, description="older than this id")]
Limit = Annotated[int, Query(ge=1, le=200)]
StatusFilter = Annotated[
    str | None,
    Query(max_length=16, description="queued, running, passed, failed, error, timeout or rejected"),
]
ModeFilter = Annotated[
    str | None, Query(max_length=16, description="test, benchmark, leaderboard or profile")
]

T = TypeVar("T")

router = APIRouter(prefix="/api/v1/submissions", tags=["submissions"])


def body_schema(model: type[SubmissionCreate]) -> dict[str, Any]:
    """The model's JSON schema for a body declared by hand, outside FastAPI's components:
    its nested models (the mode's enum) are referred to there, where the response models
    have put them, not in a `$defs` of its own that the document would not hold."""
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    schema.pop("$defs", None)
    return schema


SUBMISSION_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": body_schema(SubmissionCreate)},
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


async def read_submission_request(request: Request, settings: SettingsDep) -> SubmissionCreate:
    """The body, read here (on the event loop) so that the route itself can be a plain
    function whose database work runs in the thread pool."""
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


SubmissionBody = Annotated[SubmissionCreate, Depends(read_submission_request)]


async def submission_turn(request: Request, settings: SettingsDep) -> AsyncIterator[None]:
    """A token's submissions one at a time in this process, waiting on the event loop
    (server/turns.py), where they would wait for each other in the database: under the rate
    limit, or with an Idempotency-Key. Resolved before the token is looked up, so that a
    waiting submission holds neither a thread nor a database connection."""
    key = turns.token_key(request.headers.get("authorization"))
    serialized = settings.submission_rate_limit > 0 or "idempotency-key" in request.headers
    if key is None or not serialized:
        yield
        return
    async with turns.SUBMISSIONS.turn(key):
        yield


SubmissionTurn = Annotated[None, Depends(submission_turn, scope="function")]
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=200,
        pattern=r"^[\x21-\x7e]+$",
        description="any unique string (a UUID, say): a retry with the same key and body "
        "returns the submission the first request made instead of making another",
    ),
]


async def accept_once(
    credentials: HTTPAuthorizationCredentials,
    response: Response,
    accept: Callable[[Session, User], tuple[T, bool]],
) -> T:
    """What ``accept`` made for the user of a token with the ``submit`` scope, committed
    (and its gradings sent) before the response leaves; a replay of a request made under
    the same Idempotency-Key says so in a header."""
    accepted, replayed = await as_token_user(credentials, accept, Scope.SUBMIT)
    if replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return accepted


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
    _turn: SubmissionTurn,
    credentials: TokenCredentials,
    body: SubmissionBody,
    settings: SettingsDep,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> SubmissionAccepted:
    def accept(session: Session, user: User) -> tuple[SubmissionAccepted, bool]:
        submission, replayed = service.create_submission(
            session,
            settings,
            user,
            problem_name=body.problem,
            code=body.code,
            mode=body.mode,
            gpu=body.gpu,
            idempotency_key=idempotency_key,
        )
        return SubmissionAccepted(id=submission.id, status=submission.status), replayed

    return await accept_once(credentials, response, accept)


@router.get(
    "",
    response_model=SubmissionList,
    responses=responses(BadRequest, NotAuthenticated, NotFound),
    summary="Your own submissions, newest first, narrowed by problem, status and mode",
)
def list_submissions(
    session: SessionDep,
    user: CurrentUser,
    problem: str | None = Query(default=None, max_length=100, description="one problem's only"),
    status: StatusFilter = None,
    mode: ModeFilter = None,
    before: Before = None,
    limit: Limit = 50,
) -> SubmissionList:
    found = service.list_own(
        session,
        user,
        service.SubmissionFilter.of(problem, status=status, mode=mode),
        before=before,
        limit=limit,
    )
    return SubmissionList(
        submissions=[SubmissionSummary(**summary_fields(s)) for s in found],
        next_before=next_before(found, limit),
    )


def summary_fields(submission: Submission) -> dict[str, Any]:
    """The fields of `SubmissionSummary`, which every fuller view of a submission extends."""
    return {
        "id": submission.id,
        "problem": submission.problem.name,
        "mode": submission.mode,
        "gpu": submission.gpu_type,
        "status": submission.status,
        "score": submission.score,
        "created_at": submission.created_at,
        "finished_at": submission.finished_at,
    }


def next_before(found: Sequence[Submission], limit: int) -> int | None:
    """The `before` of the next page: the last id of a full page, none after a short one."""
    return found[-1].id if len(found) == limit else None


@router.get(
    "/{submission_id}",
    response_model=SubmissionOut,
    responses=responses(NotAuthenticated, NotFound),
    summary="A submission's status and report",
)
async def read_submission(submission_id: RowId, credentials: TokenCredentials) -> SubmissionOut:
    def read(session: Session, user: User) -> SubmissionOut:
        return submission_out(
            session, service.get_visible_submission(session, submission_id, user), user
        )

    return await as_token_user(credentials, read)


def earlier_verdicts(
    session: Session, submission: Submission, viewer: User
) -> list[EarlierVerdict]:
    return [
        EarlierVerdict(
            status=earlier.status,
            score=earlier.score,
            message=disclosure.disclose_earlier(
                viewer, submission, earlier, reports.stored_earlier(submission, earlier)
            ),
            problem_version=earlier.problem_version,
            started_at=earlier.started_at,
            finished_at=earlier.finished_at,
            replaced_at=earlier.replaced_at,
        )
        for earlier in service.earlier_verdicts(session, submission)
    ]


def submission_out(session: Session, submission: Submission, viewer: User) -> SubmissionOut:
    report = reports.stored(submission)
    code_visible = service.can_see_code(session, viewer, submission)
    shown = disclosure.disclose(viewer, submission, report, code_visible=code_visible)
    wait = service.queue_wait(session, submission)
    reasons = service.moderation_reasons(session, submission)
    progress = service.progress_of(submission)
    return SubmissionOut(
        **summary_fields(submission),
        problem_version=submission.problem_version,
        user=submission.user.name,
        # While queued, a grading that no worker of its queue can hold says why.
        message=wait.held if wait is not None and wait.held else shown.message,
        flags=shown.flags,
        error_class=service.error_class_of(submission),
        flag_codes=flag_codes(shown.flags),
        hidden=submission.is_hidden,
        hacked=submission.is_hacked,
        hidden_reason=reasons.hidden,
        hacked_reason=reasons.hacked,
        history=earlier_verdicts(session, submission, viewer),
        cases=shown.cases,
        queue_position=wait.position if wait is not None else None,
        expected_wait_s=wait.expected_s if wait is not None else None,
        worker=submission.worker,
        phases=service.phases(submission, report),
        device_name=report.device_name if report is not None else None,
        fingerprint=FingerprintOut.of(report),
        speedup=speedup_out(session, submission),
        standing=standing_out(session, submission, viewer),
        device_peaks=report.device_peaks if report is not None else None,
        files=shown.files,
        stdout=shown.stdout,
        stderr=shown.stderr,
        withheld=shown.withheld,
        code_sha256=submission.code_sha256,
        code=submission.code if code_visible else None,
        started_at=submission.started_at,
        progress=ProgressOut.of(
            progress and disclosure.progress_shown(viewer, submission, progress)
        ),
    )


def standing_out(session: Session, submission: Submission, viewer: User) -> StandingOut | None:
    found = standing.standing_of(session, get_settings(), submission, viewer)
    return None if found is None else StandingOut.model_validate(found, from_attributes=True)


def speedup_out(session: Session, submission: Submission) -> SpeedupOut:
    found = baselines.speedup_of(session, submission)
    return SpeedupOut(eager=found.eager, compile=found.compile)


@router.get(
    "/{submission_id}/files/{name}",
    response_class=Response,
    responses={
        200: downloads.documented(
            "the file as the worker made it: for `profile.ncu-rep`, profile mode's Nsight "
            "Compute report, to open in Nsight Compute (`ncu-ui`, or `ncu --import FILE`)",
            files.MEDIA_TYPE,
            "submission-{id}-{name}",
        ),
        **responses(NotAuthenticated, NotFound),
    },
    summary="A file a submission's grading left beside its report (its Nsight Compute "
    "report), for those who may read its code",
)
def download_file(
    submission_id: RowId, name: str, session: SessionDep, user: OptionalUser
) -> Response:
    found = files.readable_file(session, submission_id, name, user)
    return Response(
        found.content,
        media_type=files.MEDIA_TYPE,
        headers=files.download_headers(found),
    )
