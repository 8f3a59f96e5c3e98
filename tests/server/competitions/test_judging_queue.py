"""A competition's ``judging_queue``: its final judging's runs go to that queue (the pinned
machines' workers take it) instead of its GPU type's, and keep the competition's GPU type;
the judging says which queue it waits on. Without one, they go to the GPU type's queue."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from sqlalchemy import select
from typer.testing import CliRunner

from server.cli import app as cli
from server.competitions import service
from server.competitions.schemas import CompetitionFile
from server.db import session_scope
from server.models import Judging, OutboxMessage, Submission
from server.outbox import dispatch, jobs
from server.submissions import service as submissions
from server.worker import recorders
from tests.server.competitions.rig import (
    LATER,
    by_team,
    competition_file,
    iso,
    problems,
    unique,
)
from tests.server.competitions.test_judging import (
    closed_race,
    grade,
    judge,
    passed,
    runs_of,
)
from tests.server.conftest import Account
from tests.server.web.test_competition_review import act, followed, organizer
from tests.server.web_client import HTML

pytestmark = pytest.mark.anyio
WEEK = timedelta(days=7)
PIN = {"device_name": "NVIDIA H200", "driver": "570.124.06", "torch": "2.9.0"}


def queues_of(run_ids: list[int]) -> dict[int, tuple[str, str]]:
    """Each run's (GPU type, the queue its grading job was written for), from the outbox."""
    with session_scope() as db:
        found = {}
        for run_id in run_ids:
            run = db.get(Submission, run_id)
            assert run is not None
            [job] = db.scalars(
                select(OutboxMessage).where(
                    OutboxMessage.job == jobs.Job.GRADE, OutboxMessage.subject_id == run_id
                )
            ).all()
            found[run_id] = (run.gpu_type, job.queue)
        return found


def all_runs(judging_id: int) -> list[int]:
    return [run_id for ids in runs_of(judging_id).values() for run_id in ids]


@pytest.mark.parametrize("named", [True, False])
async def test_the_judging_runs_are_enqueued_on_the_judging_queue_if_named(
    client: httpx.AsyncClient, admin: Account, named: bool
) -> None:
    fields: dict[str, Any] = {"pin": PIN}
    expected = "cpu"
    if named:
        expected = fields["judging_queue"] = unique("final")
    name, _, _, _ = await closed_race(client, admin, **fields)
    started = await judge(client, admin, name, runs=2)
    assert started.status_code == 201, started.text
    body = started.json()
    assert body["queue"] == expected
    if named:  # a queue of its own: no worker has been seen on it (other tests run cpu ones)
        assert body["queue_workers"] == 0
    runs = all_runs(body["id"])
    assert len(runs) == 8
    # The run stays the competition's GPU type: graded and recorded as one of it.
    assert set(queues_of(runs).values()) == {("cpu", expected)}


async def test_a_pinned_worker_on_the_judging_queue_grades_its_runs_as_on_the_device_queue(
    client: httpx.AsyncClient, admin: Account
) -> None:
    queue = unique("final")
    name, (first,), _, _ = await closed_race(
        client, admin, how_many=1, pin=PIN, judging_queue=queue
    )
    body = (await judge(client, admin, name, runs=2)).json()
    red_runs = by_team(body)["Red"]["entries"][first]["runs"]
    # A worker started with --queues QUEUE says it is there, then takes a run.
    recorders.record_slot("pinned-host:1", [queue])
    with session_scope() as db:
        cpu_slots = dispatch.slots_seen(db, "cpu")
        assert dispatch.slots_seen(db, queue) == 1
        # Its start frees room on the queue it came from, not on the GPU type's...
        assert submissions.mark_running(db, red_runs[0], "pinned-host:1") == queue
    with session_scope() as db:
        # ... and does not make it one of the GPU type's workers.
        assert dispatch.slots_seen(db, "cpu") == cpu_slots
    grade(body, "Red", first, [{**passed(1e-3), "fingerprint": PIN}] * 2)
    grade(body, "Blue", first, [{**passed(2e-3), "fingerprint": {**PIN, "driver": "1"}}] * 2)
    shown = (await client.get(f"/api/v1/competitions/{name}/judging", headers=admin.headers)).json()
    assert shown["status"] == "ready" and shown["queue"] == queue
    rows = by_team(shown)
    # The preview's pin check is the proof of the routing: on the pin, nothing is flagged.
    assert rows["Red"]["entries"][first]["off_pin"] == []
    assert rows["Red"]["entries"][first]["median"] == 1e-3
    assert len(rows["Blue"]["entries"][first]["off_pin"]) == 2
    with session_scope() as db:
        done = db.scalars(
            select(OutboxMessage).where(
                OutboxMessage.job == jobs.Job.GRADE, OutboxMessage.subject_id.in_(red_runs)
            )
        ).all()
        assert {(job.queue, job.done_at is not None) for job in done} == {(queue, True)}


