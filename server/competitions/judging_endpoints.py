"""Routes of a competition's review (admins): its final judging (start one after the close,
read its preview, publish or discard it) and its entries' near-clones. The command line's
``competition judging --json`` and ``competition clones --json`` print the same bodies
(``judging_body``, ``clones_body``)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter
from fastapi.types import DecoratedCallable
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from grader.report import TERMINAL_STATUSES
from server.competitions import clones, judging
from server.competitions.endpoints import CHANGE_ERRORS
from server.deps import AdminUser, SessionDep, SettingsDep
from server.errors import Forbidden, NotAuthenticated, NotFound, responses
from server.models import Judging
from server.outbox import dispatch

router = APIRouter(prefix="/api/v1/competitions", tags=["competitions"])


class JudgingStart(BaseModel):
    runs: int | None = Field(
        default=None, description="gradings of each entry (default: the competition's final_runs)"
    )


class JudgedEntryOut(BaseModel):
    entry_id: int = Field(description="the team's entry at the close, graded again")
    runs: list[int] = Field(description="the judging's submissions grading it")
    statuses: list[str]
    scores: list[float | None] = Field(description="each run's score in seconds (None: failed)")
    median: float | None = Field(description="the judged score; None: a run failed")
    cv: float | None = Field(description="the scores' standard deviation over their mean")
    score_before: float = Field(description="the entry's score at the close")
    fails: bool = Field(description="a run did not pass: the entry drops from the standings")
    off_pin: list[int] = Field(
        description="runs graded on a worker whose fingerprint differs from the "
        "competition's pin (or that reported none)"
    )


class JudgingRowOut(BaseModel):
    team: str
    rank_before: int | None
    rank_after: int | None
    total_before: float | None
    total_after: float | None
    moves: int | None = Field(
        description="places gained (negative: lost); None where either rank is missing"
    )
    entries: dict[str, JudgedEntryOut] = Field(description="by problem name")


class JudgingOut(BaseModel):
    id: int
    competition: str
    status: str = Field(description="running, ready (every run graded), published or discarded")
    runs: int = Field(description="K: gradings of each entry")
    graded: int = Field(description="runs with a verdict")
    total_runs: int
    created_at: str
    decided_at: str | None
    queue: str = Field(
        description="the queue its runs go to: the competition's judging_queue, else its GPU "
        "type's; the workers taking it grade them"
    )
    queue_workers: int = Field(
        description="grading slots seen on that queue in the last 10 minutes (none: its "
        "waiting runs wait for a worker started with --queues QUEUE)"
    )
    rows: list[JudgingRowOut] = Field(description="in the judged standings' order")


def judging_body(session: Session, found: Judging) -> JudgingOut:
    shown = judging.preview(session, found)
    all_runs = [run for row in shown.rows for entry in row.entries for run in entry.runs]
    queue = judging.run_queue(shown.competition, shown.competition.gpu_type)
    rows = []
    for row in shown.rows:
        before, after = row.before, row.after
        rows.append(
            JudgingRowOut(
                team=row.team.name,
                rank_before=before.rank if before is not None else None,
                rank_after=after.rank if after is not None else None,
                total_before=before.total if before is not None else None,
                total_after=after.total if after is not None else None,
                moves=before.rank - after.rank
                if before is not None and after is not None
                else None,
                entries={
                    entry.problem: JudgedEntryOut(
                        entry_id=entry.entry.submission_id,
                        runs=[run.id for run in entry.runs],
                        statuses=[run.status for run in entry.runs],
                        scores=entry.scores,
                        median=entry.median,
                        cv=entry.cv,
                        score_before=entry.entry.score,
                        fails=entry.done and not entry.passed,
                        off_pin=entry.off_pin(shown.competition.pin),
                    )
                    for entry in row.entries
                },
            )
        )
    return JudgingOut(
        id=found.id,
        competition=shown.competition.name,
        status=shown.status,
        runs=found.runs,
        graded=sum(run.status in TERMINAL_STATUSES for run in all_runs),
        total_runs=len(all_runs),
        created_at=found.created_at.isoformat(),
        decided_at=found.decided_at.isoformat() if found.decided_at is not None else None,
        queue=queue,
        queue_workers=dispatch.slots_seen(session, queue),
        rows=rows,
    )


def judging_route(
    path: str, summary: str, method: str = "POST", status_code: int = 200
) -> Callable[[DecoratedCallable], DecoratedCallable]:
    """A route of the final judging (admins only): it answers with the judging."""
    return router.api_route(
        path,
        methods=[method],
        status_code=status_code,
        response_model=JudgingOut,
        responses=CHANGE_ERRORS,
        summary=summary,
    )


@judging_route(
    "/{name}/judgings",
    "Start the final judging: every entry graded again K times",
    status_code=201,
)
def start_judging(
    name: str, session: SessionDep, admin: AdminUser, body: JudgingStart | None = None
) -> JudgingOut:
    started = judging.start(session, name, body.runs if body is not None else None, admin)
    return judging_body(session, started)


@judging_route(
    "/{name}/judging",
    "The latest final judging: its state and the standings it would give",
    method="GET",
)
def read_judging(name: str, session: SessionDep, admin: AdminUser) -> JudgingOut:
    _, found = judging.latest(session, name)
    return judging_body(session, found)


@judging_route(
    "/{name}/judging/publish", "Publish the ready judging: its standings become the final results"
)
def publish_judging(name: str, session: SessionDep, admin: AdminUser) -> JudgingOut:
    return judging_body(session, judging.publish(session, name, admin))


@judging_route(
    "/{name}/judging/discard",
    "Discard the judging: kept with its verdicts, the standings unchanged",
)
def discard_judging(name: str, session: SessionDep, admin: AdminUser) -> JudgingOut:
    return judging_body(session, judging.discard(session, name, admin))


class CloneSideOut(BaseModel):
    team: str
    user: str = Field(description="the entry's author")
    submission_id: int


class ClonePairOut(BaseModel):
    problem: str
    similarity: float = Field(description="Jaccard similarity of the two entries' fingerprints")
    first: CloneSideOut
    second: CloneSideOut


class ClonesOut(BaseModel):
    competition: str
    threshold: float = Field(description="KJ_CLONE_THRESHOLD: pairs at or above it are listed")
    pairs: list[ClonePairOut] = Field(description="most similar first")


def clones_body(session: Session, name: str, threshold: float) -> ClonesOut:
    competition, pairs = clones.near_clones(session, name, threshold)

    def side(found: clones.Side) -> CloneSideOut:
        return CloneSideOut(
            team=found.team.name,
            user=found.submission.user.name,
            submission_id=found.submission.id,
        )

    return ClonesOut(
        competition=competition.name,
        threshold=threshold,
        pairs=[
            ClonePairOut(
                problem=pair.problem,
                similarity=round(pair.similarity, 4),
                first=side(pair.first),
                second=side(pair.second),
            )
            for pair in pairs
        ],
    )


@router.get(
    "/{name}/clones",
    response_model=ClonesOut,
    responses=responses(NotAuthenticated, Forbidden, NotFound),
    summary="Near-clones: pairs of entries from different teams whose code is nearly the same "
    "(listed only, never acted on)",
)
def read_clones(
    name: str, session: SessionDep, settings: SettingsDep, admin: AdminUser
) -> ClonesOut:
    return clones_body(session, name, settings.clone_threshold)
