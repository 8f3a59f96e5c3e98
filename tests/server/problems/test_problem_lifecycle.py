"""A problem's life as organizers run it: not live (and closed to submissions) until its
validation is recorded, a start time before which competitors cannot find it, and new
versions that carry the leaderboard over or archive it. Validation itself runs on a real
worker in tests/integration/test_problem_validation.py; here the results step's recording
function stands in for the worker's report."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any
from unittest.mock import patch

import httpx
import pytest
from sqlalchemy import select

from server.db import session_scope
from server.leaderboards import upkeep
from server.models import OutboxMessage, Submission, utcnow
from server.problems import repository, validation
from server.settings import get_settings
from server.submissions import payloads
from server.users.service import authenticate
from server.worker import gpu
from tests.server.conftest import Account, changed_settings
from tests.server.problems.test_problems_api import problem_zip, upload
from tests.server.rows import added_submission
from tests.server.users.test_audit_log import audit_entries
from tests.server.web_client import HTML, log_in, make_user, post_form, sign_in

pytestmark = pytest.mark.anyio

CODE = """import torch

def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
"""


def record_round(
    name: str, status: str = "passed", report: dict[str, Any] | None = None
) -> list[bool]:
    """Each device's report of the current round (`report`, else one of this status), as the
    results step records it."""
    report = report or {"status": status, "message": f"{status} by the test", "checks": []}
    with session_scope() as session:
        problem = repository.get_problem(session, name)
        assert problem is not None
        return [
            validation.record(session, row.id, validation.parse_report(report), "test-worker")
            for row in validation.current_round(session, problem)
        ]


def delivered_by(task: Callable[..., None], sent: Sequence[Any]) -> list[dict[str, Any]]:
    """What the worker's ``task`` delivers for each message ``sent``, in order."""
    delivered: list[dict[str, Any]] = []
    with patch.object(gpu, "deliver", lambda task, result: delivered.append(result)):
        for args in sent:
            assert args is not None
            task(*args)
    return delivered


def ranked(token: str, problem_name: str, score: float) -> int:
    """A passed leaderboard-mode submission against the problem's current version."""
    with session_scope() as session:
        user = authenticate(session, token)
        problem = repository.get_problem(session, problem_name)
        assert problem is not None
        submission = added_submission(
            session,
            user,
            problem,
            mode="leaderboard",
            code=CODE,
            status="passed",
            score=score,
            report={"status": "passed", "cases": []},
        )
        upkeep.submission_changed(session, submission)
        return submission.id


async def submit(
    client: httpx.AsyncClient, account: Account, problem: str, mode: str = "test"
) -> httpx.Response:
    return await client.post(
        "/api/v1/submissions",
        json={"problem": problem, "code": CODE, "mode": mode},
        headers=account.headers,
    )


async def test_builtin_problems_are_live_without_a_validation_round(
    client: httpx.AsyncClient, admin: Account
) -> None:
    assert (await client.get("/api/v1/problems/vectoradd")).json()["status"] == "live"
    shown = await client.get("/api/v1/problems/vectoradd/validation", headers=admin.headers)
    assert shown.status_code == 200 and shown.json()["devices"] == []


async def test_an_upload_is_closed_until_its_validation_is_recorded_clean(
    client: httpx.AsyncClient, admin: Account, alice: Account
) -> None:
    created = await upload(client, admin, problem_zip("pending"), "p.zip")
    assert created.json()["status"] == "validating"
    assert (await client.get("/api/v1/problems/pending")).status_code == 404
    names = {p["name"] for p in (await client.get("/api/v1/problems")).json()}
    assert "pending" not in names
    for account in (alice, admin):
        refused = await submit(client, account, "pending")
        assert refused.status_code == 409, refused.text
        assert "being validated" in refused.json()["detail"]
    shown = (await client.get("/api/v1/problems/pending/validation", headers=admin.headers)).json()
    assert shown["status"] == "validating"
    assert [(d["gpu"], d["status"], d["version"]) for d in shown["devices"]] == [
        ("cpu", "queued", 1)
    ]
    only_admins = await client.get("/api/v1/problems/pending/validation", headers=alice.headers)
    assert only_admins.status_code == 403

    assert record_round("pending") == [True]
    assert record_round("pending") == [False]  # a report delivered twice is recorded once
    assert (await client.get("/api/v1/problems/pending")).json()["status"] == "live"
    assert (await submit(client, alice, "pending")).status_code == 202


