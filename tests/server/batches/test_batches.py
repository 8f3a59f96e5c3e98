"""Batches through the API in this process (SQLite, the embedded broker, no worker: a
grading is made by the grader here and recorded as the results step records a worker's)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from grader.harness import grade
from grader.problem import load_problem
from server.app import create_app
from server.db import session_scope
from server.models import Batch, Submission
from server.settings import Settings, get_settings
from server.submissions import service
from server.worker import recorders
from tests.server.conftest import Account, make_account, worker_report
from tests.server.outbox.test_dispatch import empty_queue as empty_queue
from tests.server.outbox.test_dispatch import graded_in_turn, sent, wait_for_sender

pytestmark = pytest.mark.anyio

CORRECT = """
def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
"""
CANDIDATES = {
    "correct.py": (CORRECT, "passed", None),
    "wrong.py": (
        "def custom_kernel(data):\n    A, B, out = data\n    return out.zero_()\n",
        "failed",
        "wrong",
    ),
    "broken.py": ("def custom_kernel(data):\n    return data[\n", "error", "compile"),
    "crash.py": (
        "def custom_kernel(data):\n    raise RuntimeError('boom')\n",
        "error",
        "runtime",
    ),
    "escape.py": ("import subprocess\n" + CORRECT, "rejected", "rejected"),
}


def items(count: int, mode: str = "test", tag: str = "") -> list[dict[str, Any]]:
    return [
        {"key": f"k{i}", "problem": "vectoradd", "code": CORRECT + f"# {tag}{i}\n", "mode": mode}
        for i in range(count)
    ]


async def post(
    client: httpx.AsyncClient, account: Account, body: dict[str, Any], **headers: str
) -> httpx.Response:
    return await client.post("/api/v1/batches", json=body, headers={**account.headers, **headers})


@pytest.fixture
async def capped(database: None) -> AsyncIterator[httpx.AsyncClient]:
    """A client whose app allows a token three batch items in flight and batches of four."""
    app = create_app()
    settings = Settings(batch_max_in_flight=3, max_batch_items=4)
    app.dependency_overrides[get_settings] = lambda: settings
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        yield http


def record(submission_id: int, report: dict[str, Any]) -> None:
    recorders.record_report({"submission_id": submission_id, "worker": "host:1", "report": report})


async def test_each_item_gets_one_verdict_with_its_error_class(
    client: httpx.AsyncClient, alice: Account
) -> None:
    body = {
        "items": [
            {"key": key, "problem": "vectoradd", "code": code, "mode": "test"}
            for key, (code, _, _) in CANDIDATES.items()
        ],
        "tier": "quick",
        "callback_url": None,
    }
    response = await post(client, alice, body)
    assert response.status_code == 202, response.text
    accepted = response.json()
    assert [item["key"] for item in accepted["items"]] == list(CANDIDATES)
    problem = load_problem("vectoradd")
    ids = {item["key"]: item["submission_id"] for item in accepted["items"]}
    for key, (code, _, _) in CANDIDATES.items():
        report = grade(problem, code, mode="test").to_dict()
        record(ids[key], report)
        record(ids[key], report)  # a worker's report delivered twice counts once
    shown = (await client.get(f"/api/v1/batches/{accepted['id']}", headers=alice.headers)).json()
    assert shown["status"] == "done"
    assert shown["counts"]["passed"] == 1 and shown["counts"]["error"] == 2
    assert sum(shown["counts"].values()) == len(CANDIDATES)
    verdicts = {item["key"]: (item["status"], item["error_class"]) for item in shown["items"]}
    assert verdicts == {key: (status, cls) for key, (_, status, cls) in CANDIDATES.items()}
    escape = next(item for item in shown["items"] if item["key"] == "escape.py")
    assert escape["flags"] == [] and escape["speedup"] == {"eager": None, "compile": None}


async def test_a_retry_with_the_same_key_makes_no_second_batch(
    client: httpx.AsyncClient, alice: Account
) -> None:
    body = {"items": items(3, tag="retry"), "tier": "standard"}
    first = await post(client, alice, body, **{"Idempotency-Key": "step-17"})
    again = await post(client, alice, body, **{"Idempotency-Key": "step-17"})
    assert first.status_code == again.status_code == 202
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    with session_scope() as db:
        assert db.scalar(select(func.count()).where(Batch.idempotency_key == "step-17")) == 1
        assert db.scalar(select(func.count()).where(Submission.batch_id == first.json()["id"])) == 3
    other = await post(
        client, alice, {**body, "tier": "thorough"}, **{"Idempotency-Key": "step-17"}
    )
    assert other.status_code == 422 and "different batch" in other.json()["detail"]


async def test_over_the_tokens_cap_of_items_in_flight_is_429_with_retry_after(
    capped: httpx.AsyncClient,
) -> None:
    ada = make_account()
    first = await post(capped, ada, {"items": items(2, tag="cap")})
    assert first.status_code == 202, first.text
    over = await post(capped, ada, {"items": items(2, tag="cap2")})
    assert over.status_code == 429
    assert int(over.headers["Retry-After"]) > 0
    assert "2 batch items queued or running" in over.json()["detail"]
    # Once an item has its verdict there is room again.
    record(first.json()["items"][0]["submission_id"], worker_report("passed").to_dict())
    assert (await post(capped, ada, {"items": items(2, tag="cap3")})).status_code == 202
    # Another user's token has its own cap.
    assert (await post(capped, make_account(), {"items": items(3)})).status_code == 202
    too_big = await post(capped, ada, {"items": items(5)})
    assert too_big.status_code == 422 and "at most 4 items" in too_big.json()["detail"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"items": []}, "items"),
        ({"items": items(1) + items(1)}, "'k0' is used twice"),
        ({"items": items(1, mode="benchmark"), "tier": "quick"}, "quick tier grades test mode"),
        ({"items": items(1), "tier": "fastest"}, "tier"),
        ({"items": items(1), "callback_url": "ftp://example.com/hook"}, "http:// or https://"),
        ({"items": [{**items(1)[0], "problem": "no-such-problem"}]}, "items[0] ('k0')"),
        ({"items": [{**items(1)[0], "code": "  "}]}, "items[0] ('k0'): the code is empty"),
    ],
)
async def test_bad_batches_are_422_with_a_message(
    client: httpx.AsyncClient, alice: Account, body: dict[str, Any], words: str
) -> None:
    response = await post(client, alice, body)
    assert response.status_code == 422, response.text
    assert words in response.json()["detail"]


async def test_only_the_owner_or_an_admin_reads_a_batch(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    made = (await post(client, alice, {"items": items(1, tag="own")})).json()
    url = f"/api/v1/batches/{made['id']}"
    assert (await client.get(url, headers=make_account().headers)).status_code == 404
    assert (await client.get(url, headers=admin.headers)).status_code == 200
    assert (await client.get(url)).status_code == 401
    assert (await client.get("/api/v1/batches/999999", headers=alice.headers)).status_code == 404


async def test_wait_returns_when_an_item_finishes(
    client: httpx.AsyncClient, alice: Account
) -> None:
    made = (await post(client, alice, {"items": items(2, tag="wait")})).json()
    url = f"/api/v1/batches/{made['id']}?wait=30"
    first = made["items"][0]["submission_id"]

    async def finish_soon() -> None:
        await asyncio.sleep(0.5)
        with session_scope() as db:
            service.record_report(db, first, worker_report("failed"), "host:1")

    loop = asyncio.get_running_loop()
    started = loop.time()
    waited, _ = await asyncio.gather(client.get(url, headers=alice.headers), finish_soon())
    took = loop.time() - started
    assert 0.4 < took < 10, took
    shown = waited.json()
    assert shown["status"] == "running" and shown["counts"]["failed"] == 1
    assert shown["items"][0]["error_class"] == "wrong"
    # With nothing changing it answers once the wait is over.
    started = loop.time()
    quiet = await client.get(f"/api/v1/batches/{made['id']}?wait=1", headers=alice.headers)
    assert 0.9 < loop.time() - started < 5 and quiet.json()["counts"]["queued"] == 1
    assert (await client.get(f"{url[:-2]}61", headers=alice.headers)).status_code == 422


async def test_another_users_test_run_is_dispatched_before_a_big_batchs_rest(
    client: httpx.AsyncClient,
) -> None:
    trainer, competitor = make_account(), make_account()
    batch = await post(client, trainer, {"items": items(30, tag="big")})
    assert batch.status_code == 202
    queued = [item["submission_id"] for item in batch.json()["items"]]
    body = {"problem": "vectoradd", "code": CORRECT, "mode": "test"}
    theirs = await client.post("/api/v1/submissions", json=body, headers=competitor.headers)
    wait_for_sender()
    assert sent() == [queued[0]]  # one for the free worker; the rest wait in the outbox
    assert graded_in_turn(3) == [queued[0], theirs.json()["id"], queued[1]]
