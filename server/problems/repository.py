"""Queries for problems."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session, defer

from grader.problem import DIFFICULTIES
from server.competitions.schemas import Stored
from server.models import Competition, CompetitionProblem, Judging, Problem, ProblemValidation

# A problem without its largest columns (read on first use): its files, example solutions,
# staged version and description.
LIGHT = (
    defer(Problem.files),
    defer(Problem.solutions),
    defer(Problem.candidate),
    defer(Problem.description),
)


def get_problem(
    session: Session, name: str, *, for_update: bool = False, light: bool = False
) -> Problem | None:
    """``light``: without its files, example solutions, description and staged version (read
    on first use), which a submission's intake does not need."""
    query = select(Problem).where(Problem.name == name)
    if light:
        query = query.options(*LIGHT)
    if for_update:
        query = query.with_for_update()
    return session.scalar(query)


def get_problem_by_id(
    session: Session, problem_id: int, *, for_update: bool = False
) -> Problem | None:
    query = select(Problem).where(Problem.id == problem_id)
    if for_update:
        query = query.with_for_update()
    return session.scalar(query)


# Easiest first; problems not rated after the rated ones.
BY_DIFFICULTY = case(
    {difficulty: rank for rank, difficulty in enumerate(DIFFICULTIES)},
    value=Problem.difficulty,
    else_=len(DIFFICULTIES),
)


def list_problems(session: Session) -> Sequence[Problem]:
    """By difficulty (easiest first, those not rated last), then by name."""
    return session.scalars(select(Problem).order_by(BY_DIFFICULTY, Problem.name)).all()


def count_owned_problems(session: Session, owner_id: int) -> int:
    return (
        session.scalar(
            select(func.count()).select_from(Problem).where(Problem.owner_id == owner_id)
        )
        or 0
    )


def get_validation(session: Session, validation_id: int) -> ProblemValidation | None:
    return session.get(ProblemValidation, validation_id)


def validations_of_round(
    session: Session, problem_id: int, attempt: int
) -> Sequence[ProblemValidation]:
    return session.scalars(
        select(ProblemValidation)
        .where(ProblemValidation.problem_id == problem_id, ProblemValidation.attempt == attempt)
        .order_by(ProblemValidation.gpu_type)
    ).all()


def competition_openings(session: Session, problem_ids: Sequence[int]) -> dict[int, datetime]:
    """Each of these problems' earliest competition opening (problems in no competition are
    absent)."""
    if not problem_ids:
        return {}
    rows = session.execute(
        select(CompetitionProblem.problem_id, func.min(Competition.opens_at))
        .join(Competition, Competition.id == CompetitionProblem.competition_id)
        .where(CompetitionProblem.problem_id.in_(problem_ids))
        .group_by(CompetitionProblem.problem_id)
    ).all()
    return dict(rows)


def in_open_competitions(
    session: Session, now: datetime, problem_ids: Sequence[int] | None = None
) -> set[int]:
    """Which problems (of these, or of all) are in a competition open at ``now``."""
    query = (
        select(CompetitionProblem.problem_id)
        .join(Competition, Competition.id == CompetitionProblem.competition_id)
        .where(Competition.opens_at <= now, Competition.closes_at > now)
        .distinct()
    )
    if problem_ids is not None:
        query = query.where(CompetitionProblem.problem_id.in_(problem_ids))
    return set(session.scalars(query))


def frozen_since(
    session: Session, now: datetime, problem_ids: Sequence[int] | None = None
) -> dict[int, datetime]:
    """The problems (of these, or of all) in a competition whose public board is frozen at
    ``now`` (its freeze time has come and its final results are not published), each with
    the earliest such freeze time."""
    published = (
        select(Judging.id)
        .where(Judging.competition_id == Competition.id, Judging.status == Stored.PUBLISHED)
        .exists()
    )
    query = (
        select(CompetitionProblem.problem_id, func.min(Competition.freeze_at))
        .join(Competition, Competition.id == CompetitionProblem.competition_id)
        .where(Competition.freeze_at <= now, ~published)
        .group_by(CompetitionProblem.problem_id)
    )
    if problem_ids is not None:
        query = query.where(CompetitionProblem.problem_id.in_(problem_ids))
    rows = session.execute(query).all()
    return {problem_id: freeze for problem_id, freeze in rows if freeze is not None}