def sent_times(name: str) -> list[Any]:
    """When each validation of the current round was sent, and how often, once the outbox's
    sender thread has sent them (right after their commit)."""
    deadline = time.monotonic() + 10
    times = outbox_times(name)
    while any(sent is None for sent, _ in times) and time.monotonic() < deadline:
        time.sleep(0.02)
        times = outbox_times(name)
    return times


def outbox_times(name: str) -> list[Any]:
    with session_scope() as session:
        problem = repository.get_problem(session, name)
        assert problem is not None
        ids = [row.id for row in validation.current_round(session, problem)]
        jobs = session.scalars(
            select(OutboxMessage).where(
                OutboxMessage.job == "validate", OutboxMessage.subject_id.in_(ids)
            )
        ).all()
        return [(job.sent_at, job.sends) for job in jobs]


async def test_uploading_the_same_problem_again_does_not_send_its_round_twice(
    client: httpx.AsyncClient, admin: Account
) -> None:
    """A worker's time (minutes on a GPU) is not spent twice on one round."""
    raw = problem_zip("twice")
    await upload(client, admin, raw, "p.zip")
    first = sent_times("twice")
    assert len(first) == 1 and first[0][0] is not None and first[0][1] == 1
    again = await upload(client, admin, raw, "p.zip")
    assert again.status_code == 201 and again.json()["status"] == "validating"
    assert sent_times("twice") == first


async def test_a_failed_round_leaves_the_problem_invalid_until_a_clean_one(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, admin: Account, alice: Account
) -> None:
    await upload(client, admin, problem_zip("flaky"), "p.zip")
    floors = [{"case": {"size": 1024, "seed": 3}, "bytes": 12582912.0, "flops": 0.0,
               "declared": False, "floor_s": 4.2e-6}]  # fmt: skip
    record_round("flaky", "failed", {"status": "failed", "message": "failed by the test",
                                     "checks": [], "rooflines": floors})  # fmt: skip
    shown = (await client.get("/api/v1/problems/flaky/validation", headers=admin.headers)).json()
    assert shown["status"] == "invalid" and shown["devices"][0]["status"] == "failed"
    assert shown["devices"][0]["report"]["message"] == "failed by the test"
    refused = await submit(client, alice, "flaky")
    assert refused.status_code == 409 and "failed validation" in refused.json()["detail"]

    # The admin page shows the outcome and runs validation again (audited).
    name = await sign_in(browser, "validator", admin=True)
    page = await browser.get("/admin/problems", headers=HTML)
    assert 'data-status="invalid"' in page.text and "failed by the test" in page.text
    # With each benchmark case's physical floor, as the validation measured it.
    assert "measured from the reference" in page.text and "12,582,912" in page.text
    assert "4.20 µs" in page.text
    again = await post_form(
        browser, "/admin/problems/flaky/validate", {}, from_page="/admin/problems"
    )
    assert again.status_code == 303
    shown = (await client.get("/api/v1/problems/flaky/validation", headers=admin.headers)).json()
    assert shown["status"] == "validating" and shown["attempt"] == 2
    entry = (await audit_entries(client, admin, action="problem.validate"))[0]
    assert entry["actor"] == name and entry["target"] == "flaky"
    assert entry["details"]["status_before"] == "invalid"
    record_round("flaky")
    assert (await client.get("/api/v1/problems/flaky")).json()["status"] == "live"


