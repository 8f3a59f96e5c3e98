"""A competition's standings as a viewer may read them: every team's entries, ranked by the
competition's scoring rule (``scoring``), frozen for the public from the freeze time on.

Who sees what: from ``freeze_at`` until the final results are published, everyone but the
organizers reads the board as it stood at the freeze (only submissions made before it
count); a signed-in member's own team's row counts all its submissions and is marked
``live``, placed where that would put it against the frozen rows (the other rows stay as
frozen). Organizers (admins) read the live board. Disqualified teams come last, unranked,
with the reason; teams without any counting entry come before them, unranked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.orm import Session, object_session

from server.competitions import judging, repository
from server.competitions.schemas import Phase
from server.competitions.scoring import Contender, Entry, Placed, ProblemRule, Scoring, rank
from server.competitions.service import phase, shown_problems, when
from server.leaderboards.service import versions_ranked
from server.models import Competition, CompetitionProblem, Team, User, utcnow
from server.problems import baselines
from server.problems import service as problems


@dataclass(frozen=True)
class Row:
    team: Team
    placed: Placed | None  # None: unranked (no counting entry, or disqualified)
    yours: bool = False
    live: bool = False

    @property
    def rank(self) -> int | None:
        return None if self.placed is None else self.placed.rank

    @property
    def members(self) -> list[str]:
        return [member.user.name for member in self.team.members]


@dataclass(frozen=True)
class Board:
    competition: Competition
    phase: Phase
    scoring: Scoring
    frozen: bool
    final: bool
    problems: list[CompetitionProblem]  # those the viewer may see, in order
    rows: list[Row]
    notes: list[str] = field(default_factory=list)

    @property
    def problem_names(self) -> list[str]:
        return [entry.problem.name for entry in self.problems]


def board(session: Session, competition: Competition, viewer: User | None) -> Board:
    now = utcnow()
    scoring = Scoring(competition.scoring)
    published = judging.final_entries(session, competition)
    final = published is not None
    organizer = problems.is_admin(viewer)
    freeze = competition.freeze_at
    frozen_for_public = freeze is not None and now >= freeze and not final
    frozen = frozen_for_public and not organizer
    teams = repository.teams(session, competition.id)
    mine = None
    if viewer is not None:
        mine = next((t for t in teams if any(m.user_id == viewer.id for m in t.members)), None)
    rules = rules_of(competition)
    until = freeze if frozen and freeze is not None else competition.closes_at
    entries = published if published is not None else entries_by_team(session, competition, until)
    rows = ranked_rows(competition, scoring, rules, teams, entries, mine)
    if frozen and mine is not None and mine.disqualified_at is None:
        # The caller's team against the frozen board, its own entries counted whole.
        own = entries_by_team(session, competition, competition.closes_at, team=mine)
        entries = {**entries, mine.id: own.get(mine.id, {})}
        live = ranked_rows(competition, scoring, rules, teams, entries, mine, live=True)
        rows = [
            next(r for r in live if r.team is mine) if row.team is mine else row for row in rows
        ]
    rows.sort(key=lambda row: (row.rank is None, row.rank or 0, not row.yours, row.team.id))
    disqualified = [t for t in teams if t.disqualified_at is not None]
    disqualified.sort(key=lambda t: (t.disqualified_at, t.id))
    rows += [Row(t, None, yours=t is mine) for t in disqualified]
    shown = shown_problems(session, competition, viewer)
    notes = board_notes(
        competition,
        scoring,
        [rule for rule in rules if rule.name in {entry.problem.name for entry in shown}],
        now,
        frozen=frozen,
        final=final,
        yours=frozen and mine is not None,
        organizers_view=frozen_for_public and organizer,
    )
    return Board(
        competition=competition,
        phase=phase(competition, now),
        scoring=scoring,
        frozen=frozen,
        final=final,
        problems=shown,
        rows=rows,
        notes=notes,
    )


def ranked_rows(
    competition: Competition,
    scoring: Scoring,
    rules: list[ProblemRule],
    teams: Sequence[Team],
    entries: dict[int, dict[str, Entry]],
    mine: Team | None,
    *,
    live: bool = False,
) -> list[Row]:
    """A row for each team not disqualified, ranked on ``entries``; ``mine`` marked as the
    viewer's, and with ``live`` as counting all of its submissions."""
    standing = [t for t in teams if t.disqualified_at is None]
    contenders = [Contender(t.id, entries.get(t.id, {})) for t in standing]
    placed = {p.key: p for p in rank(scoring, rules, contenders, competition.points_table)}
    return [Row(t, placed.get(t.id), yours=t is mine, live=live and t is mine) for t in standing]


