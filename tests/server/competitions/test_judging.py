"""The final judging: after the close every entry is graded again K times as submissions of
their own, queued through the outbox; its preview ranks each entry's median beside the
standings at the close; publishing makes those final (and ends the freeze), discarding
keeps the standings. Its runs are on no board and in no count."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from server.cli import app as cli
from server.db import session_scope
from server.models import JudgingRun, OutboxMessage, Submission, utcnow
from server.outbox import jobs
from server.submissions import reports, service
from tests.server.competitions.rig import (
    OPENED,
    add_competition,
    by_team,
    competition_file,
    problems,
    ranked,
    red_and_blue,
    standings,
    time_passes,
)
from tests.server.conftest import PASSED_REPORT, Account
from tests.server.submissions.test_results import record

pytestmark = pytest.mark.anyio

FAILED = {**PASSED_REPORT, "status": "failed", "score": None, "message": "wrong output"}


def passed(score: float) -> dict[str, Any]:
    return {**PASSED_REPORT, "score": score}


async def judge(
    client: httpx.AsyncClient, admin: Account, name: str, **body: Any
) -> httpx.Response:
    return await client.post(
        f"/api/v1/competitions/{name}/judgings", json=body or None, headers=admin.headers
    )


async def judging(client: httpx.AsyncClient, admin: Account, name: str) -> dict[str, Any]:
    response = await client.get(f"/api/v1/competitions/{name}/judging", headers=admin.headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


def runs_of(judging_id: int) -> dict[tuple[int, str], list[int]]:
    """(team id, problem name) -> the judging's run ids."""
    with session_scope() as db:
        rows = db.execute(
            select(JudgingRun.team_id, Submission)
            .join(Submission, Submission.id == JudgingRun.submission_id)
            .where(JudgingRun.judging_id == judging_id)
            .order_by(Submission.id)
        ).all()
        found: dict[tuple[int, str], list[int]] = {}
        for team_id, submission in rows:
            found.setdefault((team_id, submission.problem.name), []).append(submission.id)
        return found


def grade(body: dict[str, Any], team: str, problem: str, reports: list[dict[str, Any]]) -> None:
    """Record a report for each of the team's runs on the problem, in order."""
    [row] = [row for row in body["rows"] if row["team"] == team]
    run_ids = row["entries"][problem]["runs"]
    assert len(run_ids) == len(reports)
    for run_id, report in zip(run_ids, reports, strict=True):
        record(run_id, report)


async def closed_race(
    client: httpx.AsyncClient, admin: Account, how_many: int = 2, **fields: Any
) -> tuple[str, list[str], Account, Account]:
    """Red leads every problem at the close, an hour ago; Blue is second everywhere."""
    names = problems(how_many)
    name, red, blue = await red_and_blue(client, admin, names, **fields)
    for problem in names:
        ranked(red, problem, 1e-3, OPENED + timedelta(hours=1))
        ranked(blue, problem, 2e-3, OPENED + timedelta(hours=2))
    time_passes(name, closes_at=utcnow() - timedelta(hours=1))
    return name, names, red, blue


async def test_a_judging_waits_for_the_close(client: httpx.AsyncClient, admin: Account) -> None:
    name = await add_competition(client, admin, problems(1))
    refused = await judge(client, admin, name)
    assert refused.status_code == 409
    assert "closes at" in refused.json()["detail"]


