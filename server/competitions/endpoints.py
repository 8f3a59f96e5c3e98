"""Routes: competitions (admins add and edit them until they open), entering one as a team
or alone, its standings as JSON or CSV, and disqualifying a team."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter
from fastapi.responses import Response
from fastapi.types import DecoratedCallable
from sqlalchemy.orm import Session

from server import downloads
from server.competitions import repository, service
from server.competitions.schemas import (
    CompetitionFile,
    CompetitionOut,
    CompetitionProblemOut,
    CompetitionSaved,
    CompetitionSummary,
    Disqualification,
    DisqualifiedOut,
    DisqualifyRequest,
    JoinRequest,
    ProblemCellOut,
    StandingsOut,
    StandingsRow,
    TeamCreate,
    TeamOut,
)
from server.competitions.scoring import Scoring
from server.competitions.standings import Board, Row, board
from server.deps import AdminUser, OptionalUser, SessionDep, SettingsDep, SubmittingUser
from server.errors import BadRequest, Conflict, Forbidden, NotAuthenticated, NotFound, responses
from server.exports import service as exports
from server.models import Competition, CompetitionProblem, Team, User

router = APIRouter(prefix="/api/v1/competitions", tags=["competitions"])

# What a route that changes a competition, a team or a judging may answer instead.
CHANGE_ERRORS = responses(BadRequest, NotAuthenticated, Forbidden, NotFound, Conflict)


def summary(competition: Competition, teams: int) -> CompetitionSummary:
    return CompetitionSummary(
        name=competition.name,
        title=competition.title,
        **service.schedule(competition),
        scoring=Scoring(competition.scoring),
        team_size=competition.team_size,
        status=service.phase(competition),
        teams=teams,
    )


def problem_out(entry: CompetitionProblem) -> CompetitionProblemOut:
    return CompetitionProblemOut(
        name=entry.problem.name, weight=entry.weight, baseline_s=entry.baseline_s
    )


def team_out(team: Team) -> TeamOut:
    return TeamOut(team=team.name, invite=team.invite_code, members=service.member_names(team))


def detail(session: Session, competition: Competition, viewer: User | None) -> CompetitionOut:
    mine = service.team_of(session, competition, viewer)
    return CompetitionOut(
        **summary(competition, repository.team_count(session, competition.id)).model_dump(),
        description=competition.description,
        problems=[
            problem_out(entry) for entry in service.shown_problems(session, competition, viewer)
        ],
        final_runs=competition.final_runs,
        points_table=competition.points_table,
        pin=competition.pin,
        judging_queue=competition.judging_queue,
        created_at=competition.created_at,
        updated_at=competition.updated_at,
        your_team=team_out(mine) if mine is not None else None,
    )


@router.get("", response_model=list[CompetitionSummary], summary="Every competition")
def list_competitions(session: SessionDep) -> list[CompetitionSummary]:
    counts = repository.team_counts(session)
    return [
        summary(competition, counts.get(competition.id, 0))
        for competition in service.list_competitions(session)
    ]


@router.post(
    "",
    status_code=201,
    response_model=CompetitionOut,
    responses=responses(BadRequest, NotAuthenticated, Forbidden, Conflict),
    summary="Add a competition (the fields of its YAML file, as JSON)",
)
def add_competition(
    file: CompetitionFile, session: SessionDep, settings: SettingsDep, admin: AdminUser
) -> CompetitionOut:
    competition = service.create_competition(session, settings, file, admin)
    return detail(session, competition, admin)


@router.get(
    "/{name}",
    response_model=CompetitionOut,
    responses=responses(NotFound),
    summary="A competition; with a token, your team in it",
)
def read_competition(name: str, session: SessionDep, viewer: OptionalUser) -> CompetitionOut:
    return detail(session, service.get_competition(session, name), viewer)


@router.put(
    "/{name}",
    response_model=CompetitionSaved,
    responses=CHANGE_ERRORS,
    summary="Replace a competition's fields with a whole new file, until it opens",
)
def edit_competition(
    name: str, file: CompetitionFile, session: SessionDep, settings: SettingsDep, admin: AdminUser
) -> CompetitionSaved:
    competition, changed = service.edit_competition(session, settings, name, file, admin)
    return CompetitionSaved(**detail(session, competition, admin).model_dump(), changed=changed)


def entry_route(
    path: str, summary: str, status_code: int = 200
) -> Callable[[DecoratedCallable], DecoratedCallable]:
    """A route that enters the caller in a competition: it answers with their team."""
    return router.post(
        path,
        status_code=status_code,
        response_model=TeamOut,
        responses=CHANGE_ERRORS,
        summary=summary,
    )


@entry_route(
    "/{name}/teams",
    "Form a team: you register and join it; others join with its invite code",
    status_code=201,
)
def create_team(name: str, body: TeamCreate, session: SessionDep, user: SubmittingUser) -> TeamOut:
    return team_out(service.create_team(session, name, user, body.name))


@entry_route("/{name}/join", "Join a team with its invite code (which registers you)")
def join_team(name: str, body: JoinRequest, session: SessionDep, user: SubmittingUser) -> TeamOut:
    return team_out(service.join_team(session, name, user, body.invite))


@entry_route("/{name}/register", "Enter alone: a team of one named after you")
def register(name: str, session: SessionDep, user: SubmittingUser) -> TeamOut:
    return team_out(service.register_alone(session, name, user))


@router.post(
    "/{name}/teams/{team}/disqualify",
    response_model=DisqualifiedOut,
    responses=CHANGE_ERRORS,
    summary="Disqualify a team: it is shown last, unranked, with the reason",
)
def disqualify(
    name: str, team: str, body: DisqualifyRequest, session: SessionDep, admin: AdminUser
) -> DisqualifiedOut:
    found = service.disqualify(session, name, team, body.reason, admin)
    assert found.disqualified_at is not None and found.disqualified_reason is not None
    return DisqualifiedOut(
        team=found.name,
        disqualified=Disqualification(reason=found.disqualified_reason, at=found.disqualified_at),
    )


@router.get(
    "/{name}/standings",
    response_model=StandingsOut,
    responses=responses(NotFound),
    summary="The standings; with a token, your team's row counts all its submissions while "
    "the board is frozen",
)
def read_standings(name: str, session: SessionDep, viewer: OptionalUser) -> StandingsOut:
    return standings_out(board(session, service.get_competition(session, name), viewer))


@router.get(
    "/{name}/standings.csv",
    response_class=Response,
    responses={
        200: downloads.documented(
            "the standings as JSON has them, one row a team: rank, team, members, total, "
            "then each problem's rank, score, value and submission id, then disqualified",
            exports.FORMATS["csv"],
            "{name}_standings.csv",
        ),
        **responses(NotFound),
    },
    summary="The standings as CSV",
)
def download_standings(name: str, session: SessionDep, viewer: OptionalUser) -> Response:
    found = board(session, service.get_competition(session, name), viewer)
    export = exports.standings_csv(standings_out(found))
    return downloads.attachment(export.content, export.media_type, export.filename)


def standings_out(found: Board) -> StandingsOut:
    competition = found.competition
    return StandingsOut(
        competition=competition.name,
        title=competition.title,
        scoring=found.scoring,
        **service.schedule(competition),
        status=found.phase,
        frozen=found.frozen,
        final=found.final,
        problems=[problem_out(entry) for entry in found.problems],
        notes=found.notes,
        rows=[row_out(row, found.problem_names) for row in found.rows],
    )


def row_out(row: Row, shown: list[str]) -> StandingsRow:
    placed = row.placed
    team = row.team
    cells = placed.cells if placed is not None else {}
    return StandingsRow(
        rank=row.rank,
        team=team.name,
        members=row.members,
        total=placed.total if placed is not None else None,
        problems={
            problem: ProblemCellOut(
                rank=cells[problem].rank,
                score=cells[problem].entry.score,
                submission_id=cells[problem].entry.submission_id,
                submitted_at=cells[problem].entry.submitted_at,
                value=cells[problem].value,
            )
            for problem in shown
            if problem in cells
        },
        reached_at=placed.reached_at if placed is not None else None,
        disqualified=(
            Disqualification(reason=team.disqualified_reason or "", at=team.disqualified_at)
            if team.disqualified_at is not None
            else None
        ),
        yours=row.yours,
        live=row.live,
    )
