"""Each scoring rule's standings against totals worked out by hand, on three problems
(weights 1, 2, 1) and three teams: Red (ann, ben), Blue (cat, dan) and eve alone.

    score (seconds), sol fraction      P1 (base 4 ms)   P2 (base 1 ms)   P3 (base 2 ms)
    Red   ann 2 ms at h1, ben 1 ms h2  1 ms, 0.6  #1    0.5 ms, 0.4  #2   —
    Blue  cat h1, dan h2, cat h5       4 ms, 0.2  #3    0.25 ms, 0.3 #1   1 ms, 0.5  #2
    eve   h3, h6                       2 ms, 0.9  #2    —                 0.5 ms, 1.0 #1

rank_points (100 / rank): Red 100 + 2·50 = 200; Blue 33.3 + 2·100 + 50 = 283.3; eve 50 + 100
= 150. mean_rank (no entry: rank 4): Red (1 + 2·2 + 4)/4 = 2.25; Blue (3 + 2·1 + 2)/4 =
1.75; eve (2 + 2·4 + 1)/4 = 2.75. geomean_speedup: Blue (1 · 4² · 2)^(1/4) = 32^(1/4); Red
and eve miss a problem: 0, Red's entries in place first (h4 against h6). sol_fraction:
Red (0.6 + 2·0.4)/4 = 0.35; Blue (0.2 + 2·0.3 + 0.5)/4 = 0.325; eve (0.9 + 1.0)/4 = 0.475."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from server.competitions.scoring import Contender, Entry, ProblemRule, Scoring, rank
from tests.server.competitions.rig import (
    OPENED,
    add_competition,
    by_team,
    enter,
    problems,
    ranked,
    standings,
)
from tests.server.conftest import Account, make_account

pytestmark = pytest.mark.anyio


def h(hours: float) -> datetime:
    return OPENED + timedelta(hours=hours)


async def three_teams(
    client: httpx.AsyncClient, admin: Account, scoring: str, baselines: tuple[float | None, ...]
) -> tuple[str, list[str], dict[str, int], dict[str, str]]:
    """The competition, its problems, the submissions' ids, and each team's name by the
    label the table above gives it (eve's team is named after her user)."""
    p1, p2, p3 = names = problems(3)
    weights = (1, 2, 1)
    name = await add_competition(
        client,
        admin,
        [],
        scoring=scoring,
        problems=[
            {"name": problem, "weight": weight, "baseline_s": baseline}
            for problem, weight, baseline in zip(names, weights, baselines, strict=True)
        ],
    )
    ann, ben, cat, dan, eve = (make_account() for _ in range(5))
    await enter(client, name, ann, ben, team="Red")
    await enter(client, name, cat, dan, team="Blue")
    solo = await enter(client, name, eve)
    ids = {
        "ann p1": ranked(ann, p1, 2e-3, h(1), sol_fraction=0.95),  # beaten by ben's
        "ben p1": ranked(ben, p1, 1e-3, h(2), sol_fraction=0.6),
        "ben p2": ranked(ben, p2, 5e-4, h(4), sol_fraction=0.4),
        "cat p1": ranked(cat, p1, 4e-3, h(1), sol_fraction=0.2),
        "dan p2": ranked(dan, p2, 2.5e-4, h(2), sol_fraction=0.3),
        "cat p3": ranked(cat, p3, 1e-3, h(5), sol_fraction=0.5),
        "eve p1": ranked(eve, p1, 2e-3, h(3), sol_fraction=0.9),
        "eve p3": ranked(eve, p3, 5e-4, h(6), sol_fraction=1.0),
    }
    labels = {"Red": "Red", "Blue": "Blue", solo: "eve"}
    return name, names, ids, labels


BASELINES = (4e-3, 1e-3, 2e-3)
EXPECTED = {
    "rank_points": [("Blue", 100 / 3 + 200 + 50), ("Red", 200.0), ("eve", 150.0)],
    "mean_rank": [("Blue", 1.75), ("Red", 2.25), ("eve", 2.75)],
    "geomean_speedup": [("Blue", 32**0.25), ("Red", 0.0), ("eve", 0.0)],
    "sol_fraction": [("eve", 0.475), ("Red", 0.35), ("Blue", 0.325)],
}
# Each entry's value under each rule: P1, P2, P3 by team (None: no entry).
VALUES = {
    "rank_points": {"Red": (100, 50, None), "Blue": (100 / 3, 100, 50), "eve": (50, None, 100)},
    "mean_rank": {"Red": (1, 2, None), "Blue": (3, 1, 2), "eve": (2, None, 1)},
    "geomean_speedup": {"Red": (4, 2, None), "Blue": (1, 4, 2), "eve": (2, None, 4)},
    "sol_fraction": {"Red": (0.6, 0.4, None), "Blue": (0.2, 0.3, 0.5), "eve": (0.9, None, 1.0)},
}


@pytest.mark.parametrize("scoring", list(EXPECTED))
async def test_each_rule_ranks_the_teams_as_worked_out_by_hand(
    client: httpx.AsyncClient, admin: Account, scoring: str
) -> None:
    name, names, ids, labels = await three_teams(client, admin, scoring, BASELINES)
    board = await standings(client, name)
    assert board["scoring"] == scoring and not board["frozen"] and not board["final"]
    got = [(row["rank"], labels[row["team"]], row["total"]) for row in board["rows"]]
    assert got == [
        (place, team, pytest.approx(total))
        for place, (team, total) in enumerate(EXPECTED[scoring], 1)
    ]
    rows = {labels[team]: row for team, row in by_team(board).items()}
    for team, values in VALUES[scoring].items():
        cells = rows[team]["problems"]
        assert set(cells) == {p for p, v in zip(names, values, strict=True) if v is not None}
        for problem, value in zip(names, values, strict=True):
            if value is not None:
                assert cells[problem]["value"] == pytest.approx(value), (team, problem)
    # The team's entry is its members' best: ben's, not ann's.
    assert rows["Red"]["problems"][names[0]]["submission_id"] == ids["ben p1"]
    assert len(rows["Red"]["members"]) == 2 and rows["eve"]["members"] == [rows["eve"]["team"]]


async def test_a_rank_points_table_gives_each_rank_its_points(
    client: httpx.AsyncClient, admin: Account
) -> None:
    problem_names = problems(1)
    table_name = await add_competition(client, admin, problem_names, points_table=[10, 6])
    teams = [make_account() for _ in range(3)]
    for place, member in enumerate(teams):
        await enter(client, table_name, member)
        ranked(member, problem_names[0], 1e-3 * (place + 1), h(1))
    board = await standings(client, table_name)
    assert [(row["rank"], row["total"]) for row in board["rows"]] == [(1, 10), (2, 6), (3, 0)]


async def test_without_a_baseline_a_problem_is_left_out_and_the_board_says_so(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name, names, _, labels = await three_teams(client, admin, "geomean_speedup", (4e-3, 1e-3, None))
    board = await standings(client, name)
    assert board["notes"] == [
        f"No baseline time yet for {names[2]}: left out of the totals until a worker times "
        "the reference or the organizers set one."
    ]
    # Over P1 and P2: Red (4 · 2²)^(1/3) = 16^(1/3), Blue (1 · 4²)^(1/3) = 16^(1/3): a tie,
    # to Red, whose entries were in place at h4 (Blue's last one came at h5).
    rows = {labels[team]: row for team, row in by_team(board).items()}
    assert [(row["rank"], labels[row["team"]]) for row in board["rows"]] == [
        (1, "Red"),
        (2, "Blue"),
        (3, "eve"),
    ]
    assert rows["Red"]["total"] == pytest.approx(16 ** (1 / 3))
    assert rows["Blue"]["total"] == pytest.approx(16 ** (1 / 3))
    assert rows["Red"]["reached_at"] < rows["Blue"]["reached_at"]
    assert rows["Blue"]["problems"][names[2]]["value"] is None
    assert rows["eve"]["total"] == 0.0


async def test_equal_totals_go_to_the_team_whose_entries_came_first(
    client: httpx.AsyncClient, admin: Account
) -> None:
    p1, p2 = names = problems(2)
    name = await add_competition(client, admin, names)
    early, late, slow = make_account(), make_account(), make_account()
    for member in (late, early, slow):
        await enter(client, name, member)
    # A tie on P1's score: the earlier submission ranks first there.
    ranked(early, p1, 2e-3, h(3))
    ranked(slow, p1, 2e-3, h(4))
    # late wins P2 at h5, early's P1 came at h3: 100 points each, early first.
    ranked(late, p2, 1e-3, h(5))
    board = await standings(client, name)
    rows = [(row["rank"], row["team"], row["total"]) for row in board["rows"]]
    assert rows == [(1, early.name, 100.0), (2, late.name, 100.0), (3, slow.name, 50.0)]
    assert by_team(board)[slow.name]["problems"][p1]["rank"] == 2


async def test_teams_without_an_entry_are_listed_unranked(
    client: httpx.AsyncClient, admin: Account
) -> None:
    names = problems(1)
    name = await add_competition(client, admin, names, scoring="mean_rank")
    ada, bob = make_account(), make_account()
    await enter(client, name, ada, team="Idle")
    await enter(client, name, bob, team="Busy")
    ranked(bob, names[0], 1e-3, h(1))
    board = await standings(client, name)
    assert [(row["team"], row["rank"], row["total"], row["problems"]) for row in board["rows"]][
        1:
    ] == [("Idle", None, None, {})]
    # Ranked teams alone count as N: Busy is rank 1 of 1.
    assert board["rows"][0]["total"] == 1.0


def test_totals_that_differ_only_in_the_last_bit_tie() -> None:
    """(0.1 + 0.2) / 2 and 0.3 / 2 are one total, though not one float: the tie goes to the
    team whose entries came first, not to a rounding error."""
    at = datetime(2027, 1, 1, tzinfo=UTC)
    rules = [ProblemRule("a"), ProblemRule("b")]
    later = Contender(
        1,
        {
            "a": Entry(1, 1.0, 0.1, at + timedelta(hours=2)),
            "b": Entry(2, 1.0, 0.2, at),
        },
    )
    earlier = Contender(2, {"a": Entry(3, 2.0, 0.3, at + timedelta(hours=1))})
    assert (0.1 + 0.2) / 2 > 0.3 / 2
    placed = rank(Scoring.SOL_FRACTION, rules, [later, earlier])
    assert [(p.key, p.rank) for p in placed] == [(2, 1), (1, 2)]