async def test_each_entry_is_graded_k_times_through_the_outbox(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name, _, _, _ = await closed_race(client, admin)
    started = await judge(client, admin, name, runs=3)
    assert started.status_code == 201, started.text
    body = started.json()
    assert body["status"] == "running" and body["runs"] == 3 and body["total_runs"] == 12
    runs = runs_of(body["id"])
    assert len(runs) == 4 and all(len(ids) == 3 for ids in runs.values())
    with session_scope() as db:
        for ids in runs.values():
            for run_id in ids:
                run = db.get(Submission, run_id)
                assert run is not None
                assert (run.mode, run.status, run.gpu_type) == ("leaderboard", "queued", "cpu")
                [job] = db.scalars(
                    select(OutboxMessage).where(
                        OutboxMessage.job == jobs.Job.GRADE, OutboxMessage.subject_id == run_id
                    )
                ).all()
                assert job.queue == "cpu" and job.done_at is None


async def test_the_preview_ranks_medians_and_drops_failing_entries(
    client: httpx.AsyncClient, admin: Account
) -> None:
    """rank_points, 100 / rank. At the close Red leads both problems (200 to 100). Judged:
    on the first problem Blue's median (2.0 ms) beats Red's (3.0 ms); on the second a run of
    Red's fails, so Red has no entry there: Blue 200, Red 50."""
    name, (first, second), _, _ = await closed_race(client, admin)
    body = (await judge(client, admin, name, runs=3)).json()
    grade(body, "Red", first, [passed(3e-3), passed(2.5e-3), passed(9e-3)])
    grade(body, "Blue", first, [passed(2e-3), passed(2.2e-3), passed(1.8e-3)])
    grade(body, "Red", second, [passed(1e-3), FAILED, passed(1e-3)])
    assert (await judging(client, admin, name))["status"] == "running"
    grade(body, "Blue", second, [passed(2e-3), passed(2e-3), passed(2e-3)])

    shown = await judging(client, admin, name)
    assert shown["status"] == "ready" and shown["graded"] == 12
    rows = {row["team"]: row for row in shown["rows"]}
    assert [row["team"] for row in shown["rows"]] == ["Blue", "Red"]
    assert (rows["Blue"]["rank_before"], rows["Blue"]["rank_after"]) == (2, 1)
    assert (rows["Blue"]["total_before"], rows["Blue"]["total_after"]) == (100.0, 200.0)
    assert (rows["Red"]["rank_before"], rows["Red"]["rank_after"]) == (1, 2)
    assert (rows["Red"]["total_before"], rows["Red"]["total_after"]) == (200.0, 50.0)
    assert rows["Blue"]["moves"] == 1 and rows["Red"]["moves"] == -1
    red_first = rows["Red"]["entries"][first]
    assert red_first["scores"] == [3e-3, 2.5e-3, 9e-3] and red_first["median"] == 3e-3
    # Mean 4.833 ms, sample standard deviation 3.617 ms.
    assert red_first["cv"] == pytest.approx(0.7484, rel=1e-3)
    assert red_first["score_before"] == 1e-3 and not red_first["fails"]
    red_second = rows["Red"]["entries"][second]
    assert red_second["fails"] and red_second["median"] is None
    assert red_second["statuses"] == ["passed", "failed", "passed"]


async def test_the_preview_under_geomean_speedup(client: httpx.AsyncClient, admin: Account) -> None:
    """Baseline 4 ms. At the close Red's 1 ms is a speedup of 4, Blue's 2 ms of 2; judged,
    Red's median is 2 ms (speedup 2) and Blue's 1 ms (4)."""
    names = problems(1)
    name, red, blue = await red_and_blue(
        client,
        admin,
        names,
        scoring="geomean_speedup",
        problems=[{"name": names[0], "baseline_s": 4e-3}],
    )
    ranked(red, names[0], 1e-3, OPENED + timedelta(hours=1))
    ranked(blue, names[0], 2e-3, OPENED + timedelta(hours=2))
    time_passes(name, closes_at=utcnow() - timedelta(hours=1))
    body = (await judge(client, admin, name)).json()
    assert body["runs"] == 5  # the competition's final_runs
    grade(body, "Red", names[0], [passed(s) for s in (2e-3, 1e-3, 4e-3, 2e-3, 3e-3)])
    grade(body, "Blue", names[0], [passed(s) for s in (1e-3, 8e-3, 1e-3, 1e-3, 2e-3)])
    shown = await judging(client, admin, name)
    assert shown["status"] == "ready"
    got = [
        (r["team"], r["rank_before"], r["rank_after"], r["total_before"], r["total_after"])
        for r in shown["rows"]
    ]
    assert got == [("Blue", 2, 1, 2.0, 4.0), ("Red", 1, 2, 4.0, 2.0)]


async def test_publishing_makes_the_judged_standings_final_and_ends_the_freeze(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name, (first,), red, _ = await closed_race(client, admin, how_many=1)
    time_passes(name, freeze_at=utcnow() - timedelta(hours=2))
    # After the freeze: only the organizers' board counts it until the results are final.
    ranked(red, first, 5e-4, utcnow() - timedelta(minutes=90))
    assert (await standings(client, name))["frozen"] is True
    body = (await judge(client, admin, name, runs=1)).json()
    early = await client.post(f"/api/v1/competitions/{name}/judging/publish", headers=admin.headers)
    assert early.status_code == 409 and "running" in early.json()["detail"]
    grade(body, "Red", first, [passed(3e-3)])
    grade(body, "Blue", first, [passed(2e-3)])
    done = await client.post(f"/api/v1/competitions/{name}/judging/publish", headers=admin.headers)
    assert done.status_code == 200 and done.json()["status"] == "published"

    public = await standings(client, name)
    assert public["final"] is True and public["frozen"] is False
    rows = by_team(public)
    assert (rows["Blue"]["rank"], rows["Red"]["rank"]) == (1, 2)
    # The judged score, and the entry it judged (Red's best at the close, made after the
    # freeze).
    assert rows["Blue"]["problems"][first]["score"] == 2e-3
    assert rows["Red"]["problems"][first]["score"] == 3e-3
    with session_scope() as db:
        entry = db.get(Submission, rows["Red"]["problems"][first]["submission_id"])
        assert entry is not None and entry.score == 5e-4 and entry.judging_id is None
    again = await judge(client, admin, name)
    assert again.status_code == 409 and "published" in again.json()["detail"]


async def test_discarding_keeps_the_standings_and_a_new_judging_may_start(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name, (first,), _, _ = await closed_race(client, admin, how_many=1)
    before = await standings(client, name)
    body = (await judge(client, admin, name, runs=2)).json()
    second = await judge(client, admin, name)
    assert second.status_code == 409 and "not decided" in second.json()["detail"]
    grade(body, "Red", first, [passed(9e-3), passed(9e-3)])
    grade(body, "Blue", first, [passed(1e-3), passed(1e-3)])
    done = await client.post(f"/api/v1/competitions/{name}/judging/discard", headers=admin.headers)
    assert done.status_code == 200 and done.json()["status"] == "discarded"
    # The verdicts are kept with the discarded judging.
    assert done.json()["rows"][0]["entries"][first]["scores"] == [1e-3, 1e-3]
    assert await standings(client, name) == before
    retried = await judge(client, admin, name, runs=1)
    assert retried.status_code == 201 and retried.json()["id"] != body["id"]
    assert (await judging(client, admin, name))["id"] == retried.json()["id"]


async def test_judging_runs_are_on_no_board_and_in_no_count(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name, (first,), red, blue = await closed_race(client, admin, how_many=1)
    board = await client.get(f"/api/v1/leaderboards/{first}", params={"gpu": "cpu"})
    before = await standings(client, name, admin)
    body = (await judge(client, admin, name, runs=2)).json()
    grade(body, "Blue", first, [passed(1e-5), passed(1e-5)])
    grade(body, "Red", first, [passed(1e-5), passed(1e-5)])
    after = await client.get(f"/api/v1/leaderboards/{first}", params={"gpu": "cpu"})
    # The rig's entries are written past the results step, so the problem's board is
    # empty: only the runs, recorded as any report, could put something on it.
    assert board.json()["entries"] == after.json()["entries"] == []
    assert await standings(client, name, admin) == before
    for member in (red, blue):
        own = await client.get("/api/v1/submissions", headers=member.headers)
        assert own.status_code == 200, own.text
        listed = {item["id"] for item in own.json()["submissions"]}
        judged = {run_id for ids in runs_of(body["id"]).values() for run_id in ids}
        assert listed and not listed & judged


async def test_a_report_recorded_twice_counts_once(
    client: httpx.AsyncClient, admin: Account
) -> None:
    """A worker that died after grading: its job came again, another worker graded the run,
    and both reports arrived. The first stands; the judging counts the run once."""
    name, (first,), _, _ = await closed_race(client, admin, how_many=1)
    body = (await judge(client, admin, name, runs=2)).json()
    grade(body, "Red", first, [passed(3e-3), passed(3e-3)])
    blue_runs = by_team(body)["Blue"]["entries"][first]["runs"]
    with session_scope() as db:
        service.mark_running(db, blue_runs[0], "gpu-a:1")  # gpu-a dies while grading
    with session_scope() as db:
        service.mark_running(db, blue_runs[0], "gpu-b:1")  # the job came back to gpu-b
        assert service.record_report(db, blue_runs[0], reports.parse(passed(1e-3)), "gpu-b:1")
    with session_scope() as db:  # gpu-a's report, sent before it died, arrives late
        assert not service.record_report(db, blue_runs[0], reports.parse(passed(9e-3)), "gpu-a:1")
    with session_scope() as db:
        graded = db.get(Submission, blue_runs[0])
        assert graded is not None and (graded.worker, graded.score) == ("gpu-b:1", 1e-3)
    shown = await judging(client, admin, name)
    assert shown["status"] == "running" and shown["graded"] == 3
    record(blue_runs[1], passed(2e-3))
    shown = await judging(client, admin, name)
    blue = by_team(shown)["Blue"]["entries"][first]
    assert shown["status"] == "ready" and shown["graded"] == 4 and shown["total_runs"] == 4
    assert blue["scores"] == [1e-3, 2e-3] and blue["median"] == 1.5e-3


async def test_the_command_line_judges_publishes_and_prints_the_body(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name, (first,), _, _ = await closed_race(client, admin, how_many=1)
    started = CliRunner().invoke(cli, ["competition", "judge", name, "--runs", "1"])
    assert started.exit_code == 0, started.output
    judging_id = int(started.output.strip())
    again = CliRunner().invoke(cli, ["competition", "judge", name])
    assert again.exit_code == 1 and "not decided" in again.output
    shown = CliRunner().invoke(cli, ["competition", "judging", name, "--json"])
    assert shown.exit_code == 0, shown.output
    body = json.loads(shown.output)
    assert body["id"] == judging_id and body["status"] == "running"
    for row in body["rows"]:
        assert {"team", "rank_before", "rank_after", "total_before", "total_after"} <= set(row)
    grade(body, "Red", first, [passed(1e-3)])
    grade(body, "Blue", first, [FAILED])
    text = CliRunner().invoke(cli, ["competition", "judging", name])
    assert "ready" in text.output and "FAILS" in text.output
    published = CliRunner().invoke(cli, ["competition", "publish", name])
    assert published.exit_code == 0, published.output
    final = await standings(client, name)
    assert final["final"] is True
    assert [(row["rank"], row["team"]) for row in final["rows"]] == [(1, "Red"), (None, "Blue")]
    discarded = CliRunner().invoke(cli, ["competition", "discard", name])
    assert discarded.exit_code == 1 and "published" in discarded.output


async def test_the_preview_flags_runs_graded_off_the_pinned_fingerprint(
    client: httpx.AsyncClient, admin: Account
) -> None:
    pin = {"device_name": "NVIDIA H200", "driver": "570.124.06"}
    name, (first,), _, _ = await closed_race(client, admin, how_many=1, pin=pin)
    shown = await client.get(f"/api/v1/competitions/{name}", headers=admin.headers)
    assert shown.json()["pin"] == {**pin, "torch": None}
    body = (await judge(client, admin, name, runs=3)).json()
    seen = {"device_name": "NVIDIA H200", "torch": "2.9.0", "driver": "570.124.06"}
    grade(
        body,
        "Red",
        first,
        [
            {**passed(1e-3), "fingerprint": seen},
            {**passed(1e-3), "fingerprint": {**seen, "driver": "575.51.03"}},
            passed(1e-3),  # a worker too old to say
        ],
    )
    red_runs = by_team(body)["Red"]["entries"][first]["runs"]
    judged = by_team(await judging(client, admin, name))
    assert judged["Red"]["entries"][first]["off_pin"] == red_runs[1:]
    assert judged["Blue"]["entries"][first]["off_pin"] == []  # not graded yet


async def test_a_pin_names_something(client: httpx.AsyncClient, admin: Account) -> None:
    body = competition_file(problems(1), pin={})
    refused = await client.post("/api/v1/competitions", json=body, headers=admin.headers)
    assert refused.status_code == 422
    assert "at least one of device_name, driver and torch" in refused.text
