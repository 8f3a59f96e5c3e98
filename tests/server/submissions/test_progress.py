"""A running submission's progress: what its worker says while it grades is recorded while it
runs and only then, read in the API body (a ranked run's as counts and phase only), on the
page with its running time, and in the submitter's follow line; the verdict clears it, and
a message that comes after the verdict changes nothing."""

from __future__ import annotations

import io
import itertools
import re
import threading
import time
from datetime import timedelta
from typing import Any
from unittest.mock import patch

import httpx
import pytest
from rich.console import Console

from grader.report import Progress, ProgressPhase
from server.client.follow import Progress as FollowLine
from server.client.follow import describe
from server.db import session_scope
from server.models import Submission, utcnow
from server.settings import get_settings
from server.submissions import payloads, service
from server.submissions import repository as submissions
from server.worker import gpu, progress, recorders
from tests.server.conftest import PASSED_REPORT, Account, add_submission
from tests.server.web_client import HTML, log_in, make_user

pytestmark = pytest.mark.anyio

CASE_3 = {"phase": "benchmark", "case": 3, "cases": 4, "label": "size=1024 seed=6256"}
WORKER = "gpu-host:1.0"


def tell(sid: int, said: dict[str, Any]) -> None:
    """As the results step records a progress message from the worker."""
    recorders.record_progress({"submission_id": sid, "worker": WORKER, "progress": said})


def started(account: Account, mode: str = "benchmark") -> int:
    sid = add_submission(account.name, mode=mode)
    with session_scope() as db:
        service.mark_running(db, sid, WORKER)
    return sid


def stored_progress(sid: int) -> dict[str, Any] | None:
    with session_scope() as db:
        found = db.get(Submission, sid)
        assert found is not None
        return found.progress


async def body(client: httpx.AsyncClient, account: Account, sid: int) -> dict[str, Any]:
    shown = await client.get(f"/api/v1/submissions/{sid}", headers=account.headers)
    assert shown.status_code == 200, shown.text
    found: dict[str, Any] = shown.json()
    return found


async def test_progress_is_shown_while_running_and_gone_with_the_verdict(
    client: httpx.AsyncClient, alice: Account
) -> None:
    sid = add_submission(alice.name, mode="benchmark")
    tell(sid, CASE_3)  # before its worker's "started": nothing to show yet
    assert stored_progress(sid) is None
    with session_scope() as db:
        service.mark_running(db, sid, WORKER)
    assert (await body(client, alice, sid))["progress"] is None
    tell(sid, {"phase": "load"})
    assert (await body(client, alice, sid))["progress"] == {
        "phase": "load",
        "case": 0,
        "cases": 0,
        "label": None,
    }
    tell(sid, CASE_3)
    assert (await body(client, alice, sid))["progress"] == CASE_3

    recorders.record_report({"submission_id": sid, "worker": WORKER, "report": PASSED_REPORT})
    assert stored_progress(sid) is None
    tell(sid, {**CASE_3, "case": 4})  # sent before the verdict, come after it
    assert stored_progress(sid) is None
    shown = await body(client, alice, sid)
    assert shown["status"] == "passed" and shown["progress"] is None


