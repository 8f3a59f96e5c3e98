"""A whole competition for end-to-end tests: three built-in problems, two teams and a solo
entrant, and the standings worked out by hand for rank_points (100 / rank; weights 3, 2
and 1.5). One entry per team: a leaderboard-mode grading takes 20 s or more on two CPU
cores (fresh inputs made and checked for every sample), and the final judging grades each
entry K times more; how entries rank against each other on a problem is
tests/server/competitions/test_scoring.py's.

    entry (submitted in this order)       vectoradd ×3   vectorsum ×2     grayscale ×1.5
    Red   ann: vectorsum                  —              #1 (200)         —
    eve   alone: grayscale                —              —                #1 (150)
    -- the board freezes --
    Blue  cat: vectoradd                  #1 (300)       —                —
    -- it closes --

Frozen (public): Red 200, eve 150, Blue unranked (no entry before the freeze). At the
close (organizers; Blue's own live row while frozen): Blue 300, Red 200, eve 150. The
final judging's medians keep every entry, so its standings are the same."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml

from rig.processes import REPO_ROOT

SOLUTIONS = {
    problem: (REPO_ROOT / "problems" / problem / "solutions" / "pytorch.py").read_text()
    for problem in ("vectoradd", "vectorsum", "grayscale")
}
WEIGHTS = {"vectoradd": 3, "vectorsum": 2, "grayscale": 1.5}


def kernel(problem: str) -> str:
    """The problem's own example solution."""
    return SOLUTIONS[problem]


@dataclass(frozen=True)
class Plan:
    """The competition's times and file."""

    name: str
    opens_at: datetime
    freeze_at: datetime
    closes_at: datetime
    final_runs: int

    @classmethod
    def starting_in(
        cls, name: str, open_in_s: float, open_s: float, frozen_s: float, final_runs: int
    ) -> Plan:
        now = time.time()
        return cls(
            name,
            at(now + open_in_s),
            at(now + open_in_s + open_s),
            at(now + open_in_s + open_s + frozen_s),
            final_runs,
        )

    def fields(self) -> dict[str, Any]:
        """The competition file's fields (docs/competitions.md), as the REST API takes them."""
        return {
            "name": self.name,
            "title": "Three kernels, two teams and eve",
            "description": "Fastest kernels win. By registering you accept these rules.",
            "problems": [{"name": name, "weight": weight} for name, weight in WEIGHTS.items()],
            "gpu": "cpu",
            "opens_at": iso(self.opens_at),
            "freeze_at": iso(self.freeze_at),
            "closes_at": iso(self.closes_at),
            "scoring": "rank_points",
            "team_size": 2,
            "final_runs": self.final_runs,
        }

    def file(self) -> str:
        """The YAML file an organizer writes for `kerneljudge competition add`."""
        return str(yaml.safe_dump(self.fields(), sort_keys=False))


def at(epoch: float) -> datetime:
    return datetime.fromtimestamp(round(epoch), UTC)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def wait_until(moment: datetime, margin_s: float = 0.5) -> None:
    time.sleep(max(0.0, moment.timestamp() + margin_s - time.time()))


# Who submits what, in order: (user, problem), the last one after the freeze.
BEFORE_FREEZE = [("ann", "vectorsum"), ("eve", "grayscale")]
AFTER_FREEZE = [("cat", "vectoradd")]
TEAMS = {"Red": ["ann", "ben"], "Blue": ["cat", "dan"]}
SOLO = "eve"


# (team, total) in rank order; eve's team is named after her.
FROZEN = [("Red", 200.0), ("eve", 150.0), ("Blue", None)]
AT_CLOSE = [("Blue", 300.0), ("Red", 200.0), ("eve", 150.0)]
JUDGED = AT_CLOSE
# The problems each team has an entry on, judged.
JUDGED_ENTRIES = {"Red": {"vectorsum"}, "Blue": {"vectoradd"}, "eve": {"grayscale"}}
ENTRIES = sum(len(problems) for problems in JUDGED_ENTRIES.values())
