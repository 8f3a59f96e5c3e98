"""Routes of rejudges (admins): select submissions to grade again, read what applying
would change, apply or discard it. The command line's ``rejudge show --json`` prints the
same body (``rejudge_body``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime

from fastapi import APIRouter
from fastapi.types import DecoratedCallable
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from grader.report import TERMINAL_STATUSES
from server.deps import AdminUser, RowId, SessionDep, SettingsDep
from server.errors import BadRequest, Conflict, Forbidden, NotAuthenticated, NotFound, responses
from server.models import Judging
from server.rejudges import service

router = APIRouter(prefix="/api/v1/admin/rejudges", tags=["admin"])

ERRORS = responses(BadRequest, NotAuthenticated, Forbidden, NotFound, Conflict)


class RejudgeStart(BaseModel):
    """The selection: at least one filter; those given must all match."""

    model_config = ConfigDict(extra="forbid")

    problem: str | None = Field(default=None, max_length=100, description="a problem's name")
    version: int | None = Field(
        default=None, description="the problem version graded (needs problem)"
    )
    status: str | None = Field(
        default=None, max_length=16, description="passed, failed, error, timeout or rejected"
    )
    user: str | None = Field(default=None, max_length=64, description="a user's name")
    since: datetime | None = Field(default=None, description="submitted at or after (ISO 8601)")
    until: datetime | None = Field(default=None, description="submitted before (ISO 8601)")

    def selection(self) -> service.Selection:
        return service.Selection(**self.model_dump())


class RejudgeStarted(BaseModel):
    id: int
    count: int = Field(description="submissions selected, each queued to be graded again")


class ChangeOut(BaseModel):
    submission_id: int = Field(description="the submission graded again")
    run_id: int = Field(description="the rejudge's submission grading it")
    problem: str
    user: str
    mode: str
    status_before: str
    score_before: float | None
    status_after: str = Field(description="the run's status (queued or running: not yet)")
    score_after: float | None
    changed: bool = Field(description="graded, and its status or score differs")
    now_fails: bool = Field(description="passed before, does not now")
    now_passes: bool


class MoveOut(BaseModel):
    problem: str
    gpu: str
    version: int
    user: str
    rank_before: int | None = Field(description="None: not on that leaderboard")
    rank_after: int | None


class RejudgeOut(BaseModel):
    id: int
    status: str = Field(description="running, ready (every run graded), applied or discarded")
    selection: dict[str, str | int] = Field(description="the filters as given")
    graded: int = Field(description="runs with a verdict")
    total: int
    changed: int = Field(description="submissions whose status or score would change")
    created_at: str
    decided_at: str | None
    changes: list[ChangeOut] = Field(description="by submission id")
    moves: list[MoveOut] = Field(
        description="users whose leaderboard rank would change (empty once applied)"
    )


def rejudge_body(session: Session, found: Judging) -> RejudgeOut:
    shown = service.preview(session, found)
    return RejudgeOut(
        id=found.id,
        status=shown.status,
        selection=found.selection or {},
        graded=sum(c.run.status in TERMINAL_STATUSES for c in shown.changes),
        total=len(shown.changes),
        changed=sum(c.changed for c in shown.changes),
        created_at=found.created_at.isoformat(),
        decided_at=found.decided_at.isoformat() if found.decided_at is not None else None,
        changes=[
            ChangeOut(
                submission_id=c.original.id,
                run_id=c.run.id,
                problem=c.original.problem.name,
                user=c.original.user.name,
                mode=c.original.mode,
                status_before=c.original.status,
                score_before=c.original.score,
                status_after=c.run.status,
                score_after=c.run.score,
                changed=c.changed,
                now_fails=c.now_fails,
                now_passes=c.now_passes,
            )
            for c in shown.changes
        ],
        moves=[MoveOut(**asdict(m)) for m in shown.moves],
    )


@router.post(
    "",
    status_code=202,
    response_model=RejudgeStarted,
    responses=ERRORS,
    summary="Rejudge the submissions a selection matches: each graded again, kept apart",
)
def start_rejudge(
    body: RejudgeStart, session: SessionDep, settings: SettingsDep, admin: AdminUser
) -> RejudgeStarted:
    started, count = service.start(session, settings, body.selection(), admin)
    return RejudgeStarted(id=started.id, count=count)


@router.get(
    "/{rejudge_id}",
    response_model=RejudgeOut,
    responses=ERRORS,
    summary="A rejudge: its state and what applying it would change",
)
def read_rejudge(rejudge_id: RowId, session: SessionDep, admin: AdminUser) -> RejudgeOut:
    return rejudge_body(session, service.get(session, rejudge_id))


def decision_route(path: str, summary: str) -> Callable[[DecoratedCallable], DecoratedCallable]:
    """A route that settles a rejudge: it answers with the rejudge as it now stands."""
    return router.post(path, response_model=RejudgeOut, responses=ERRORS, summary=summary)


@decision_route(
    "/{rejudge_id}/apply",
    "Apply a ready rejudge: each submission takes its new verdict, the old one kept",
)
def apply_rejudge(rejudge_id: RowId, session: SessionDep, admin: AdminUser) -> RejudgeOut:
    return rejudge_body(session, service.apply(session, rejudge_id, admin))


@decision_route(
    "/{rejudge_id}/discard", "Discard a rejudge: its runs kept, every verdict as it was"
)
def discard_rejudge(rejudge_id: RowId, session: SessionDep, admin: AdminUser) -> RejudgeOut:
    return rejudge_body(session, service.discard(session, rejudge_id, admin))
