"""Routes: list and read problems, download one's folder; admins add or update one from an
archive, read its validation and run it again."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, File, Form, Query, UploadFile
from fastapi.responses import Response

from server import downloads
from server.deps import (
    Adder,
    AdminUser,
    CurrentUser,
    OptionalUser,
    SessionDep,
    SettingsDep,
    TokenCredentials,
    get_admin_user,
)
from server.errors import BadRequest, Forbidden, NotAuthenticated, NotFound, PayloadTooLarge
from server.errors import responses as error_responses
from server.models import Problem, ProblemValidation
from server.problems import bundle, repository, service, validation
from server.problems.loaded import loaded
from server.problems.schemas import (
    BaselinesRequested,
    DeviceValidation,
    ProblemOut,
    ProblemSummary,
    ValidationOut,
)
from server.settings import Settings

router = APIRouter(prefix="/api/v1/problems", tags=["problems"])


def summary(problem: Problem, settings: Settings) -> ProblemSummary:
    return ProblemSummary(
        name=problem.name,
        version=problem.version,
        gpu_types=service.gpu_types_for(problem, settings),
        updated_at=problem.updated_at,
        status=problem.status,
        starts_at=problem.starts_at,
        hidden=not problem.is_public,
        deadline=problem.deadline,
        leaderboard_from_version=problem.leaderboard_from_version,
        pending_version=problem.candidate["version"] if problem.candidate else None,
        difficulty=problem.difficulty,
        private=problem.owner_id is not None,
    )


def detail(problem: Problem, settings: Settings) -> ProblemOut:
    read = loaded(problem)
    return ProblemOut(
        **summary(problem, settings).model_dump(),
        description=problem.description,
        tests=read.tests,
        benchmarks=read.benchmarks,
        template=read.submission_template or None,
    )


def validation_out(session: SessionDep, problem: Problem) -> ValidationOut:
    return ValidationOut(
        problem=problem.name,
        version=problem.version,
        status=problem.status,
        attempt=problem.validation_attempt,
        devices=[device_validation(row) for row in validation.current_round(session, problem)],
    )


def device_validation(row: ProblemValidation) -> DeviceValidation:
    out = DeviceValidation.model_validate(row)
    if row.report is not None:
        out.test_cases_timeout_s = validation.parse_report(row.report).test_cases_timeout_s
    return out


@router.get("", response_model=list[ProblemSummary], summary="The problems you can see")
def list_problems(
    session: SessionDep, settings: SettingsDep, user: OptionalUser
) -> list[ProblemSummary]:
    return [summary(problem, settings) for problem in service.list_visible_problems(session, user)]


@router.get(
    "/{name}",
    response_model=ProblemOut,
    responses=error_responses(NotFound),
    summary="A problem: description, cases and submission template",
)
def read_problem(
    name: str, session: SessionDep, settings: SettingsDep, user: OptionalUser
) -> ProblemOut:
    return detail(service.get_visible_problem(session, name, user), settings)


@router.get(
    "/{name}/bundle",
    response_class=Response,
    responses={
        200: downloads.documented(
            "a zip of one folder, `{name}/`: task.yml, task.py, utils.py and the problem's "
            "other files, the template as submission.py, and reference.py when the organizers "
            "made it public; unpacked, `kerneljudge grade {name}/ submission.py` grades locally",
            bundle.MEDIA_TYPE,
            "{name}.zip",
        ),
        **error_responses(NotFound),
    },
    summary="The problem's folder as a zip, to grade submissions locally",
)
def download_bundle(name: str, session: SessionDep, user: OptionalUser) -> Response:
    made = bundle.make(service.get_visible_problem(session, name, user))
    return downloads.attachment(made.content, bundle.MEDIA_TYPE, made.filename)


@router.post(
    "",
    status_code=201,
    response_model=ProblemOut,
    responses=error_responses(BadRequest, PayloadTooLarge, NotAuthenticated, Forbidden),
    summary="Add a problem, or a new version of it, from a .zip or .tar.gz of its folder; "
    "it goes live once validated on the workers. An admin's token adds an organizer's "
    "problem; an author's token (the `author` scope) adds one of the author's own, private "
    "to it, whose reference is graded only in a sandbox",
)
def add_problem(
    session: SessionDep,
    settings: SettingsDep,
    adder: Adder,
    archive_file: UploadFile = File(alias="archive", description="a .zip or .tar.gz"),
    name: str | None = Form(default=None, max_length=100),
    leaderboard: str = Form(
        default=service.CARRY_OVER,
        description="on a new version: 'carry_over' keeps earlier versions' rows on the live "
        "leaderboard; 'archive' starts it empty (earlier versions' stay readable)",
    ),
    hidden: bool | None = Form(
        default=None,
        description="true: only admins see the problem until a competition of its opens; "
        "false: visible (from starts_at, if any); left out: a new problem is visible, an "
        "existing one keeps its setting",
    ),
    starts_at: datetime | None = Form(
        default=None,
        description="with its time zone: competitors see the problem from then on (its "
        "competition's opening, if earlier, opens it too); left out: kept as it is",
    ),
) -> ProblemOut:
    # FastAPI has spooled the upload already; reading it here, in the thread pool, is fine.
    raw = archive_file.file.read(settings.max_archive_bytes + 1)
    if adder.as_author and (hidden is False or starts_at is not None):
        raise BadRequest(
            "an author's problem is private to it: it takes no hidden=false and no starts_at"
        )
    problem, created = service.add_problem_from_archive(
        session,
        settings,
        raw,
        archive_file.filename or "",
        name,
        adder.user,
        leaderboard,
        service.Opening(hidden=hidden, starts_at=starts_at),
        owner=adder.user if adder.as_author else None,
    )
    # Its validation round is sent once this request's transaction commits.
    out = detail(problem, settings)
    out.created = created
    return out


@router.get(
    "/{name}/validation",
    response_model=ValidationOut,
    responses=error_responses(NotAuthenticated, Forbidden, NotFound),
    summary="The current version's validation: each device type's report (an admin's, or "
    "an author's of its own problem)",
)
def read_validation(
    name: str, session: SessionDep, user: CurrentUser, credentials: TokenCredentials
) -> ValidationOut:
    problem = repository.get_problem(session, name)
    if problem is None or not service.owns(user, problem):
        get_admin_user(session, credentials)  # 403 for anyone else
    if problem is None:
        raise NotFound(f"no problem named {name!r}")
    return validation_out(session, problem)


@router.post(
    "/{name}/validation",
    status_code=202,
    response_model=ValidationOut,
    responses=error_responses(NotAuthenticated, Forbidden, NotFound),
    summary="Validate the current version again; the problem is not live until it ends clean",
)
def rerun_validation(
    name: str, session: SessionDep, settings: SettingsDep, admin: AdminUser
) -> ValidationOut:
    problem = service.rerun_validation(session, settings, name, admin)
    return validation_out(session, problem)


@router.post(
    "/{name}/baselines",
    status_code=202,
    response_model=BaselinesRequested,
    responses=error_responses(BadRequest, NotAuthenticated, Forbidden, NotFound),
    summary="Time the live version's baselines (the reference eager and under torch.compile) "
    "on a worker of each device type, or of the one named",
)
def request_baselines(
    name: str,
    session: SessionDep,
    settings: SettingsDep,
    admin: AdminUser,
    gpu: str | None = Query(default=None, max_length=32, description="device type"),
) -> BaselinesRequested:
    asked = service.request_baselines(session, settings, name, admin, gpu)
    problem = repository.get_problem(session, name)
    assert problem is not None
    return BaselinesRequested(problem=name, version=problem.version, gpu_types=asked)