async def test_the_command_line_says_which_queue_the_judging_waits_on(
    client: httpx.AsyncClient, admin: Account
) -> None:
    queue = unique("final")
    name, _, _, _ = await closed_race(client, admin, how_many=1, judging_queue=queue)
    started = CliRunner().invoke(cli, ["competition", "judge", name, "--runs", "1"])
    assert started.exit_code == 0, started.output
    shown = CliRunner().invoke(cli, ["competition", "judging", name])
    assert shown.exit_code == 0, shown.output
    assert (
        f"2 runs wait on queue '{queue}' (no worker seen on it lately: start one with "
        f"kerneljudge worker --queues {queue})"
    ) in shown.output


async def test_the_review_page_names_the_queue_and_its_rejudges_use_it(
    client: httpx.AsyncClient,
) -> None:
    queue = unique("final")
    async with organizer() as (browser, admin):
        name, (first,), _, _ = await closed_race(client, admin, how_many=1, judging_queue=queue)
        page = await followed(browser, await act(browser, name, "judgings", {"runs": "1"}))
        assert (
            f'id="judging-queue">queue <code>{queue}</code>: <span class="bad">no worker seen '
            "on it lately</span>; the runs wait for one (<code>kerneljudge worker --queues "
            f"{queue}</code>)"
        ) in page
        recorders.record_slot("pinned-host:1", [queue])
        dispatch.forget()
        page = (await browser.get(f"/competitions/{name}/review", headers=HTML)).text
        assert f"queue <code>{queue}</code>: 1 grading slot seen lately" in page

        # A rejudge started here grades the competition's GPU type on the pinned workers too.
        await followed(browser, await act(browser, name, "rejudges", {"problem": first}))
        with session_scope() as db:
            [rejudge_id] = db.scalars(
                select(Judging.id).where(Judging.kind == "rejudge").order_by(Judging.id.desc())
            ).all()[:1]
        assert set(queues_of(all_runs(rejudge_id)).values()) == {("cpu", queue)}


async def test_the_judging_queue_is_a_queue_name(client: httpx.AsyncClient, admin: Account) -> None:
    names = problems(1)
    for wrong, said in [
        ("H200 final", "cannot be a queue's name"),
        ("h200,final", "cannot be a queue's name"),
        ("results", "the service's own queue"),
        ("q" * 33, "at most 32 characters"),
    ]:
        body = competition_file(names, judging_queue=wrong)
        refused = await client.post("/api/v1/competitions", json=body, headers=admin.headers)
        assert refused.status_code == 422, wrong
        assert said in refused.text, refused.text


async def test_the_judging_queue_round_trips_through_the_api_and_the_yaml_file(
    client: httpx.AsyncClient, admin: Account, tmp_path: Path
) -> None:
    names = problems(1)
    body = competition_file(names, pin=PIN, judging_queue="h200-final", gpu="cpu")
    added = await client.post("/api/v1/competitions", json=body, headers=admin.headers)
    assert added.status_code == 201, added.text
    read = (await client.get(f"/api/v1/competitions/{body['name']}")).json()
    assert read["judging_queue"] == "h200-final" and read["pin"] == PIN
    with session_scope() as db:
        file = service.file_of(service.get_competition(db, body["name"]))
    # The file an organizer edits (the admin page's YAML) reads back as the one given.
    assert CompetitionFile.model_validate(yaml.safe_load(yaml.safe_dump(file))) == (
        CompetitionFile.model_validate(body)
    )

    # The command line's YAML: changing it is an edit, audited like any.
    later = competition_file(
        names, judging_queue="h200-pinned", opens_at=iso(LATER), closes_at=iso(LATER + WEEK)
    )
    (tmp_path / "c.yml").write_text(yaml.safe_dump(later))
    done = CliRunner().invoke(cli, ["competition", "add", str(tmp_path / "c.yml")])
    assert done.exit_code == 0, done.output
    read = (await client.get(f"/api/v1/competitions/{later['name']}")).json()
    assert read["judging_queue"] == "h200-pinned"
    (tmp_path / "c.yml").write_text(yaml.safe_dump({**later, "judging_queue": None}))
    edited = CliRunner().invoke(cli, ["competition", "add", str(tmp_path / "c.yml")])
    assert edited.exit_code == 0 and "edited" in edited.output, edited.output
    read = (await client.get(f"/api/v1/competitions/{later['name']}")).json()
    assert read["judging_queue"] is None
