"""Building leaderboards for the API and the pages: ranks, speed-of-light fractions and the
best score over time; the live board (from the problem's ``leaderboard_from_version`` on) or
one version's."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from server.errors import BadRequest, NotFound
from server.leaderboards import repository
from server.leaderboards.repository import Versions
from server.models import Problem
from server.problems import service as problems
from server.settings import Settings


@dataclass(frozen=True)
class Entry:
    rank: int
    user: str
    score: float
    sol_fraction: float | None
    submission_id: int
    submitted_at: datetime
    problem_version: int


@dataclass(frozen=True)
class Record:
    """The best score so far changed at this moment, to this user's score."""

    at: datetime
    score: float
    user: str


def choose_gpu(problem: Problem, settings: Settings, gpu: str | None) -> str:
    offered = problems.gpu_types_for(problem, settings)
    gpu_type = (gpu or (offered[0] if offered else "")).lower()
    if gpu_type not in offered:
        raise BadRequest(
            f"unknown GPU type {gpu_type!r} for problem {problem.name!r}; "
            f"available: {', '.join(offered) or 'none'}"
        )
    return gpu_type


def versions_ranked(problem: Problem, version: int | None) -> Versions:
    """The live board ranks the versions from ``leaderboard_from_version`` on (all of them
    when updates carried it over); ``version`` asks for that one version's board."""
    if version is None:
        return Versions(first=problem.leaderboard_from_version)
    if not 1 <= version <= problem.version:
        raise NotFound(f"problem {problem.name!r} has no version {version}")
    return Versions(only=version)


def entries(
    session: Session, problem: Problem, gpu_type: str, version: int | None = None
) -> list[Entry]:
    versions = versions_ranked(problem, version)
    rows = repository.best_scores(session, problem.id, gpu_type, versions)
    reports = repository.reports(session, [row[2] for row in rows])
    return [
        Entry(
            rank=rank,
            user=name,
            score=score,
            sol_fraction=sol_fraction(reports.get(sid, {})),
            submission_id=sid,
            submitted_at=created,
            problem_version=problem_version,
        )
        for rank, (name, score, sid, created, problem_version) in enumerate(rows, start=1)
    ]


def sol_fraction(report: dict[str, Any]) -> float | None:
    """Geometric mean of the benchmark cases' speed-of-light fractions (like the score,
    which is the geometric mean of their times)."""
    fractions = [
        float(fraction)
        for case in report.get("cases", [])
        if case.get("kind") != "test"
        and isinstance(fraction := (case.get("roofline") or {}).get("sol_fraction"), int | float)
        and fraction > 0
    ]
    if not fractions:
        return None
    return math.exp(sum(math.log(f) for f in fractions) / len(fractions))


def records(
    session: Session, problem: Problem, gpu_type: str, version: int | None = None
) -> list[Record]:
    """Each moment the best score improved, oldest first."""
    best: list[Record] = []
    versions = versions_ranked(problem, version)
    for at, score, user in repository.ranked_history(session, problem.id, gpu_type, versions):
        if not best or score < best[-1].score:
            best.append(Record(at=at, score=score, user=user))
    return best


def competitor_counts(session: Session) -> dict[int, int]:
    return repository.competitor_counts(session)


def ranked_versions(session: Session, problem: Problem) -> list[int]:
    return repository.ranked_versions(session, problem.id)
