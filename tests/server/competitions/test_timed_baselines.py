"""geomean_speedup with the baselines a worker timed (server/problems/baselines.py): a problem
the competition file gives no ``baseline_s`` counts over the reference's eager score on the
competition's device type, while a ``baseline_s`` in the file overrides the timed one. The
baselines themselves are never a team: no row, no rank, no count."""

from __future__ import annotations

import httpx
import pytest

from server.db import session_scope
from server.models import Baseline
from server.problems import repository
from tests.server.competitions.rig import standings
from tests.server.competitions.test_scoring import EXPECTED, three_teams
from tests.server.conftest import Account

pytestmark = pytest.mark.anyio


def timed(problem_name: str, eager_s: float, gpu_type: str = "cpu") -> None:
    """A worker's baselines of the problem's live version, as the results step records them."""
    with session_scope() as session:
        problem = repository.get_problem(session, problem_name)
        assert problem is not None
        session.add(
            Baseline(
                problem_id=problem.id, problem_version=problem.version, gpu_type=gpu_type,
                status="timed", machine=f"m-{gpu_type}", eager_s=eager_s, compile_s=eager_s / 2,
            )
        )  # fmt: skip


async def test_the_worker_timed_eager_baseline_counts_where_the_file_sets_none(
    client: httpx.AsyncClient, admin: Account
) -> None:
    # The table in test_scoring: P1's baseline is 4 ms, P2's 1 ms, P3's 2 ms. Here the file
    # sets P2's only; P1's and P3's come from the workers, and P2's timed 9 ms is overridden.
    name, names, _, labels = await three_teams(client, admin, "geomean_speedup", (None, 1e-3, None))
    p1, p2, p3 = names
    timed(p1, 4e-3)
    timed(p1, 1.0, gpu_type="h200")  # another device type: not the competition's
    timed(p2, 9e-3)
    timed(p3, 2e-3)
    board = await standings(client, name)
    assert not any("No baseline" in note for note in board["notes"])
    got = [(row["rank"], labels[row["team"]], row["total"]) for row in board["rows"]]
    assert got == [
        (place, team, pytest.approx(total))
        for place, (team, total) in enumerate(EXPECTED["geomean_speedup"], 1)
    ]
    # Three teams, and no row for a baseline.
    assert sorted(labels[row["team"]] for row in board["rows"]) == ["Blue", "Red", "eve"]