async def test_a_ranked_run_s_progress_says_counts_and_phase_only(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    sid = started(alice, mode="leaderboard")
    tell(sid, CASE_3)
    assert (await body(client, alice, sid))["progress"] == {**CASE_3, "label": None}
    assert (await body(client, admin, sid))["progress"] == CASE_3


async def test_a_re_run_starts_with_no_progress(alice: Account) -> None:
    sid = started(alice)
    tell(sid, CASE_3)
    recorders.record_report({"submission_id": sid, "worker": WORKER, "report": PASSED_REPORT})
    with session_scope() as db:
        found = db.get(Submission, sid)
        assert found is not None
        service.reset_for_rerun(found)
    tell(sid, CASE_3)  # the old grading's, late: the re-run is only queued
    assert stored_progress(sid) is None


@pytest.mark.parametrize(
    "said",
    [
        {"phase": "benchmark", "case": 5, "cases": 4},
        {"phase": "lunch"},
        {"phase": "test", "case": -1, "cases": 2},
        "case 3",
    ],
)
def test_a_malformed_progress_message_is_dropped(
    alice: Account, said: Any, caplog: pytest.LogCaptureFixture
) -> None:
    sid = started(alice)
    tell(sid, said)
    assert stored_progress(sid) is None
    assert "refused" in caplog.text


async def test_the_page_shows_the_case_and_running_time_and_the_slot_to_admins_only(
    client: httpx.AsyncClient, browser: httpx.AsyncClient
) -> None:
    author, _ = make_user("runner")
    organizer, _ = make_user("organizer", admin=True)
    sid = add_submission(author, mode="benchmark")
    with session_scope() as db:
        service.mark_running(db, sid, WORKER)
        found = db.get(Submission, sid)
        assert found is not None
        found.started_at = utcnow() - timedelta(seconds=12)
    tell(sid, CASE_3)
    assert (await log_in(client, author)).status_code == 303
    assert (await log_in(browser, organizer)).status_code == 303

    part = (await client.get(f"/submissions/{sid}/live", headers=HTML)).text
    assert "Running: case 3 of 4 (benchmark): size=1024 seed=6256 · " in part
    running = re.search(r'data-running-s="([\d.]+)">(\d+) s<', part)
    assert running and 12 <= float(running.group(1)) < 60, part
    assert WORKER not in part
    assert WORKER in (await browser.get(f"/submissions/{sid}/live", headers=HTML)).text


async def test_the_worker_sends_its_grading_s_progress_at_most_once_a_second(
    client: httpx.AsyncClient, alice: Account
) -> None:
    """The grade job on the real harness (CPU, sandboxed), each case a little slow: its
    progress messages, recorded as they come, then its report."""
    code = (
        "import time\n\ndef custom_kernel(data):\n    time.sleep(0.4)\n"
        "    A, B, out = data\n    out[...] = A + B\n    return out\n"
    )
    accepted = await client.post(
        "/api/v1/submissions",
        json={"problem": "vectoradd", "code": code, "mode": "test"},
        headers=alice.headers,
    )
    sid = int(accepted.json()["id"])
    with session_scope() as db:
        service.mark_running(db, sid, WORKER)
        found = submissions.get_submission(db, sid)
        assert found is not None
        payload = payloads.grading_payload(found, get_settings())
    sent: list[tuple[float, dict[str, Any]]] = []
    seen: list[dict[str, Any] | None] = []

    def send_progress(message: dict[str, Any]) -> None:
        sent.append((time.monotonic(), message))
        tell(message["submission_id"], message["progress"])
        seen.append(stored_progress(sid))

    delivered: list[dict[str, Any]] = []
    with (
        patch.object(gpu, "send_progress", send_progress),
        patch.object(gpu, "deliver", lambda task, result: delivered.append(result)),
    ):
        gpu.grade(sid, payload)
    recorders.record_report({**delivered[-1], "worker": WORKER})

    said = [message["progress"] for _, message in sent]
    assert said[0] == {"phase": "load", "case": 0, "cases": 0, "label": ""}
    cases = [step for step in said if step["phase"] == "test"]
    assert cases and all(step["cases"] == 5 for step in cases)
    assert [step["case"] for step in cases] == sorted({step["case"] for step in cases})
    assert seen == said
    times = [at for at, _ in sent]
    assert all(later - earlier >= 0.99 for earlier, later in itertools.pairwise(times))
    shown = await body(client, alice, sid)
    assert shown["status"] == "passed", shown["message"]
    assert shown["progress"] is None


def test_a_sender_never_holds_the_grading_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker that hangs or fails: the harness's calls return at once, the grading's end
    waits for the sender no longer than STOP_WAIT_S, and nothing is raised."""
    monkeypatch.setattr(progress, "STOP_WAIT_S", 0.5)
    release = threading.Event()
    calls: list[dict[str, Any]] = []

    def hanging(message: dict[str, Any]) -> None:
        calls.append(message)
        release.wait(5)
        raise ConnectionError("the broker is away")

    began = time.monotonic()
    with progress.ProgressSender(7, hanging, every_s=0.05) as sender:
        for case in range(1, 101):
            sender(Progress(ProgressPhase.BENCHMARK, case, 100))
        assert time.monotonic() - began < 0.5
        time.sleep(0.3)  # the sender is now stuck in its first send
    assert time.monotonic() - began < 0.3 + 0.5 + 0.5
    release.set()
    assert len(calls) == 1 and calls[0]["submission_id"] == 7


def test_a_sender_sends_the_latest_once_and_only_changes() -> None:
    calls: list[dict[str, Any]] = []
    with progress.ProgressSender(7, calls.append, every_s=0.2) as sender:
        sender(Progress(ProgressPhase.LOAD))
        time.sleep(0.05)
        for case in (1, 1, 2, 3):
            sender(Progress(ProgressPhase.TEST, case, 3, f"size={case}"))
        time.sleep(0.4)
        sender(Progress(ProgressPhase.TEST, 3, 3, "size=3"))  # no change: nothing sent
        time.sleep(0.3)
    assert [call["progress"] for call in calls] == [
        {"phase": "load", "case": 0, "cases": 0, "label": ""},
        {"phase": "test", "case": 3, "cases": 3, "label": "size=3"},
    ]


def test_the_follow_line_says_the_case_and_the_running_time() -> None:
    submission: dict[str, Any] = {
        "id": 12,
        "status": "running",
        "started_at": (utcnow() - timedelta(seconds=12)).isoformat(),
        "progress": CASE_3,
        "worker": WORKER,
    }
    line = describe(submission)
    assert line.startswith(
        "submission 12: running: case 3 of 4 (benchmark): size=1024 seed=6256 · "
    )
    assert re.search(r" · 1\d s$", line) and WORKER not in line
    assert describe({**submission, "progress": {**CASE_3, "label": None}}).startswith(
        "submission 12: running: case 3 of 4 (benchmark) · "
    )
    loading = describe({**submission, "progress": {"phase": "load", "case": 0, "cases": 0}})
    assert "running: loading the code (compilation included) · " in loading

    # Outside a terminal (a log, a pipe): a line each time the grading moves on.
    out = io.StringIO()
    follow = FollowLine(Console(file=out, force_terminal=False, width=200))
    for case in (3, 3, 4):
        follow.update({**submission, "progress": {**CASE_3, "case": case}})
    follow.update({**submission, "status": "passed", "progress": None})
    lines = out.getvalue().splitlines()
    assert [line.split(" · ")[0] for line in lines] == [
        "submission 12: running: case 3 of 4 (benchmark): size=1024 seed=6256",
        "submission 12: running: case 4 of 4 (benchmark): size=1024 seed=6256",
        "submission 12: passed",
    ]


async def test_the_openapi_schema_types_the_progress(client: httpx.AsyncClient) -> None:
    schemas = (await client.get("/openapi.json")).json()["components"]["schemas"]
    field = schemas["SubmissionOut"]["properties"]["progress"]
    assert {"$ref": "#/components/schemas/ProgressOut"} in field["anyOf"]
    shown = schemas["ProgressOut"]
    assert set(shown["properties"]) == {"phase", "case", "cases", "label"}
    assert schemas[shown["properties"]["phase"]["$ref"].rsplit("/", 1)[1]]["enum"] == [
        "load",
        "test",
        "benchmark",
        "profile",
    ]
