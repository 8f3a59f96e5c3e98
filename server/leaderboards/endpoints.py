"""Routes: a problem's leaderboard per device type."""

from __future__ import annotations

from fastapi import APIRouter, Query

from server.deps import OptionalUser, SessionDep, SettingsDep
from server.errors import BadRequest, NotFound, responses
from server.leaderboards.repository import best_scores
from server.leaderboards.schemas import Leaderboard, LeaderboardEntry
from server.problems import service as problems

router = APIRouter(prefix="/api/v1/leaderboards", tags=["leaderboards"])


@router.get(
    "/{problem}",
    response_model=Leaderboard,
    responses=responses(BadRequest, NotFound),
    summary="Each user's best passing leaderboard-mode score, best first",
)
def read_leaderboard(
    problem: str,
    session: SessionDep,
    settings: SettingsDep,
    user: OptionalUser,
    gpu: str | None = Query(default=None, max_length=32, description="device type"),
) -> Leaderboard:
    record = problems.get_visible_problem(session, problem, user)
    offered = problems.gpu_types_for(record, settings)
    gpu_type = (gpu or (offered[0] if offered else "")).lower()
    if gpu_type not in offered:
        raise BadRequest(
            f"unknown GPU type {gpu_type!r} for problem {problem!r}; "
            f"available: {', '.join(offered) or 'none'}"
        )
    rows = best_scores(session, record.id, gpu_type)
    return Leaderboard(
        problem=record.name,
        gpu=gpu_type,
        entries=[
            LeaderboardEntry(
                rank=rank, user=name, score=score, submission_id=sid, submitted_at=created
            )
            for rank, (name, score, sid, created) in enumerate(rows, start=1)
        ],
    )
