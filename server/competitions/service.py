"""Adding and editing competitions (until they open, each change in the audit log), teams
entering them, and disqualifying a team."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from server.audit import service as audit
from server.competitions import repository
from server.competitions.schemas import CompetitionFile, Phase, Pin, ProblemInFile
from server.competitions.scoring import Scoring
from server.errors import BadRequest, Conflict, Forbidden, NotFound, existing
from server.models import Competition, CompetitionProblem, Team, TeamMember, User, utcnow
from server.problems import service as problems
from server.settings import Settings
from server.users.service import banned_message

INVITE_BYTES = 16  # 128 random bits


def when(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC"


def phase(competition: Competition, now: datetime | None = None) -> Phase:
    now = now or utcnow()
    if now < competition.opens_at:
        return Phase.UPCOMING
    return Phase.OPEN if now < competition.closes_at else Phase.CLOSED


def schedule(competition: Competition) -> dict[str, Any]:
    """Where and when a competition runs, by the names its file, its summary and its
    standings give these fields."""
    return dict(
        gpu=competition.gpu_type,
        opens_at=competition.opens_at,
        closes_at=competition.closes_at,
        freeze_at=competition.freeze_at,
    )


def get_competition(session: Session, name: str) -> Competition:
    return existing(repository.get_competition(session, name), f"no competition named {name!r}")


def list_competitions(session: Session) -> Sequence[Competition]:
    return repository.list_competitions(session)


def shown_problems(
    session: Session, competition: Competition, viewer: User | None
) -> list[CompetitionProblem]:
    """The competition's problems a viewer may see: all of them for admins, for everyone
    else those shown to everyone (a problem hidden until it opens stays hidden here too)."""
    return [
        entry
        for entry in competition.problems
        if problems.is_admin(viewer) or problems.shown_to_everyone(session, entry.problem)
    ]


# Adding and editing


def file_of(competition: Competition) -> dict[str, Any]:
    """The competition as its file states it, in JSON's terms: what an edit compares."""
    return CompetitionFile(
        name=competition.name,
        title=competition.title,
        description=competition.description,
        problems=[
            ProblemInFile(name=entry.problem.name, weight=entry.weight, baseline_s=entry.baseline_s)
            for entry in competition.problems
        ],
        **schedule(competition),
        scoring=Scoring(competition.scoring),
        team_size=competition.team_size,
        final_runs=competition.final_runs,
        points_table=competition.points_table,
        pin=Pin.model_validate(competition.pin) if competition.pin is not None else None,
        judging_queue=competition.judging_queue,
    ).model_dump(mode="json")


def create_competition(
    session: Session, settings: Settings, file: CompetitionFile, actor: User | None
) -> Competition:
    """A new competition from its file, audited as ``competition.create`` (the command line's
    actor is None)."""
    if repository.get_competition(session, file.name) is not None:
        raise Conflict(f"a competition named {file.name!r} exists already; edit it instead")
    now = utcnow()
    competition = Competition(name=file.name, created_at=now, updated_at=now)
    apply_file(session, settings, competition, file)
    session.add(competition)
    flush_unique(session, f"a competition named {file.name!r} exists already")
    audit.record(
        session,
        actor,
        "competition.create",
        target_type="competition",
        target=competition.name,
        details={"file": file.model_dump(mode="json")},
    )
    return competition


def edit_competition(
    session: Session, settings: Settings, name: str, file: CompetitionFile, actor: User | None
) -> tuple[Competition, list[str]]:
    """The competition's fields replaced by the file's, until it opens; audited as
    ``competition.edit`` with each changed field's ``[before, after]`` (an edit that
    changes nothing is no change, and leaves no entry). Returns it and the fields changed."""
    competition = existing(
        repository.get_competition(session, name, for_update=True),
        f"no competition named {name!r}",
    )
    if file.name != competition.name:
        raise BadRequest(
            f"the file names {file.name!r}, not {competition.name!r}: a competition's name is "
            "its URL and stays as it is"
        )
    now = utcnow()
    if phase(competition, now) != Phase.UPCOMING:
        raise Conflict(
            f"competition {competition.name!r} opened at {when(competition.opens_at)}; it can "
            "no longer be changed"
        )
    largest = repository.largest_team(session, competition.id)
    if largest is not None and largest[1] > file.team_size:
        raise Conflict(
            f"team {largest[0]!r} has {largest[1]} members already: team_size cannot go "
            f"below {largest[1]}"
        )
    before = file_of(competition)
    after = file.model_dump(mode="json")
    changed = [key for key in after if before[key] != after[key]]
    if not changed:
        return competition, []
    apply_file(session, settings, competition, file)
    competition.updated_at = now
    session.flush()
    audit.record(
        session,
        actor,
        "competition.edit",
        target_type="competition",
        target=competition.name,
        details={"changes": {key: [before[key], after[key]] for key in changed}},
    )
    return competition, changed


