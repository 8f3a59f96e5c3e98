"""Routes: a problem's leaderboard per device type."""

from __future__ import annotations

from fastapi import APIRouter, Query

from server.deps import OptionalUser, SessionDep, SettingsDep
from server.errors import BadRequest, NotFound, responses
from server.leaderboards import service
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
    version: int | None = Query(
        default=None,
        ge=1,
        description="one version's leaderboard (e.g. one an update archived); "
        "default: the live leaderboard",
    ),
) -> Leaderboard:
    record = problems.get_visible_problem(session, problem, user)
    gpu_type = service.choose_gpu(record, settings, gpu)
    return Leaderboard(
        problem=record.name,
        gpu=gpu_type,
        version=version,
        from_version=record.leaderboard_from_version,
        entries=[
            LeaderboardEntry(
                rank=entry.rank,
                user=entry.user,
                score=entry.score,
                sol_fraction=entry.sol_fraction,
                submission_id=entry.submission_id,
                submitted_at=entry.submitted_at,
                problem_version=entry.problem_version,
            )
            for entry in service.entries(session, record, gpu_type, version)
        ],
    )
