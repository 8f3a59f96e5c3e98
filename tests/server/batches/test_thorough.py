"""A thorough batch's items reach the grader with the thorough precision, in the job the
worker is sent; a standard batch's items, and the batch's tier, are as before."""

from __future__ import annotations

import json
from typing import Any
from unittest.mock import patch

import httpx
import pytest

from grader.precision import Precision
from grader.report import Report
from server.db import session_scope
from server.settings import get_settings
from server.submissions import payloads
from server.worker import gpu, recorders
from tests.server.batches.test_batches import items, post
from tests.server.conftest import make_account, worker_report

pytestmark = pytest.mark.anyio


def graded_by_the_worker(submission_id: int) -> dict[str, Any]:
    """The grade job as the outbox sends it, run by the worker's task with the grader
    replaced: what the task passed the grader. Its report is recorded as the results step
    records a worker's."""
    with session_scope() as db:
        args = payloads.grading(db, submission_id, get_settings())
    assert args is not None
    sid, payload = json.loads(json.dumps(args))  # as the broker carries it
    called: dict[str, Any] = {}

    def grader(problem: Any, code: str, **kwargs: Any) -> Report:
        called.update(kwargs)
        return worker_report("passed", mode=kwargs["mode"], score=2e-5)

    delivered: list[dict[str, Any]] = []
    with (
        patch.object(gpu, "grade_submission", grader),
        patch.object(gpu, "deliver", lambda task, result: delivered.append(result)),
    ):
        gpu.grade(sid, payload)
    recorders.record_report({**delivered[-1], "worker": "host:1"})
    return called


@pytest.mark.parametrize("mode", ["benchmark", "leaderboard"])
async def test_a_thorough_batch_item_is_graded_at_the_thorough_precision(
    client: httpx.AsyncClient, mode: str
) -> None:
    trainer = make_account()
    made = {}
    for tier in ("thorough", "standard"):
        body = {"items": items(1, mode=mode, tag=tier), "tier": tier}
        answer = await post(client, trainer, body)
        assert answer.status_code == 202, answer.text
        made[tier] = answer.json()
    called = {
        tier: graded_by_the_worker(batch["items"][0]["submission_id"])
        for tier, batch in made.items()
    }
    assert called["thorough"]["precision"] == Precision.THOROUGH
    assert called["standard"]["precision"] == Precision.STANDARD
    # Its longer case budgets come with a longer time limit.
    assert called["thorough"]["timeout_s"] > called["standard"]["timeout_s"]
    for tier, batch in made.items():
        shown = await client.get(f"/api/v1/batches/{batch['id']}", headers=trainer.headers)
        assert shown.json()["tier"] == tier
        assert shown.json()["status"] == "done"
        assert [item["status"] for item in shown.json()["items"]] == ["passed"]


async def test_a_submission_sent_alone_is_graded_at_the_standard_precision(
    client: httpx.AsyncClient,
) -> None:
    alice = make_account()
    body = {"problem": "vectoradd", "code": items(1)[0]["code"], "mode": "benchmark"}
    answer = await client.post("/api/v1/submissions", json=body, headers=alice.headers)
    assert answer.status_code == 202, answer.text
    assert graded_by_the_worker(answer.json()["id"])["precision"] == Precision.STANDARD