async def test_organizers_choose_the_device_types_and_each_new_one_is_validated(
    client: httpx.AsyncClient,
    browser: httpx.AsyncClient,
    admin: Account,
) -> None:
    """A problem whose benchmark cases are GPU-sized need not be offered on CPU workers:
    organizers pick its device types on the admin page; a change starts a validation round
    on the new set, and the audit log keeps it."""
    with changed_settings(gpu_types="cpu,h200"):
        await upload(client, admin, problem_zip("devices"), "p.zip")
        assert record_round("devices") == [True, True]
        shown = (await client.get("/api/v1/problems/devices")).json()
        assert shown["status"] == "live" and shown["gpu_types"] == ["cpu", "h200"]

        await sign_in(browser, "chooser", admin=True)
        form = {"is_public": "on", "gpu_types_listed": "1", "gpu_types": ["h200"]}
        saved = await post_form(
            browser, "/admin/problems/devices", form, from_page="/admin/problems"
        )
        assert saved.status_code == 303, saved.text
        detail = (await client.get("/api/v1/problems/devices", headers=admin.headers)).json()
        # Still live: competitors keep it while the new set is validated.
        assert detail["gpu_types"] == ["h200"] and detail["status"] == "live"
        rounds = (
            await client.get("/api/v1/problems/devices/validation", headers=admin.headers)
        ).json()
        assert [d["gpu"] for d in rounds["devices"]] == ["h200"]
        assert record_round("devices") == [True]
        assert (await client.get("/api/v1/problems/devices")).json()["status"] == "live"

        unknown = {"is_public": "on", "gpu_types_listed": "1", "gpu_types": ["b200"]}
        refused = await post_form(
            browser, "/admin/problems/devices", unknown, from_page="/admin/problems"
        )
        assert refused.status_code == 422 and "b200 is not one" in refused.text
        changes = [
            e["details"]["changes"]
            for e in await audit_entries(client, admin, action="problem.settings", target="devices")
        ]
        # From its task.yml; a type this service does not offer (h100) is kept.
        assert {"gpu_types": [["h200", "h100", "cpu"], ["h200", "h100"]]} in changes


async def test_a_device_type_added_to_a_live_problem_is_offered_once_it_validated_there(
    client: httpx.AsyncClient,
    browser: httpx.AsyncClient,
    admin: Account,
    alice: Account,
) -> None:
    """Adding h200 to a problem live on cpu starts a round on both; until it passes on h200
    competitors are offered cpu alone (a submission for h200 is refused with the device
    types it may ask for), and the admin page says h200 waits for its validation. A round
    that fails on h200 leaves the problem on cpu."""
    with changed_settings(gpu_types="cpu,h200"):
        await upload(client, admin, problem_zip("widening"), "p.zip")
        assert record_round("widening") == [True, True]
        await sign_in(browser, "widener", admin=True)

        async def choose(*gpus: str) -> None:
            form = {"is_public": "on", "gpu_types_listed": "1", "gpu_types": list(gpus)}
            saved = await post_form(
                browser, "/admin/problems/widening", form, from_page="/admin/problems"
            )
            assert saved.status_code == 303, saved.text

        async def offered() -> list[str]:
            shown = (await client.get("/api/v1/problems/widening")).json()
            assert shown["status"] == "live"
            return list(shown["gpu_types"])

        await choose("cpu")
        assert await offered() == ["cpu"]  # narrowing takes effect at once
        record_round("widening")

        await choose("cpu", "h200")
        assert await offered() == ["cpu"]
        body = {"problem": "widening", "code": CODE, "mode": "test", "gpu": "h200"}
        refused = await client.post("/api/v1/submissions", json=body, headers=alice.headers)
        assert refused.status_code == 422, refused.text
        assert refused.json()["detail"].endswith("available: cpu")
        admin_page = (await browser.get("/admin/problems")).text
        row = admin_page.split('aria-label="widening graded on h200"', 1)[1].split("</label>")[0]
        assert "offered once validated" in row
        assert record_round("widening") == [True, True]
        assert await offered() == ["cpu", "h200"]
        body["code"] = CODE + "\n# on h200\n"
        accepted = await client.post("/api/v1/submissions", json=body, headers=alice.headers)
        assert accepted.status_code == 202, accepted.text

        await choose("cpu")
        record_round("widening")
        await choose("cpu", "h200")
        with session_scope() as session:
            problem = repository.get_problem(session, "widening")
            assert problem is not None
            rows = validation.current_round(session, problem)
            for row in rows:
                report = {"status": "passed" if row.gpu_type == "cpu" else "failed", "checks": []}
                validation.record(session, row.id, validation.parse_report(report), "test-worker")
        assert await offered() == ["cpu"]
        admin_page = (await browser.get("/admin/problems")).text
        row = admin_page.split('aria-label="widening graded on h200"', 1)[1].split("</label>")[0]
        assert "offered once validated" not in row


