"""Near-clones among a competition's entries: pairs of entries to the same problem from
different teams whose winnowing fingerprints (server/competitions/winnowing.py) overlap
at or above ``KJ_CLONE_THRESHOLD`` (Jaccard similarity). Listed for the organizers to read
the code; never acted on: no flag, no disqualification, no change to any standing.

What the problem gives every competitor (its Python files: the template ``submission.py``,
the reference) is no evidence of copying: its fingerprints are taken out of every entry's
before comparing (MOSS's base file), so two entries that are the template barely changed
are no pair. The entries are the standings' own (each team's best counting submission per
problem, at the close once closed, else now; disqualified teams included, as an organizer
reviewing a disqualification wants them).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from sqlalchemy.orm import Session

from server.competitions import repository
from server.competitions.service import get_competition
from server.competitions.standings import entries_by_team
from server.competitions.winnowing import fingerprints, similarity
from server.models import Competition, Problem, Submission, Team, utcnow


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
    given = {entry.problem.name: base(entry.problem) for entry in competition.problems}
    by_problem: dict[str, list[tuple[Side, frozenset[int]]]] = {}
    for team_id, entries in sorted(entries_by_team(session, competition, until).items()):
        for problem, entry in entries.items():
            submission = session.get(Submission, entry.submission_id)
            assert submission is not None
            side = Side(team=teams[team_id], submission=submission)
            prints = fingerprints(submission.code) - given[problem]
            by_problem.setdefault(problem, []).append((side, prints))
    pairs = []
    for problem, sides in by_problem.items():
        for (first, first_prints), (second, second_prints) in combinations(sides, 2):
            found = similarity(first_prints, second_prints)
            if found >= threshold:
                pairs.append(ClonePair(problem, found, first, second))
    pairs.sort(key=lambda p: (-p.similarity, p.problem, p.first.submission.id))
    return competition, pairs


def base(problem: Problem) -> frozenset[int]:
    """The fingerprints of the Python files the problem gives competitors."""
    found: set[int] = set()
    for name, text in problem.files.items():
        if name.endswith(".py") and isinstance(text, str):
            found |= fingerprints(text)
    return frozenset(found)
