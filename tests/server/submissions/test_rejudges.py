"""Rejudges: an organizer selects submissions, they are graded again as submissions of
their own through the outbox (on no board until applied), the preview says what would
change and who would move, and applying gives each its new verdict with the old one kept in
its history; discarding changes nothing."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from server.cli import app as cli
from server.db import session_scope
from server.leaderboards import upkeep
from server.models import OutboxMessage, Problem, Submission, SubmissionFile, utcnow
from server.outbox import jobs
from tests.server.competitions.rig import problems, ranked
from tests.server.conftest import PASSED_REPORT, Account, changed_settings, make_account
from tests.server.submissions.test_results import record
from tests.server.users.test_audit_log import audit_entries

pytestmark = pytest.mark.anyio

FAILED = {**PASSED_REPORT, "status": "failed", "score": None, "message": "wrong output"}
EARLIER = utcnow() - timedelta(days=1)


def passed(score: float) -> dict[str, Any]:
    return {**PASSED_REPORT, "score": score}


async def rejudge(client: httpx.AsyncClient, admin: Account, **body: Any) -> httpx.Response:
    return await client.post("/api/v1/admin/rejudges", json=body, headers=admin.headers)


async def shown(client: httpx.AsyncClient, admin: Account, rejudge_id: int) -> dict[str, Any]:
    response = await client.get(f"/api/v1/admin/rejudges/{rejudge_id}", headers=admin.headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def board(client: httpx.AsyncClient, problem: str) -> list[tuple[str, float]]:
    response = await client.get(f"/api/v1/leaderboards/{problem}", params={"gpu": "cpu"})
    assert response.status_code == 200, response.text
    return [(e["user"], e["score"]) for e in response.json()["entries"]]


def race() -> tuple[str, Account, Account, Account, dict[str, int]]:
    """Red leads (1 ms), Blue is second (2 ms), Green's submission failed."""
    (problem,) = problems(1)
    red, blue, green = make_account(), make_account(), make_account()
    ids = {
        "red": ranked(red, problem, 1e-3, EARLIER),
        "blue": ranked(blue, problem, 2e-3, EARLIER + timedelta(minutes=1)),
        "green": ranked(green, problem, None, EARLIER, status="failed"),
    }
    with session_scope() as db:  # written as rows: the boards are brought up to date here
        upkeep.rebuild(db, db.scalar(select(Problem).where(Problem.name == problem)))
    return problem, red, blue, green, ids


def file_row(submission_id: int, content: bytes) -> SubmissionFile:
    return SubmissionFile(
        submission_id=submission_id,
        name="profile.ncu-rep",
        content=content,
        size=len(content),
        sha256=hashlib.sha256(content).hexdigest(),
    )


def grade_runs(body: dict[str, Any], reports: dict[int, dict[str, Any]]) -> None:
    """Record a report for the run of each original submission named."""
    runs = {change["submission_id"]: change["run_id"] for change in body["changes"]}
    for original, report in reports.items():
        record(runs[original], report)


async def test_the_selection_is_graded_again_through_the_outbox_off_every_board(
    client: httpx.AsyncClient, admin: Account
) -> None:
    problem, red, blue, _, ids = race()
    started = await rejudge(client, admin, problem=problem)
    assert started.status_code == 202, started.text
    assert started.json()["count"] == 3
    body = await shown(client, admin, started.json()["id"])
    assert body["status"] == "running" and (body["graded"], body["total"]) == (0, 3)
    assert body["selection"] == {"problem": problem}
    assert sorted(c["submission_id"] for c in body["changes"]) == sorted(ids.values())
    with session_scope() as db:
        for change in body["changes"]:
            run = db.get(Submission, change["run_id"])
            assert run is not None and run.judging_id == body["id"]
            assert run.status == "queued" and run.code == "x"
            [job] = db.scalars(
                select(OutboxMessage).where(
                    OutboxMessage.job == jobs.Job.GRADE, OutboxMessage.subject_id == run.id
                )
            ).all()
            assert job.queue == "cpu"
    # A run that passes faster is on no board, nor on its author's list, until applied.
    grade_runs(body, {ids["blue"]: passed(5e-4)})
    assert await board(client, problem) == [(red.name, 1e-3), (blue.name, 2e-3)]
    mine = await client.get("/api/v1/submissions", headers=blue.headers)
    assert [s["id"] for s in mine.json()["submissions"]] == [ids["blue"]]
    [entry] = await audit_entries(client, admin, action="rejudge.start", target=str(body["id"]))
    assert entry["details"]["submissions"] == 3