async def test_before_its_start_a_problem_is_hidden_from_competitors(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, admin: Account, alice: Account
) -> None:
    await upload(client, admin, problem_zip("later"), "p.zip")
    record_round("later")
    name, token = make_user("starter", admin=True)
    organizer = Account(name, token)
    await log_in(browser, name)
    saved = await post_form(
        browser,
        "/admin/problems/later",
        {"is_public": "on", "starts_at": "2099-01-02T03:04"},
        from_page="/admin/problems",
    )
    assert saved.status_code == 303

    # Competitors: as if it did not exist, everywhere.
    for path in ("/api/v1/problems/later", "/api/v1/leaderboards/later"):
        assert (await client.get(path)).status_code == 404
        assert (await client.get(path, headers=alice.headers)).status_code == 404
    assert "later" not in {p["name"] for p in (await client.get("/api/v1/problems")).json()}
    assert (await client.get("/problems/later", headers=HTML)).status_code == 404
    refused = await submit(client, alice, "later")
    assert refused.status_code == 404 and refused.json()["error"] == "not_found"

    # Admins see it, may try it, but not rank on it yet.
    shown = (await client.get("/api/v1/problems/later", headers=organizer.headers)).json()
    assert shown["starts_at"].startswith("2099-01-02T03:04")
    assert (await browser.get("/problems/later", headers=HTML)).status_code == 200
    assert (await submit(client, organizer, "later")).status_code == 202
    ranked_early = await submit(client, organizer, "later", "leaderboard")
    assert (
        ranked_early.status_code == 409
        and "opens at 2099-01-02 03:04" in (ranked_early.json()["detail"])
    )

    entry = (await audit_entries(client, admin, action="problem.settings", target="later"))[0]
    assert entry["details"]["changes"]["starts_at"] == [None, "2099-01-02T03:04:00+00:00"]

    opened = await post_form(
        browser,
        "/admin/problems/later",
        {"is_public": "on", "starts_at": (utcnow() - timedelta(minutes=1)).isoformat()},
        from_page="/admin/problems",
    )
    assert opened.status_code == 303
    assert (await client.get("/api/v1/problems/later")).status_code == 200
    assert (await submit(client, alice, "later", "leaderboard")).status_code == 202


async def test_a_start_after_the_deadline_is_refused(browser: httpx.AsyncClient) -> None:
    await log_in(browser, make_user("order", admin=True)[0])
    refused = await post_form(
        browser,
        "/admin/problems/vectorsum",
        {"is_public": "on", "starts_at": "2099-01-02T00:00", "deadline": "2098-01-01T00:00"},
        from_page="/admin/problems",
    )
    assert refused.status_code == 422 and "before the deadline" in refused.text


@pytest.mark.parametrize(
    "moment", ["tomorrow", "2026-13-01T00:00", "0001-01-01T00:00+05:00", "9999-12-31T23:59-05:00"]
)
async def test_a_time_that_is_no_date_is_refused(browser: httpx.AsyncClient, moment: str) -> None:
    """Not a date, or one that leaves the calendar when moved to UTC: a 422 naming it."""
    await log_in(browser, make_user("clock", admin=True)[0])
    refused = await post_form(
        browser, "/admin/problems/vectorsum", {"is_public": "on", "deadline": moment},
        from_page="/admin/problems",
    )  # fmt: skip
    assert refused.status_code == 422 and "is not a date and time" in refused.text


def board(response: httpx.Response) -> list[tuple[str, int]]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return [(e["user"], e["problem_version"]) for e in body["entries"]]


