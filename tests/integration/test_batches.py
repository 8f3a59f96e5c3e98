"""A trainer's batch of 200 on PostgreSQL and Redis, graded by two CPU workers in test mode:
right, wrong, crashing, unloadable and hacking candidates each get exactly one verdict with
the error class a reward maps; a retried POST under the same Idempotency-Key returns the
same batch and makes no second one; a second batch over the token's cap of items in flight
is answered 429 with Retry-After (another token is not held back); and a competitor's test
submission sent after the batch gets its verdict long before the batch is done."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from rig.faults import Install, gradings_run, production_install, tails_on_failure
from rig.processes import REPO_ROOT, TERMINAL, add_user, submit, wait_for
from server.models import Batch, OutboxMessage, Submission, SubmissionVerdict, User
from server.outbox import jobs

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.usefixtures("server_binaries")]

PROBLEM = "vectoradd"
RIGHT = (REPO_ROOT / "problems" / PROBLEM / "solutions" / "pytorch.py").read_text()
WRONG = """
import torch

def custom_kernel(data):
    a, b, out = data
    return torch.sub(a, b, out=out)
"""
CRASH = """
def custom_kernel(data):
    raise RuntimeError("this candidate crashes")
"""
UNLOADABLE = """
def custom_kernel(data)
    return data[2]
"""
# Reward hacks the grader catches on a CPU: a patched timer, and the reference's own output
# handed back as the candidate's.
PATCHED_TIMER = """
import time
import torch

time.perf_counter = lambda: 0.0

def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
"""
READS_REFERENCE = """
from reference import ref_kernel

def custom_kernel(data):
    return ref_kernel(data)
"""


# Each kind: its code, how many of the 200, the verdict, its error class, and words of the
# message that say why. The hacks need no sandbox (screening rejects them), so they are
# the cheapest items: the mix leans on them to keep the test short.
KINDS: dict[str, tuple[str, int, str, str | None, str]] = {
    "right": (RIGHT, 25, "passed", None, "test cases passed"),
    "wrong": (WRONG, 25, "failed", "wrong", "mismatch"),
    "crash": (CRASH, 25, "error", "runtime", "this candidate crashes"),
    "unloadable": (UNLOADABLE, 10, "error", "compile", "failed to load"),
    "timer": (PATCHED_TIMER, 55, "rejected", "rejected", "assigns time.perf_counter"),
    "reference": (READS_REFERENCE, 60, "rejected", "rejected", "imports reference"),
}
ITEMS = sum(count for _, count, *_ in KINDS.values())
# Above the longest CPU grading while two workers share two busy cores: a live grading is
# never handed out twice.
VISIBILITY_TIMEOUT_S = 120
# Until every item has its verdict (minutes on two cores).
DRAIN_S = 900.0


def batch_items() -> list[dict[str, str]]:
    """Each kind's items, interleaved, each with code of its own (a comment naming it)."""
    items = []
    for index in range(max(count for _, count, *_ in KINDS.values())):
        for kind, (code, count, *_) in KINDS.items():
            if index < count:
                key = f"{kind}-{index}"
                items.append(
                    {"key": key, "problem": PROBLEM, "code": f"{code}\n# {key}\n", "mode": "test"}
                )
    return items


def post_batch(
    install: Install, token: str, items: list[dict[str, str]], key: str
) -> httpx.Response:
    return httpx.post(
        f"{install.base}/api/v1/batches",
        json={"items": items, "tier": "quick", "callback_url": None},
        headers={"Authorization": f"Bearer {token}", "Idempotency-Key": key},
        timeout=60,
    )


def follow(install: Install, token: str, batch_id: int, timeout_s: float) -> dict[str, Any]:
    """The batch once it is done, followed with long polls as a trainer's client does."""
    deadline = time.monotonic() + timeout_s
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        body = httpx.get(
            f"{install.base}/api/v1/batches/{batch_id}",
            params={"wait": 30},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        ).json()
        if body["status"] == "done":
            return body
    raise AssertionError(f"batch {batch_id} not done in {timeout_s} s: {body.get('counts')}")


def unfinished_items(install: Install, batch_id: int) -> int:
    with install.database() as engine, engine.connect() as db:
        return int(
            db.scalar(
                select(func.count())
                .select_from(Submission)
                .where(Submission.batch_id == batch_id, Submission.status.not_in(TERMINAL))
            )
            or 0
        )


def kind_of(key: str) -> str:
    return key.rsplit("-", 1)[0]


def first_of_kind(install: Install, token: str, batch: dict[str, Any], kind: str) -> Any:
    """The submission body of the kind's first item."""
    sid = next(item["submission_id"] for item in batch["items"] if item["key"] == f"{kind}-0")
    return httpx.get(
        f"{install.base}/api/v1/submissions/{sid}",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    ).json()


def wrong_verdicts(items: list[dict[str, Any]]) -> list[str]:
    """Every item whose verdict is not its kind's, as a line to read."""
    wrong = []
    for item in items:
        _, _, status, error_class, _ = KINDS[kind_of(item["key"])]
        if (item["status"], item["error_class"]) != (status, error_class):
            wrong.append(f"{item['key']}: {item['status']} ({item['error_class']})")
    return wrong