def ranked_placements(
    competition: Competition, teams: Sequence[Team], entries: dict[int, dict[str, Entry]]
) -> dict[int, Placed]:
    """Team id -> where ``entries`` place it (teams without an entry are absent)."""
    rows = ranked_rows(
        competition, Scoring(competition.scoring), rules_of(competition), teams, entries, None
    )
    return {row.team.id: row.placed for row in rows if row.placed is not None}


def rules_of(competition: Competition) -> list[ProblemRule]:
    """Each problem's weight and geomean_speedup's baseline: the competition file's
    ``baseline_s`` where it sets one (an organizer's override), else the reference's eager
    score as a worker of the competition's device type timed it on the problem's live
    version (server/problems/baselines.py)."""
    session = object_session(competition)
    return [
        ProblemRule(
            entry.problem.name,
            entry.weight,
            entry.baseline_s
            if entry.baseline_s is not None or session is None
            else baselines.eager_s(session, entry.problem, competition.gpu_type),
        )
        for entry in competition.problems
    ]


def entries_by_team(
    session: Session, competition: Competition, until: datetime, team: Team | None = None
) -> dict[int, dict[str, Entry]]:
    """Team id -> problem name -> its entry: the submissions made before ``until`` that count."""
    found: dict[int, dict[str, Entry]] = {}
    for entry in competition.problems:
        problem = entry.problem
        for best in repository.best_entries(
            session,
            competition,
            problem,
            versions_ranked(problem, None),
            until,
            team_id=team.id if team is not None else None,
        ):
            found.setdefault(best.team_id, {})[problem.name] = Entry(
                submission_id=best.submission_id,
                score=best.score,
                sol_fraction=best.sol_fraction,
                submitted_at=best.submitted_at,
            )
    return found


def board_notes(
    competition: Competition,
    scoring: Scoring,
    rules: Sequence[ProblemRule],
    now: datetime,
    *,
    frozen: bool,
    final: bool,
    yours: bool,
    organizers_view: bool,
) -> list[str]:
    """What a reader should know: the freeze, missing baselines, results not yet final.
    ``rules``: the problems the reader may see."""
    notes = []
    if frozen and competition.freeze_at is not None:
        notes.append(
            f"The board is frozen since {when(competition.freeze_at)}: it counts the "
            "submissions made before then until the final results are published."
        )
    if yours:
        notes.append(
            "Your team's row (marked live) counts all of its submissions, placed where they "
            "would put it against the frozen board."
        )
    if organizers_view and competition.freeze_at is not None:
        notes.append(
            f"The public board is frozen since {when(competition.freeze_at)}; as an organizer "
            "you see every submission."
        )
    if scoring == Scoring.GEOMEAN_SPEEDUP:
        missing = [rule.name for rule in rules if rule.baseline_s is None]
        if missing:
            notes.append(
                f"No baseline time yet for {', '.join(missing)}: left out of the totals until "
                "a worker times the reference or the organizers set one."
            )
    if final:
        notes.append(
            "These are the final results: at the final judging each entry was graded again, "
            "its score the median of those gradings."
        )
    elif now >= competition.closes_at:
        notes.append(
            f"The competition closed at {when(competition.closes_at)}; the results are not "
            "final until the organizers publish them."
        )
    return notes