def apply_file(
    session: Session, settings: Settings, competition: Competition, file: CompetitionFile
) -> None:
    """Set the competition's fields from its file, once every problem it names exists and is
    offered on its GPU type."""
    found = repository.problems_by_name(session, [entry.name for entry in file.problems])
    unknown = [entry.name for entry in file.problems if entry.name not in found]
    if unknown:
        raise BadRequest(f"no problem named {', '.join(map(repr, unknown))}")
    for entry in file.problems:
        if found[entry.name].owner_id is not None:
            raise BadRequest(
                f"problem {entry.name!r} is an author's own (private to it, its reference "
                "untrusted): a competition holds only organizers' problems"
            )
        offered = problems.gpu_types_for(found[entry.name], settings)
        if file.gpu not in offered:
            raise BadRequest(
                f"problem {entry.name!r} is not offered on GPU type {file.gpu!r} here "
                f"(it is on: {', '.join(offered) or 'none'})"
            )
    competition.title = file.title
    competition.description = file.description
    competition.gpu_type = file.gpu
    competition.opens_at = file.opens_at
    competition.closes_at = file.closes_at
    competition.freeze_at = file.freeze_at
    competition.scoring = file.scoring.value
    competition.points_table = file.points_table
    competition.team_size = file.team_size
    competition.final_runs = file.final_runs
    competition.pin = file.pin.model_dump(exclude_none=True) if file.pin is not None else None
    competition.judging_queue = file.judging_queue
    competition.problems = [
        CompetitionProblem(
            problem=found[entry.name],
            position=position,
            weight=entry.weight,
            baseline_s=entry.baseline_s,
        )
        for position, entry in enumerate(file.problems)
    ]


def save_competition(
    session: Session, settings: Settings, file: CompetitionFile, actor: User | None
) -> tuple[Competition, str]:
    """The command line's add: a new competition, or an edit of the one of that name
    (until it opens). Returns it and what happened: created, edited or unchanged."""
    if repository.get_competition(session, file.name) is None:
        return create_competition(session, settings, file, actor), "created"
    competition, changed = edit_competition(session, settings, file.name, file, actor)
    return competition, "edited" if changed else "unchanged"


def flush_unique(session: Session, clash: str) -> None:
    """Flush, turning a unique constraint's refusal (a request racing this one to the same
    row) into the Conflict a check before would have raised."""
    try:
        session.flush()
    except IntegrityError as exc:
        raise Conflict(clash) from exc


# Teams


def team_of(session: Session, competition: Competition, user: User | None) -> Team | None:
    if user is None:
        return None
    return repository.team_of(session, competition.id, user.id)


def open_to_teams(session: Session, competition_name: str, user: User) -> Competition:
    """The competition a user forms or joins a team in: it exists, has not closed, and the
    user is in no team of it yet."""
    if user.is_banned:
        raise Forbidden(banned_message(session, user))
    competition = get_competition(session, competition_name)
    if phase(competition) == Phase.CLOSED:
        raise Conflict(
            f"competition {competition.name!r} closed at {when(competition.closes_at)}; teams "
            "can no longer be formed or joined"
        )
    mine = repository.team_of(session, competition.id, user.id)
    if mine is not None:
        raise Conflict(
            f"you are in team {mine.name!r} of competition {competition.name!r} already: one "
            "team per competition"
        )
    return competition


def create_team(session: Session, competition_name: str, user: User, team_name: str) -> Team:
    """A new team with the user as its first member (which registers them), and an invite
    code for the others."""
    competition = open_to_teams(session, competition_name, user)
    if repository.team_by_name(session, competition.id, team_name) is not None:
        raise Conflict(
            f"competition {competition.name!r} has a team named {team_name!r} already "
            "(names are one whatever their case); choose another name, or join it with its "
            "invite code"
        )
    team = Team(
        competition_id=competition.id,
        name=team_name,
        invite_code=secrets.token_urlsafe(INVITE_BYTES),
        created_at=utcnow(),
    )
    session.add(team)
    flush_unique(session, f"competition {competition.name!r} has a team named {team_name!r}")
    add_member(session, competition, team, user)
    return team


def register_alone(session: Session, competition_name: str, user: User) -> Team:
    """The user enters alone: a team of one named after them."""
    return create_team(session, competition_name, user, user.name)


def join_team(session: Session, competition_name: str, user: User, invite: str) -> Team:
    competition = open_to_teams(session, competition_name, user)
    team = repository.team_by_invite(session, competition.id, invite)
    if team is None:
        raise NotFound(
            f"no team of competition {competition.name!r} has this invite code; ask your team "
            "for it again"
        )
    if team.disqualified_at is not None:
        raise Conflict(f"team {team.name!r} is disqualified: {team.disqualified_reason}")
    repository.lock_team(session, team.id)
    members = repository.member_count(session, team.id)
    if members >= competition.team_size:
        raise Conflict(f"team {team.name!r} is full: {members} of {competition.team_size} members")
    add_member(session, competition, team, user)
    return team


def add_member(session: Session, competition: Competition, team: Team, user: User) -> None:
    """The user joins (and so registers): their submissions count from now on."""
    session.add(
        TeamMember(
            team_id=team.id, user_id=user.id, competition_id=competition.id, registered_at=utcnow()
        )
    )
    flush_unique(
        session,
        f"you are in a team of competition {competition.name!r} already: one team per competition",
    )
    session.refresh(team, ["members"])


def member_names(team: Team) -> list[str]:
    return [member.user.name for member in team.members]


# Moderation


def disqualify(
    session: Session, competition_name: str, team_name: str, reason: str, admin: User | None
) -> Team:
    """Take a team off the ranking, its reason shown with it; audited as
    ``team.disqualify``."""
    competition = get_competition(session, competition_name)
    team = repository.team_by_name(session, competition.id, team_name)
    if team is None:
        raise NotFound(f"competition {competition.name!r} has no team named {team_name!r}")
    if team.disqualified_at is not None:
        raise Conflict(
            f"team {team.name!r} was disqualified at {when(team.disqualified_at)}: "
            f"{team.disqualified_reason}"
        )
    team.disqualified_at = utcnow()
    team.disqualified_reason = reason
    team.disqualified_by_id = admin.id if admin is not None else None
    session.flush()
    audit.record(
        session,
        admin,
        "team.disqualify",
        target_type="team",
        target=f"{competition.name}/{team.name}",
        details={"competition": competition.name, "team": team.name, "reason": reason},
    )
    return team
