"""Test mode's short limit on a single-machine install: a problem's validation derives it from
the reference's own test cases, the server keeps it with the version it validated and shows
it to the organizer, and the worker grades test-mode submissions under it. Validation and
grading run through the worker's own task functions (the real harness and sandbox, on the
CPU); the results step's recording functions take their reports."""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

import httpx
import pytest
import yaml

from grader import problem as grader_problem
from server.db import session_scope
from server.problems import repository, validation
from server.settings import get_settings
from server.submissions import payloads
from server.submissions import repository as submissions
from server.worker import gpu, recorders
from tests.server.conftest import Account
from tests.server.problems.test_problem_lifecycle import delivered_by, record_round
from tests.server.problems.test_problems_api import TASK, problem_zip, upload, vectoradd_zip

pytestmark = pytest.mark.anyio

# A reference and a submission as slow as each other (GPU MODE's linalg/qr_py on a CPU, in
# small): their two test cases outlast the floor, scaled down here from 20 s to 1 s.
SLOW_S = 0.3
SLOW_REFERENCE = (
    (TASK / "reference.py")
    .read_text()
    .replace(
        "    A, B, out = data\n    out[...] = A + B\n",
        f"    __import__('time').sleep({SLOW_S})\n    A, B, out = data\n    out[...] = A + B\n",
    )
)
SLOW_SUBMISSION = f"""
import time

def custom_kernel(data):
    time.sleep({SLOW_S})
    A, B, out = data
    out[...] = A + B
    return out
"""


def slow_zip(folder: str) -> bytes:
    """vectoradd with two test cases and one small CPU benchmark case, its reference slow,
    and no key of test mode's limit in its task.yml."""
    assert "test_cases_timeout" not in yaml.safe_load((TASK / "task.yml").read_text())
    return vectoradd_zip(
        folder,
        tests=[{"size": 64, "seed": 1}, {"size": 65, "seed": 2}],
        cpu_benchmarks=[{"size": 64, "seed": 3}],
        reference=SLOW_REFERENCE,
    )


def validate_round(name: str) -> None:
    """Each device's validation of the current round, by the worker's task, recorded."""
    with session_scope() as session:
        problem = repository.get_problem(session, name)
        assert problem is not None
        sent = [
            validation.message(session, row.id, get_settings())
            for row in validation.current_round(session, problem)
        ]
    for result in delivered_by(gpu.validate_problem, sent):
        recorders.record_validation({**result, "worker": "test"})


async def grade_in_test_mode(
    client: httpx.AsyncClient, author: Account, problem: str, code: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A test-mode submission graded by the worker's task: the job's payload and the
    submission as its author reads it."""
    accepted = await client.post(
        "/api/v1/submissions",
        json={"problem": problem, "code": code, "mode": "test"},
        headers=author.headers,
    )
    assert accepted.status_code == 202, accepted.text
    submission_id = int(accepted.json()["id"])
    with session_scope() as session:
        submission = submissions.get_submission(session, submission_id)
        assert submission is not None
        payload = payloads.grading_payload(submission, get_settings())
    delivered: list[dict[str, Any]] = []
    with patch.object(gpu, "deliver", lambda task, result: delivered.append(result)):
        gpu.grade(submission_id, payload)
    recorders.record_report({**delivered[-1], "worker": "test"})
    shown = await client.get(f"/api/v1/submissions/{submission_id}", headers=author.headers)
    body: dict[str, Any] = shown.json()
    return payload, body


def kept_limits(name: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Test mode's limits kept for the live version and for the staged one."""
    with session_scope() as session:
        problem = repository.get_problem(session, name)
        assert problem is not None
        staged = problem.candidate["test_cases_timeouts"] if problem.candidate else None
        return problem.test_cases_timeouts, staged


async def test_a_slow_reference_s_own_submission_passes_test_mode_under_the_limit_derived_for_it(
    client: httpx.AsyncClient, admin: Account, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grader_problem, "TEST_CASES_FLOOR_S", 1.0)
    await upload(client, admin, slow_zip("slowadd"), "p.zip")
    validate_round("slowadd")

    shown = await client.get("/api/v1/problems/slowadd/validation", headers=admin.headers)
    (device,) = shown.json()["devices"]
    assert device["status"] == "passed", device["report"]["message"]
    report = device["report"]
    assert report["test_cases_timeout_from"] == "reference"
    # Two test cases, each running the reference in the harness (its expected output, its
    # check_implementation) and as the submission in the sandbox.
    assert report["reference_test_cases_s"] >= 2 * 2 * SLOW_S
    limit = device["test_cases_timeout_s"]
    assert limit == report["test_cases_timeout_s"] > 1
    assert f"test mode's cases may take {limit:g} s on cpu" in report["message"]
    assert kept_limits("slowadd") == ({"cpu": limit}, None)

    payload, body = await grade_in_test_mode(client, alice, "slowadd", SLOW_SUBMISSION)
    assert payload["test_cases_timeout_s"] == limit
    assert body["status"] == "passed", body["message"]


async def test_the_limit_belongs_to_the_version_whose_validation_measured_it(
    client: httpx.AsyncClient, admin: Account
) -> None:
    """A live problem keeps serving under its own limit while its next version is validated;
    the next version's limit waits with it and goes live with it, and a version whose
    validation gave none goes live with none (test mode then gets the floor)."""

    def passed(limit: float | None) -> dict[str, Any]:
        return {"status": "passed", "message": "", "checks": [], "test_cases_timeout_s": limit}

    await upload(client, admin, problem_zip("limits"), "p.zip")
    assert kept_limits("limits") == (None, None)
    record_round("limits", report=passed(42.0))
    assert kept_limits("limits") == ({"cpu": 42.0}, None)

    await upload(client, admin, problem_zip("limits", description="v2"), "p.zip")
    assert kept_limits("limits") == ({"cpu": 42.0}, {})
    record_round("limits", report=passed(55.0))  # version 2 passes and goes live
    assert kept_limits("limits") == ({"cpu": 55.0}, None)

    await upload(client, admin, problem_zip("limits", description="v3"), "p.zip")
    record_round("limits", report={**passed(99.0), "status": "failed"})
    assert kept_limits("limits") == ({"cpu": 55.0}, {})  # a failed round keeps nothing
    again = await client.post("/api/v1/problems/limits/validation", headers=admin.headers)
    assert again.status_code == 202, again.text
    record_round("limits", report=passed(None))
    assert kept_limits("limits") == ({}, None)
