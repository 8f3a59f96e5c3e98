"""How a competition ranks its teams, one scoring rule at a time, from each team's entry per
problem: pure functions over plain values, no database needed to test.

Rules (the organizers pick one; a problem's weight multiplies what it counts for):

- ``rank_points``: on each problem the entries are ranked (lowest score first, ties to the
  earlier submission); rank r gets ``points_table[r-1]`` points (0 past the table's end),
  or 100 / r without a table. The total is the weighted sum; higher is better.
- ``mean_rank``: the weighted mean of the team's rank on each problem, a problem without
  an entry counting as rank N + 1 (N: the teams ranked); lower is better.
- ``geomean_speedup``: on each problem, the baseline's time over the entry's score; the
  total is their weighted geometric mean. A problem without an entry counts as speedup 0,
  so a team with every problem solved ranks above any team without; a problem without a
  baseline is left out until the organizers set one (no problem with one: no total).
- ``sol_fraction``: the weighted mean of each entry's speed-of-light fraction (its
  report's, the geometric mean over the benchmark cases); a problem without an entry, or
  an entry whose problem states no roofline, counts 0. Higher is better.

Only teams with at least one entry are ranked. Equal totals go to the team whose entries
were all in place first (the earlier of the latest submissions behind their entries),
then to the team formed first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class Scoring(StrEnum):
    RANK_POINTS = "rank_points"
    MEAN_RANK = "mean_rank"
    GEOMEAN_SPEEDUP = "geomean_speedup"
    SOL_FRACTION = "sol_fraction"

    @property
    def higher_is_better(self) -> bool:
        return self != Scoring.MEAN_RANK

    @property
    def value_means(self) -> str:
        """What an entry's value is under this rule, in a few words."""
        return {
            Scoring.RANK_POINTS: "points",
            Scoring.MEAN_RANK: "rank",
            Scoring.GEOMEAN_SPEEDUP: "speedup over the baseline",
            Scoring.SOL_FRACTION: "speed-of-light fraction",
        }[self]


DEFAULT_RANK_POINTS = 100.0
# Totals are compared to this many significant digits: sums of the same points in another
# order tie, as they should, instead of differing in the last bit.
TOTAL_DIGITS = 12


@dataclass(frozen=True)
class Entry:
    """A team's best counting submission to one problem."""

    submission_id: int
    score: float  # seconds
    sol_fraction: float | None
    submitted_at: datetime


@dataclass(frozen=True)
class ProblemRule:
    name: str
    weight: float = 1.0
    baseline_s: float | None = None


@dataclass(frozen=True)
class Contender:
    """A team to rank: its key (the team's id, lower for a team formed earlier) and its
    entries by problem name."""

    key: int
    entries: Mapping[str, Entry]


@dataclass(frozen=True)
class Cell:
    """A team's entry on one problem as ranked: its rank among the problem's entries and
    what it counts for under the rule (None where it counts for nothing yet: no baseline)."""

    rank: int
    entry: Entry
    value: float | None


@dataclass(frozen=True)
class Placed:
    key: int
    rank: int
    total: float | None
    cells: dict[str, Cell]
    # When its entries were all in place: the latest submission behind them.
    reached_at: datetime


def problem_ranks(problem: str, contenders: Sequence[Contender]) -> dict[int, int]:
    """Each contender with an entry on ``problem``: its rank there, lowest score first, ties
    to the earlier submission (then the lower submission id)."""
    having = [c for c in contenders if problem in c.entries]
    having.sort(
        key=lambda c: (
            c.entries[problem].score,
            c.entries[problem].submitted_at,
            c.entries[problem].submission_id,
        )
    )
    return {c.key: place for place, c in enumerate(having, start=1)}


def rank_points(rank: int, table: Sequence[float] | None) -> float:
    if table is None:
        return DEFAULT_RANK_POINTS / rank
    return float(table[rank - 1]) if rank <= len(table) else 0.0


def value_of(
    scoring: Scoring, problem: ProblemRule, rank: int, entry: Entry, table: Sequence[float] | None
) -> float | None:
    """What one entry counts for, before its problem's weight."""
    if scoring == Scoring.RANK_POINTS:
        return rank_points(rank, table)
    if scoring == Scoring.MEAN_RANK:
        return float(rank)
    if scoring == Scoring.GEOMEAN_SPEEDUP:
        if problem.baseline_s is None or entry.score <= 0:
            return None
        return problem.baseline_s / entry.score
    return entry.sol_fraction


def total_of(
    scoring: Scoring,
    problems: Sequence[ProblemRule],
    cells: Mapping[str, Cell],
    ranked_teams: int,
) -> float | None:
    """The team's total over every problem, missing entries counted as the rule says."""
    missing = float(ranked_teams + 1) if scoring == Scoring.MEAN_RANK else 0.0

    def counted(problem: ProblemRule) -> float:
        cell = cells.get(problem.name)
        return missing if cell is None or cell.value is None else cell.value

    if scoring == Scoring.GEOMEAN_SPEEDUP:
        timed = [(p.weight, counted(p)) for p in problems if p.baseline_s is not None]
        if not timed:
            return None
        if any(speedup <= 0 for _, speedup in timed):
            return 0.0
        weights = sum(weight for weight, _ in timed)
        return math.exp(sum(weight * math.log(speedup) for weight, speedup in timed) / weights)
    weighted = sum(p.weight * counted(p) for p in problems)
    if scoring == Scoring.RANK_POINTS:
        return weighted
    return weighted / sum(p.weight for p in problems)


def rank(
    scoring: Scoring,
    problems: Sequence[ProblemRule],
    contenders: Sequence[Contender],
    points_table: Sequence[float] | None = None,
) -> list[Placed]:
    """The contenders with at least one entry, best first, ranked 1, 2, 3, ..."""
    names = {p.name for p in problems}
    ranked = [
        Contender(c.key, {name: e for name, e in c.entries.items() if name in names})
        for c in contenders
        if names & c.entries.keys()
    ]
    ranks = {p.name: problem_ranks(p.name, ranked) for p in problems}
    placed = []
    for contender in ranked:
        cells = {
            p.name: Cell(
                rank=ranks[p.name][contender.key],
                entry=contender.entries[p.name],
                value=value_of(
                    scoring,
                    p,
                    ranks[p.name][contender.key],
                    contender.entries[p.name],
                    points_table,
                ),
            )
            for p in problems
            if p.name in contender.entries
        }
        placed.append(
            Placed(
                key=contender.key,
                rank=0,
                total=total_of(scoring, problems, cells, len(ranked)),
                cells=cells,
                reached_at=max(cell.entry.submitted_at for cell in cells.values()),
            )
        )
    placed.sort(key=lambda p: order_key(scoring, p))
    return [
        Placed(p.key, place, p.total, p.cells, p.reached_at)
        for place, p in enumerate(placed, start=1)
    ]


def order_key(scoring: Scoring, placed: Placed) -> tuple[int, float, datetime, int]:
    """Better totals first (no total last), then the earlier ``reached_at``, then the team
    formed first."""
    if placed.total is None:
        return (1, 0.0, placed.reached_at, placed.key)
    total = float(f"{placed.total:.{TOTAL_DIGITS}g}")
    return (0, -total if scoring.higher_is_better else total, placed.reached_at, placed.key)
