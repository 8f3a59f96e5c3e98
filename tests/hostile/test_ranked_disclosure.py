"""Nothing of a ranked run flows back to its author but the verdict, the score and the
per-case statistics (catalogue line 29): what a leaderboard-mode submission prints, raises
or returns wrongly is the organizers' to read, in the API and on the pages. Each
submission is accepted through the API and graded by the worker's own task functions
(the real harness and sandbox, on the CPU), then read back as its author and as an
organizer."""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

import httpx
import pytest
import yaml

from server.db import session_scope
from server.settings import get_settings
from server.submissions import payloads, repository
from server.worker import gpu, recorders
from tests.server.conftest import (
    Account,
    admin,
    alice,
    anyio_backend,
    browser,
    client,
    database,
)
from tests.server.web_client import HTML, log_in, make_user

__all__ = ["admin", "alice", "anyio_backend", "browser", "client", "database"]

pytestmark = pytest.mark.anyio

MARK = "KJ-RANKED-SECRET"
# The code builds the mark at run time, so that the code itself (shown to its author)
# does not hold it.
PRINTS = """
import sys
import torch

MARK = "KJ-RANKED-" + "SECRET"

def custom_kernel(data):
    print(MARK, "stdout", data[:4].tolist(), flush=True)
    print(MARK, "stderr", data[:4].tolist(), file=sys.stderr, flush=True)
    return torch.sum(data)
"""
WRONG = """
import torch

def custom_kernel(data):
    return torch.sum(data) + 1000.0
"""
RAISES = """
def custom_kernel(data):
    raise ValueError("KJ-RANKED-" + "SECRET " + repr(data[:4].tolist()))
"""


def quick(payload: dict[str, Any]) -> dict[str, Any]:
    """The problem as sent, with two small benchmark cases and a short timing budget."""
    files = dict(payload["problem"]["files"])
    spec = yaml.safe_load(files["task.yml"])
    spec["benchmarks"] = spec["cpu_benchmarks"] = [
        {"size": 4096, "seed": 11},
        {"size": 8192, "seed": 12},
    ]
    spec["case_time_budget_s"] = 0.2
    files["task.yml"] = yaml.safe_dump(spec)
    return {**payload, "problem": {**payload["problem"], "files": files}}


async def submit_and_grade(
    client: httpx.AsyncClient, author: dict[str, str], code: str, mode: str = "leaderboard"
) -> int:
    response = await client.post(
        "/api/v1/submissions",
        json={"problem": "vectorsum", "code": code, "mode": mode},
        headers=author,
    )
    assert response.status_code == 202, response.text
    submission_id = int(response.json()["id"])
    with session_scope() as session:
        submission = repository.get_submission(session, submission_id)
        assert submission is not None
        payload = quick(payloads.grading_payload(submission, get_settings()))
    delivered: list[dict[str, Any]] = []
    with patch.object(gpu, "deliver", lambda task, result: delivered.append(result)):
        gpu.grade(submission_id, payload)
    recorders.record_report({**delivered[0], "worker": "test"})
    return submission_id


def texts(body: dict[str, Any]) -> str:
    cases = " ".join(str(case.get("message", "")) for case in body["cases"])
    return " ".join([body["message"], body["stdout"], body["stderr"], cases])


async def read(client: httpx.AsyncClient, submission_id: int, headers: dict[str, str]) -> dict:
    response = await client.get(f"/api/v1/submissions/{submission_id}", headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_what_a_ranked_run_prints_is_the_organizers_alone(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, admin: Account
) -> None:
    name, token = make_user("ranked")
    author = {"Authorization": f"Bearer {token}"}
    printed = await submit_and_grade(client, author, PRINTS)
    wrong = await submit_and_grade(client, author, WRONG)
    raised = await submit_and_grade(client, author, RAISES)

    shown = {sid: await read(client, sid, author) for sid in (printed, wrong, raised)}
    assert [shown[sid]["status"] for sid in (printed, wrong, raised)] == [
        "passed",
        "failed",
        "error",
    ]
    for body in shown.values():
        assert body["withheld"] is True
        assert MARK not in texts(body)
        assert "expected" not in texts(body) and "mismatch" not in texts(body)
    assert shown[printed]["score"] is not None
    assert all(case["time"]["samples"] >= 1 for case in shown[printed]["cases"])
    assert "withheld in leaderboard mode" in shown[wrong]["message"]
    assert "test or benchmark mode" in shown[raised]["message"]

    # The organizers keep everything.
    kept = {sid: await read(client, sid, admin.headers) for sid in (printed, wrong, raised)}
    assert kept[printed]["withheld"] is False
    assert f"{MARK} stdout" in kept[printed]["stdout"]
    assert f"{MARK} stderr" in kept[printed]["stderr"]
    assert "expected" in kept[wrong]["message"]
    assert MARK in kept[raised]["message"]

    # The pages say the same to the author.
    await log_in(browser, name)
    for sid in (printed, wrong, raised):
        page = await browser.get(f"/submissions/{sid}", headers=HTML)
        assert page.status_code == 200
        assert MARK not in page.text and "mismatch" not in page.text
        assert "withheld" in page.text


async def test_test_mode_output_reaches_its_author(client: httpx.AsyncClient) -> None:
    """Test and benchmark runs are for debugging: their author reads everything."""
    _, token = make_user("tested")
    author = {"Authorization": f"Bearer {token}"}
    sid = await submit_and_grade(client, author, RAISES, mode="test")
    body = await read(client, sid, author)
    assert body["status"] == "error" and body["withheld"] is False
    assert MARK in body["message"] and MARK in body["stderr"]