async def test_the_preview_says_who_now_fails_and_who_moves_and_applying_makes_it_so(
    client: httpx.AsyncClient, admin: Account
) -> None:
    problem, red, blue, green, ids = race()
    rejudge_id = (await rejudge(client, admin, problem=problem)).json()["id"]
    body = await shown(client, admin, rejudge_id)
    grade_runs(body, {ids["red"]: FAILED, ids["blue"]: passed(2e-3)})
    early = await client.post(f"/api/v1/admin/rejudges/{rejudge_id}/apply", headers=admin.headers)
    assert early.status_code == 409 and "only a ready one" in early.json()["detail"]
    grade_runs(body, {ids["green"]: passed(3e-3)})
    runs = {c["submission_id"]: c["run_id"] for c in body["changes"]}
    with session_scope() as db:  # a file the red run's grading left beside its report
        db.add(file_row(runs[ids["red"]], b"new"))
        db.add(file_row(ids["red"], b"old"))

    body = await shown(client, admin, rejudge_id)
    assert body["status"] == "ready" and body["changed"] == 2
    changes = {c["submission_id"]: c for c in body["changes"]}
    red_change = changes[ids["red"]]
    assert (red_change["status_before"], red_change["score_before"]) == ("passed", 1e-3)
    assert (red_change["status_after"], red_change["score_after"]) == ("failed", None)
    assert red_change["now_fails"] and not red_change["now_passes"]
    assert changes[ids["green"]]["now_passes"] and not changes[ids["blue"]]["changed"]
    moves = {m["user"]: (m["rank_before"], m["rank_after"]) for m in body["moves"]}
    assert moves == {red.name: (1, None), blue.name: (2, 1), green.name: (None, 2)}

    applied = await client.post(f"/api/v1/admin/rejudges/{rejudge_id}/apply", headers=admin.headers)
    assert applied.status_code == 200, applied.text
    assert applied.json()["status"] == "applied"
    assert await board(client, problem) == [(blue.name, 2e-3), (green.name, 3e-3)]
    mine = (await client.get(f"/api/v1/submissions/{ids['red']}", headers=red.headers)).json()
    assert (mine["status"], mine["score"]) == ("failed", None)
    assert [(v["status"], v["score"]) for v in mine["history"]] == [("passed", 1e-3)]
    with session_scope() as db:
        files = db.scalars(select(SubmissionFile.content).where(
            SubmissionFile.submission_id == ids["red"]
        )).all()  # fmt: skip
        assert files == [b"new"]
    again = await client.post(f"/api/v1/admin/rejudges/{rejudge_id}/discard", headers=admin.headers)
    assert again.status_code == 409 and "applied already" in again.json()["detail"]
    assert await audit_entries(client, admin, action="rejudge.apply", target=str(rejudge_id))


async def test_a_run_graded_on_fewer_ranks_brings_its_mark_to_the_board(
    client: httpx.AsyncClient, admin: Account
) -> None:
    """Applying gives the original its run's ``ranks_scaled`` with its verdict, and its
    leaderboard entry is marked so."""
    problem, red, blue, _, ids = race()
    rejudge_id = (await rejudge(client, admin, problem=problem)).json()["id"]
    flag = "ranks: graded at 2 where a case asks for 4 (this worker offers world sizes 1, 2)"
    scaled = {**passed(1e-3), "flags": [flag]}
    grade_runs(
        await shown(client, admin, rejudge_id),
        {ids["red"]: scaled, ids["blue"]: passed(2e-3), ids["green"]: FAILED},
    )
    applied = await client.post(f"/api/v1/admin/rejudges/{rejudge_id}/apply", headers=admin.headers)
    assert applied.status_code == 200, applied.text
    response = await client.get(f"/api/v1/leaderboards/{problem}", params={"gpu": "cpu"})
    entries = response.json()["entries"]
    assert [(e["user"], e["ranks_scaled"]) for e in entries] == [
        (red.name, True),
        (blue.name, False),
    ]


