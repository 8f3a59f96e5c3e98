"""Near-clones among a competition's entries: pairs of entries to the same problem from
different teams whose winnowing fingerprints (server/competitions/winnowing.py) overlap
at or above ``KJ_CLONE_THRESHOLD`` (Jaccard similarity). Listed for the organizers to read
the code; never acted on: no flag, no disqualification, no change to any standing.

The entries are the standings' own (each team's best counting submission per problem, at
the close once closed, else now; disqualified teams included, as an organizer reviewing a
disqualification wants them).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from sqlalchemy.orm import Session

from server.competitions import repository
from server.competitions.service import get_competition
from server.competitions.standings import entries_by_team
from server.competitions.winnowing import fingerprints, similarity
from server.models import Competition, Submission, Team, utcnow


@dataclass(frozen=True)
class Side:
    team: Team
    submission: Submission


@dataclass(frozen=True)
class ClonePair:
    problem: str
    similarity: float
    first: Side
    second: Side


def near_clones(
    session: Session, name: str, threshold: float
) -> tuple[Competition, list[ClonePair]]:
    """The competition and its pairs at or above ``threshold``, most similar first."""
    competition = get_competition(session, name)
    until = min(utcnow(), competition.closes_at)
    teams = {team.id: team for team in repository.teams(session, competition.id)}
    by_problem: dict[str, list[tuple[Side, frozenset[int]]]] = {}
    for team_id, entries in sorted(entries_by_team(session, competition, until).items()):
        for problem, entry in entries.items():
            submission = session.get(Submission, entry.submission_id)
            assert submission is not None
            side = Side(team=teams[team_id], submission=submission)
            by_problem.setdefault(problem, []).append((side, fingerprints(submission.code)))
    pairs = []
    for problem, sides in by_problem.items():
        for (first, first_prints), (second, second_prints) in combinations(sides, 2):
            found = similarity(first_prints, second_prints)
            if found >= threshold:
                pairs.append(ClonePair(problem, found, first, second))
    pairs.sort(key=lambda p: (-p.similarity, p.problem, p.first.submission.id))
    return competition, pairs