@pytest.mark.timeout(int(DRAIN_S) + 300)
def test_a_batch_of_200_graded_once_each_beside_a_competitor(tmp_path: Path) -> None:
    began = time.monotonic()
    with (
        tails_on_failure(tmp_path / "logs"),
        production_install(
            tmp_path,
            workers=2,
            settings={
                "batch_max_in_flight": str(ITEMS),
                "visibility_timeout_s": str(VISIBILITY_TIMEOUT_S),
            },
        ) as install,
    ):
        trainer = install.token
        other_token = add_user(install.env, "second-trainer")
        competitor = add_user(install.env, "competitor")
        items = batch_items()
        assert len(items) == ITEMS == 200

        first = post_batch(install, trainer, items, "step-1")
        assert first.status_code == 202, first.text
        batch_id = first.json()["id"]
        # The competitor sends one test run while the batch's items still wait.
        sent_at = time.monotonic()
        competitor_sid = submit(install.base, competitor, PROBLEM, RIGHT, "test")

        again = post_batch(install, trainer, items, "step-1")
        assert again.status_code == 202, again.text
        assert again.json() == first.json()

        over = post_batch(install, trainer, items[:1], "step-2")
        assert over.status_code == 429, over.text
        assert int(over.headers["Retry-After"]) > 0
        assert over.json()["error"]
        # The cap is the token's: another trainer's token still sends.
        elsewhere = post_batch(install, other_token, items[:1], "step-1")
        assert elsewhere.status_code == 202, elsewhere.text

        log = install.workers[0].log
        competitor_report = wait_for(install.base, competitor, competitor_sid, TERMINAL, 300, log)
        waiting_then = unfinished_items(install, batch_id)
        competitor_s = time.monotonic() - sent_at
        assert competitor_report["status"] == "passed", competitor_report["message"]

        done = follow(install, trainer, batch_id, DRAIN_S)
        other = follow(install, other_token, elsewhere.json()["id"], 300)
        graded_in_workers = gradings_run(install)
        firsts = {kind: first_of_kind(install, trainer, done, kind) for kind in KINDS}

        with install.database() as engine, engine.connect() as db:
            trainer_id = db.scalar(select(User.id).where(User.name == "careful"))
            batches = db.scalar(
                select(func.count()).select_from(Batch).where(Batch.user_id == trainer_id)
            )
            submissions = db.scalars(select(Submission.id).where(Submission.user_id == trainer_id))
            trainer_sids = set(submissions)
            every_sid = set(db.scalars(select(Submission.id)))
            replaced = db.scalar(select(func.count()).select_from(SubmissionVerdict))
            grade_jobs = Counter(
                db.scalars(
                    select(OutboxMessage.subject_id).where(OutboxMessage.job == jobs.Job.GRADE)
                )
            )
            competitor_finished, last_item_finished = (
                db.scalar(select(Submission.finished_at).where(Submission.id == competitor_sid)),
                db.scalar(
                    select(func.max(Submission.finished_at)).where(Submission.batch_id == batch_id)
                ),
            )

    wall_s = time.monotonic() - began
    print(
        f"\na batch of {ITEMS} on two CPU workers: {wall_s:.0f} s from start to the last check; "
        f"the competitor's verdict {competitor_s:.0f} s after it was sent, {waiting_then} "
        "items still waiting then"
    )

    # Every item exactly once, with its kind's verdict and error class.
    assert done["counts"]["queued"] == done["counts"]["running"] == 0
    assert sum(done["counts"].values()) == ITEMS
    assert sorted(item["key"] for item in done["items"]) == sorted(item["key"] for item in items)
    assert not wrong_verdicts(done["items"]), wrong_verdicts(done["items"])
    expected_counts = Counter({status: 0 for status in done["counts"]})
    for _, count, status, _, _ in KINDS.values():
        expected_counts[status] += count
    assert done["counts"] == dict(expected_counts)
    for item in done["items"]:
        assert item["speedup"] == {"eager": None, "compile": None}  # test mode ranks nothing
    # Why each kind got its verdict, as its first item's submission body says.
    for kind, (_, _, _, error_class, words) in KINDS.items():
        assert words in firsts[kind]["message"], (kind, firsts[kind]["message"][:500])
        assert firsts[kind]["error_class"] == error_class
    assert [item["status"] for item in other["items"]] == [KINDS[kind_of(items[0]["key"])][2]]

    # The retry made no second batch and no second submission; nothing was graded twice.
    assert batches == 1
    assert len(trainer_sids) == ITEMS
    assert {item["submission_id"] for item in done["items"]} == trainer_sids
    assert replaced == 0
    assert grade_jobs == Counter(every_sid)
    assert graded_in_workers == len(every_sid) == ITEMS + 2

    # Fair dispatch: the competitor's run was not queued behind the batch.
    assert competitor_finished is not None and last_item_finished is not None
    assert competitor_finished < last_item_finished
    assert waiting_then >= ITEMS // 2, f"only {waiting_then} items were still waiting"