async def test_a_discarded_rejudge_changes_nothing(
    client: httpx.AsyncClient, admin: Account
) -> None:
    problem, red, blue, _, ids = race()
    rejudge_id = (await rejudge(client, admin, problem=problem, user=red.name)).json()["id"]
    body = await shown(client, admin, rejudge_id)
    assert [c["submission_id"] for c in body["changes"]] == [ids["red"]]
    overlapping = await rejudge(client, admin, problem=problem)
    assert overlapping.status_code == 409
    assert f"rejudge {rejudge_id} already grades" in overlapping.json()["detail"]
    grade_runs(body, {ids["red"]: FAILED})
    discarded = await client.post(
        f"/api/v1/admin/rejudges/{rejudge_id}/discard", headers=admin.headers
    )
    assert discarded.status_code == 200 and discarded.json()["status"] == "discarded"
    assert await board(client, problem) == [(red.name, 1e-3), (blue.name, 2e-3)]
    # Decided: its submissions may be rejudged again.
    assert (await rejudge(client, admin, problem=problem)).status_code == 202
    refused = await client.post(f"/api/v1/admin/rejudges/{rejudge_id}/apply", headers=admin.headers)
    assert refused.status_code == 409


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({}, "at least one filter"),
        ({"problem": "no-such-problem"}, "problem: no problem named"),
        ({"status": "queued"}, "status: 'queued' is no verdict"),
        ({"user": "nobody-at-all"}, "user: no user named"),
        ({"version": 1}, "version: give the problem"),
        ({"since": "yesterday"}, "since"),
        ({"colour": "red"}, "colour"),
    ],
)
async def test_a_bad_filter_is_refused_by_name(
    client: httpx.AsyncClient, admin: Account, body: dict[str, Any], named: str
) -> None:
    refused = await rejudge(client, admin, **body)
    assert refused.status_code == 422, refused.text
    assert named in refused.json()["detail"]


async def test_an_empty_or_too_large_selection_is_refused(
    client: httpx.AsyncClient, admin: Account
) -> None:
    problem, red, *_ = race()
    empty = await rejudge(client, admin, problem=problem, status="timeout")
    assert empty.status_code == 422 and "nothing to rejudge" in empty.json()["detail"]
    wrong_version = await rejudge(client, admin, problem=problem, version=7)
    assert wrong_version.status_code == 422
    assert "version: problem" in wrong_version.json()["detail"]
    with changed_settings(rejudge_max_submissions="2"):
        over = await rejudge(client, admin, problem=problem)
    assert over.status_code == 422 and "at most 2" in over.json()["detail"], over.text
    assert (await rejudge(client, red, problem=problem)).status_code == 403
    missing = await client.get("/api/v1/admin/rejudges/999999", headers=admin.headers)
    assert missing.status_code == 404


async def test_the_command_line_starts_shows_and_applies_a_rejudge(
    client: httpx.AsyncClient, admin: Account
) -> None:
    problem, red, blue, _, ids = race()
    later = (EARLIER + timedelta(seconds=30)).isoformat()
    started = CliRunner().invoke(
        cli, ["rejudge", "start", "--problem", problem, "--status", "passed", "--until", later]
    )
    assert started.exit_code == 0, started.output
    assert started.output.endswith(": 1 submissions queued\n")
    rejudge_id = int(started.output.split()[1].rstrip(":"))
    body = json.loads(
        CliRunner().invoke(cli, ["rejudge", "show", str(rejudge_id), "--json"]).output
    )
    assert [c["submission_id"] for c in body["changes"]] == [ids["red"]]
    grade_runs(body, {ids["red"]: passed(3e-3)})
    text = CliRunner().invoke(cli, ["rejudge", "show", str(rejudge_id)]).output
    assert "ready" in text and f"{red.name}: rank 1 -> 2" in text
    applied = CliRunner().invoke(cli, ["rejudge", "apply", str(rejudge_id)])
    assert applied.exit_code == 0, applied.output
    assert await board(client, problem) == [(blue.name, 2e-3), (red.name, 3e-3)]
    bad = CliRunner().invoke(cli, ["rejudge", "start", "--since", "tomorrow"])
    assert bad.exit_code == 1 and "--since" in bad.output