async def test_new_versions_carry_the_leaderboard_over_or_archive_it(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, admin: Account
) -> None:
    ann, ben, cat = (make_user(n) for n in ("ann", "ben", "cat"))
    await upload(client, admin, problem_zip("board"), "p.zip")
    record_round("board")
    ranked(ann[1], "board", 1e-4)

    carried = await upload(
        client, admin, problem_zip("board", description="v2"), "p.zip", leaderboard="carry_over"
    )
    # The live version 1 serves until version 2 is validated.
    assert carried.json()["version"] == 1 and carried.json()["pending_version"] == 2
    record_round("board")
    promoted = (await client.get("/api/v1/problems/board")).json()
    assert promoted["version"] == 2 and promoted["pending_version"] is None
    assert promoted["leaderboard_from_version"] == 1
    ranked(ben[1], "board", 2e-4)
    live = await client.get("/api/v1/leaderboards/board")
    assert board(live) == [(ann[0], 1), (ben[0], 2)]
    assert live.json()["version"] is None and live.json()["from_version"] == 1

    archived = await upload(
        client, admin, problem_zip("board", description="v3"), "p.zip", leaderboard="archive"
    )
    assert archived.json()["pending_version"] == 3
    assert archived.json()["leaderboard_from_version"] == 1  # until version 3 goes live
    record_round("board")
    assert (await client.get("/api/v1/problems/board")).json()["leaderboard_from_version"] == 3
    live = await client.get("/api/v1/leaderboards/board")
    assert board(live) == [] and live.json()["from_version"] == 3
    ranked(cat[1], "board", 3e-4)
    assert board(await client.get("/api/v1/leaderboards/board")) == [(cat[0], 3)]
    # Earlier versions' leaderboards stay readable.
    assert board(await client.get("/api/v1/leaderboards/board?version=1")) == [(ann[0], 1)]
    assert board(await client.get("/api/v1/leaderboards/board?version=2")) == [(ben[0], 2)]
    missing = await client.get("/api/v1/leaderboards/board?version=9")
    assert missing.status_code == 404 and "no version 9" in missing.json()["detail"]

    page = await browser.get("/leaderboards/board", headers=HTML)
    assert "Archived leaderboards" in page.text and "?version=2" in page.text
    assert cat[0] in page.text and ann[0] not in page.text
    old_page = await browser.get("/leaderboards/board?version=1", headers=HTML)
    assert ann[0] in old_page.text and "v1" in old_page.text

    updates = [
        e["details"]["leaderboard"]
        for e in await audit_entries(client, admin, action="problem.update", target="board")
    ]
    assert updates == ["archive", "carry_over"]  # newest first

    unknown = await upload_raw(client, admin, leaderboard="sideways")
    assert unknown.status_code == 422 and "sideways" in unknown.json()["detail"]


async def upload_raw(client: httpx.AsyncClient, admin: Account, **form: str) -> httpx.Response:
    return await client.post(
        "/api/v1/problems",
        files={"archive": ("p.zip", problem_zip("board", description="v4"))},
        data=form,
        headers=admin.headers,
    )


async def test_openapi_shows_the_new_routes_their_errors_and_parameters(
    client: httpx.AsyncClient,
) -> None:
    schema = (await client.get("/openapi.json")).json()
    validation_path = schema["paths"]["/api/v1/problems/{name}/validation"]
    assert {"200", "401", "403", "404"} <= set(validation_path["get"]["responses"])
    assert {"202", "401", "403", "404"} <= set(validation_path["post"]["responses"])
    board_params = schema["paths"]["/api/v1/leaderboards/{problem}"]["get"]["parameters"]
    assert "version" in {p["name"] for p in board_params}
    upload_body = schema["paths"]["/api/v1/problems"]["post"]["requestBody"]["content"]
    (form,) = upload_body.values()
    ref = form["schema"]["$ref"].rsplit("/", 1)[-1]
    assert "leaderboard" in schema["components"]["schemas"][ref]["properties"]


async def test_a_submission_waiting_when_a_new_version_goes_live_is_filed_under_it(
    client: httpx.AsyncClient, admin: Account
) -> None:
    """It is graded on the files its job carries, the new version's: its record says so,
    and never files that result under the version it was submitted to."""
    await upload(client, admin, problem_zip("waiting"), "p.zip")
    record_round("waiting")
    competitor = make_user("wendy")
    accepted = await submit(
        client, Account(competitor[0], competitor[1]), "waiting", mode="leaderboard"
    )
    assert accepted.status_code == 202, accepted.text
    sid = accepted.json()["id"]
    await upload(client, admin, problem_zip("waiting", description="v2"), "p.zip")
    record_round("waiting")
    with session_scope() as session:
        args = payloads.grading(session, sid, get_settings())
        assert args is not None
        assert args[1]["problem"]["version"] == 2
        submission = session.get(Submission, sid)
        assert submission is not None and submission.problem_version == 2
    shown = await client.get(
        f"/api/v1/submissions/{sid}", headers={"Authorization": f"Bearer {competitor[1]}"}
    )
    assert shown.json()["problem_version"] == 2
