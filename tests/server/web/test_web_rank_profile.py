"""A multi-rank profile on the submission's page and its API body: one table per rank,
headed by the rank, shown to the author alone (each rank's table names the submission's
own operations, as a single device's does)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from server.db import session_scope
from server.models import Submission
from tests.server.web.test_web_pages import graded, new_problem
from tests.server.web_client import HTML, log_in, make_user, post_form

pytestmark = pytest.mark.anyio

WHY_NOT_NCU = "a CPU worker: Nsight Compute profiles CUDA kernels only"


def rank_profile(rank: int, operation: str, self_us: float) -> dict[str, Any]:
    """One rank's torch.profiler table as grader/rankharness.py reports it."""
    return {
        "tool": "torch.profiler",
        "why_not_ncu": WHY_NOT_NCU,
        "calls": 3,
        "wall_us_per_call": 90.0 + rank,
        "rows": [{"name": operation, "device_type": "CPU", "count": 3, "self_us": self_us,
                  "total_us": self_us, "self_device_us": 0.0, "device_us": 0.0}],
        "rank": rank,
    }  # fmt: skip


async def test_each_rank_s_profile_is_shown_to_the_author_alone(
    browser: httpx.AsyncClient,
) -> None:
    new_problem("rank-profiled")
    author, token = make_user()
    other, _ = make_user()
    sid = graded(token, "rank-profiled", "ranks", mode="profile")
    case = {
        "kind": "benchmark",
        "params": {"size": 4096, "world_size": 2},
        "status": "passed",
        "time": None,
        "profile": None,
        "rank_profiles": [
            rank_profile(0, "my_rank0_reduce_scatter", 150.0),
            rank_profile(1, "my_rank1_all_gather", 300.0),
        ],
    }
    with session_scope() as session:
        submission = session.get(Submission, sid)
        assert submission is not None
        submission.score = None
        submission.message = "all 1 benchmark cases passed and were profiled on every rank"
        submission.report = {**(submission.report or {}), "cases": [case]}

    await log_in(browser, author)
    page = (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    section = page.split('id="profile"', 1)[1].split("</section>", 1)[0]
    # One heading and one table per rank, in rank order, each with that rank's operations.
    first, second = section.split(" · rank 0</h4>", 1)[1].split(" · rank 1</h4>", 1)
    assert "my_rank0_reduce_scatter" in first and "my_rank1_all_gather" not in first
    assert "my_rank1_all_gather" in second and "my_rank0_reduce_scatter" not in second
    # Per call: 150 µs and 300 µs of self time over 3 calls.
    assert ">50 µs<" in first and ">100 µs<" in second
    assert "90 µs a call in all" in first and "91 µs a call in all" in second
    assert "on every rank at once" in section and WHY_NOT_NCU in section
    api = await browser.get(
        f"/api/v1/submissions/{sid}", headers={"Authorization": f"Bearer {token}"}
    )
    shown = api.json()["cases"][0]
    assert [p["rank"] for p in shown["rank_profiles"]] == [0, 1]
    assert shown["rank_profiles"][1]["rows"][0]["name"] == "my_rank1_all_gather"

    await post_form(browser, "/logout", {}, from_page="/")
    await log_in(browser, other)
    for path in (f"/submissions/{sid}", f"/api/v1/submissions/{sid}"):
        text = (await browser.get(path, headers=HTML if "api" not in path else {})).text
        assert "my_rank0_reduce_scatter" not in text and "my_rank1_all_gather" not in text
