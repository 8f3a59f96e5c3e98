"""Routes: list and read problems; admins add or update one from an archive."""

from __future__ import annotations

from fastapi import APIRouter, File, Form, UploadFile

from grader.problem import problem_from_files
from server.deps import AdminUser, OptionalUser, SessionDep, SettingsDep
from server.errors import BadRequest, Forbidden, NotAuthenticated, NotFound, PayloadTooLarge
from server.errors import responses as error_responses
from server.models import Problem
from server.problems import service
from server.problems.schemas import ProblemOut, ProblemSummary
from server.settings import Settings

router = APIRouter(prefix="/api/v1/problems", tags=["problems"])


def summary(problem: Problem, settings: Settings) -> ProblemSummary:
    return ProblemSummary(
        name=problem.name,
        version=problem.version,
        gpu_types=service.gpu_types_for(problem, settings),
        updated_at=problem.updated_at,
    )


def detail(problem: Problem, settings: Settings) -> ProblemOut:
    loaded = problem_from_files(problem.name, problem.files)
    return ProblemOut(
        **summary(problem, settings).model_dump(),
        description=problem.description,
        tests=loaded.tests,
        benchmarks=loaded.benchmarks,
        template=loaded.submission_template or None,
    )


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


@router.post(
    "",
    status_code=201,
    response_model=ProblemOut,
    responses=error_responses(BadRequest, PayloadTooLarge, NotAuthenticated, Forbidden),
    summary="Add a problem, or a new version of it, from a .zip or .tar.gz of its folder",
)
async def add_problem(
    session: SessionDep,
    settings: SettingsDep,
    admin: AdminUser,
    archive_file: UploadFile = File(alias="archive", description="a .zip or .tar.gz"),
    name: str | None = Form(default=None, max_length=100),
) -> ProblemOut:
    raw = await archive_file.read(settings.max_archive_bytes + 1)
    problem, created = service.add_problem_from_archive(
        session, settings, raw, archive_file.filename or "", name, admin
    )
    out = detail(problem, settings)
    out.created = created
    return out
