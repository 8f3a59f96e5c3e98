"""Queries for competitions, their teams and members, and the submissions that count."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import func, select
from sqlalchemy.orm import Session, selectinload

from server.leaderboards.repository import Versions, best_first, ranked_conditions
from server.models import (
    Competition,
    CompetitionProblem,
    Judging,
    JudgingRun,
    Problem,
    Submission,
    Team,
    TeamMember,
    User,
)
from server.problems import repository as problems_repository


def get_competition(session: Session, name: str, *, for_update: bool = False) -> Competition | None:
    query = (
        select(Competition)
        .where(Competition.name == name)
        .options(
            selectinload(Competition.problems)
            .selectinload(CompetitionProblem.problem)
            .options(*problems_repository.LIGHT)
        )
    )
    if for_update:
        query = query.with_for_update()
    return session.scalar(query)


def list_competitions(session: Session) -> Sequence[Competition]:
    """The latest to open first."""
    return session.scalars(
        select(Competition).order_by(Competition.opens_at.desc(), Competition.name)
    ).all()


def team_count(session: Session, competition_id: int) -> int:
    return session.scalar(select(func.count()).where(Team.competition_id == competition_id)) or 0


def team_counts(session: Session) -> dict[int, int]:
    """Competition id -> its teams."""
    rows = session.execute(
        select(Team.competition_id, func.count(Team.id)).group_by(Team.competition_id)
    ).all()
    return {competition_id: count for competition_id, count in rows}


def teams(session: Session, competition_id: int) -> Sequence[Team]:
    """The competition's teams with their members, oldest first."""
    return session.scalars(
        select(Team)
        .where(Team.competition_id == competition_id)
        .options(selectinload(Team.members).selectinload(TeamMember.user))
        .order_by(Team.id)
    ).all()


def team_by_name(session: Session, competition_id: int, name: str) -> Team | None:
    """Team names are one whatever their case, as user names are."""
    if "\x00" in name:
        return None
    return session.scalar(
        select(Team).where(
            Team.competition_id == competition_id, func.lower(Team.name) == name.lower()
        )
    )


def team_by_invite(session: Session, competition_id: int, invite: str) -> Team | None:
    if "\x00" in invite:
        return None
    return session.scalar(
        select(Team).where(Team.competition_id == competition_id, Team.invite_code == invite)
    )


def team_of(session: Session, competition_id: int, user_id: int) -> Team | None:
    return session.scalar(
        select(Team)
        .join(TeamMember, TeamMember.team_id == Team.id)
        .where(TeamMember.competition_id == competition_id, TeamMember.user_id == user_id)
    )


def lock_team(session: Session, team_id: int) -> None:
    """Hold the team's row until the commit: one join at a time counts its members (a no-op
    on SQLite, which writes one transaction at a time)."""
    session.execute(select(Team.id).where(Team.id == team_id).with_for_update()).all()


def member_count(session: Session, team_id: int) -> int:
    return session.scalar(select(func.count()).where(TeamMember.team_id == team_id)) or 0


def largest_team(session: Session, competition_id: int) -> tuple[str, int] | None:
    """The competition's team with the most members, and how many."""
    row = session.execute(
        select(Team.name, func.count(TeamMember.user_id).label("members"))
        .join(TeamMember, TeamMember.team_id == Team.id)
        .where(Team.competition_id == competition_id)
        .group_by(Team.id, Team.name)
        .order_by(func.count(TeamMember.user_id).desc(), Team.id)
        .limit(1)
    ).first()
    return None if row is None else (row[0], row[1])


def problems_by_name(session: Session, names: Sequence[str]) -> dict[str, Problem]:
    found = session.scalars(
        select(Problem).where(Problem.name.in_(list(names))).options(*problems_repository.LIGHT)
    ).all()
    return {problem.name: problem for problem in found}


class BestEntry(NamedTuple):
    team_id: int
    submission_id: int
    score: float
    sol_fraction: float | None
    submitted_at: datetime


def best_entries(
    session: Session,
    competition: Competition,
    problem: Problem,
    versions: Versions,
    until: datetime,
    team_id: int | None = None,
) -> Sequence[BestEntry]:
    """Each team's entry on one of the competition's problems: the best (lowest score, then
    earliest) of the submissions that count for it. A submission counts when it is ranked on
    the problem's live leaderboard on the competition's GPU type (``ranked_conditions``: a
    passed, scored leaderboard-mode run, neither hidden nor hacked, on the versions ranked),
    its author is a member of the team and not banned, and it was made while the competition
    was open (from ``opens_at``, before ``until``: the close, or the freeze) and once its
    author had registered. ``team_id``: that team's entry only."""
    conditions = [
        *ranked_conditions(problem.id, competition.gpu_type, versions),
        TeamMember.competition_id == competition.id,
        Submission.created_at >= competition.opens_at,
        Submission.created_at < until,
        Submission.created_at >= TeamMember.registered_at,
        User.is_banned.is_(False),
    ]
    if team_id is not None:
        conditions.append(TeamMember.team_id == team_id)
    best = (
        select(
            TeamMember.team_id,
            Submission.id,
            Submission.score,
            Submission.sol_fraction,
            Submission.created_at,
            best_first(TeamMember.team_id),
        )
        .join(TeamMember, TeamMember.user_id == Submission.user_id)
        .join(User, User.id == Submission.user_id)
        .where(*conditions)
        .subquery()
    )
    rows = session.execute(
        select(best.c.team_id, best.c.id, best.c.score, best.c.sol_fraction, best.c.created_at)
        .where(best.c.place == 1)
        .order_by(best.c.team_id)
    ).all()
    return [BestEntry(*row) for row in rows]


def judgings(session: Session, competition_id: int) -> Sequence[Judging]:
    """The competition's final judgings, oldest first."""
    return session.scalars(
        select(Judging).where(Judging.competition_id == competition_id).order_by(Judging.id)
    ).all()


def judging_runs(session: Session, judging_id: int) -> Sequence[tuple[JudgingRun, Submission]]:
    rows = session.execute(
        select(JudgingRun, Submission)
        .join(Submission, Submission.id == JudgingRun.submission_id)
        .where(JudgingRun.judging_id == judging_id)
        .order_by(JudgingRun.submission_id)
    ).all()
    return [(run, submission) for run, submission in rows]
