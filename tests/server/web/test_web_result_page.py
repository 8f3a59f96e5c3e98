"""A result page says each thing once and only what is true of the run: no timing columns
where nothing was timed, a traceback and a mismatch count once, the note on withheld details
only under a leaderboard-mode run whose details are withheld, and a profile's figures that
add up."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import torch

from grader.check import wrong_output
from server.db import session_scope
from server.models import Submission
from tests.server.web.test_web_pages import graded, new_problem
from tests.server.web_client import HTML, log_in, make_user

pytestmark = pytest.mark.anyio

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "submission.py", line 4, in custom_kernel\n'
    "    return a.nonexistent()\n"
    "AttributeError: 'Tensor' object has no attribute 'nonexistent'"
)


def stored(sid: int, *, status: str, message: str, **report: Any) -> None:
    """The submission's verdict and report as a worker would have recorded them."""
    with session_scope() as session:
        submission = session.get(Submission, sid)
        assert submission is not None
        submission.status, submission.message = status, message
        if status != "passed":
            submission.score = None
        submission.report = {**(submission.report or {}), "status": status, **report}


def untimed(kind: str, status: str = "passed", message: str = "") -> dict[str, Any]:
    return {"kind": kind, "params": {"size": 8}, "status": status, "message": message}


async def test_a_test_run_has_no_timing_columns(browser: httpx.AsyncClient) -> None:
    new_problem("untimed")
    author, token = make_user()
    sid = graded(token, "untimed", "t", mode="test")
    stored(sid, status="passed", message="all 2 test cases passed",
           cases=[untimed("test"), untimed("test")])  # fmt: skip
    await log_in(browser, author)
    page = (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    table = page.split('class="table cases-table', 1)[1].split("</table>", 1)[0]
    for column in ("Median", "Spread (IQR)", "CV", "Speed of light", "Samples"):
        assert f">{column}<" not in table, column
    assert ">test 0<" in table and ">test 1<" in table
    # A timed run keeps them.
    timed = graded(token, "untimed", "b", mode="benchmark")
    timed_page = (await browser.get(f"/submissions/{timed}", headers=HTML)).text
    assert ">Median<" in timed_page and ">Speed of light<" in timed_page


async def test_a_traceback_is_printed_once(browser: httpx.AsyncClient) -> None:
    new_problem("traced")
    author, token = make_user()
    sid = graded(token, "traced", "e", mode="test")
    message = f"custom_kernel raised:\n{TRACEBACK}"
    stored(sid, status="error", message=message, stderr=TRACEBACK + "\n",
           cases=[untimed("test", "error", message)])  # fmt: skip
    await log_in(browser, author)
    page = (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    assert page.count("AttributeError: &#39;Tensor&#39; object") == 1, page


async def test_a_mismatch_count_is_printed_once(browser: httpx.AsyncClient) -> None:
    new_problem("mismatched")
    author, token = make_user()
    sid = graded(token, "mismatched", "f", mode="test")
    # The listing of the first mismatches and the problem's own check, as the grader joins
    # them: both could count the differing elements.
    expected = torch.ones(8)

    def check(data: Any, output: Any) -> tuple[bool, str]:  # as problems/utils.py counts
        return False, "8 of 8 elements differ beyond rtol=1e-05, atol=1e-08"

    failure = wrong_output(check, {}, torch.zeros(8), lambda: expected, device="cpu",
                           tolerance={"rtol": 1e-5, "atol": 1e-8})  # fmt: skip
    case = f"case size=8: {failure}"
    stored(sid, status="failed", message=f"1 of 2 cases failed:\n{case}",
           cases=[untimed("test"), untimed("test", "failed", case)])  # fmt: skip
    await log_in(browser, author)
    page = (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    assert page.count("8 of 8 elements differ") == 1, page
    assert "1 of 2 cases failed: each case&#39;s message is in the table below" in page


async def test_the_withheld_note_only_where_details_are_withheld(
    browser: httpx.AsyncClient,
) -> None:
    new_problem("withheld")
    author, token = make_user()
    other, _ = make_user()
    cases = [untimed("test", "failed", "case size=8: wrong") for _ in range(6)]
    runs = {}
    for mode in ("test", "profile"):
        runs[mode] = graded(token, "withheld", mode, mode=mode)
        stored(runs[mode], status="failed", message="6 of 6 cases failed", cases=cases)
    ranked = graded(token, "withheld", "ranked", mode="leaderboard")
    stored(ranked, status="passed", message="all 6 benchmark cases passed", stdout="printed",
           cases=[{**untimed("benchmark"), "message": "slow start"} for _ in range(6)])  # fmt: skip
    note = "Output and error details of a leaderboard-mode run are withheld"
    # Another competitor reads neither the note nor six copies of "withheld".
    await log_in(browser, other)
    for mode, sid in runs.items():
        page = (await browser.get(f"/submissions/{sid}", headers=HTML)).text
        assert note not in page and "withheld in leaderboard mode" not in page, mode
        assert page.count("until the code is published") == 1, mode
    # The author of the ranked run reads the note once, and no per-case copy of it.
    await log_in(browser, author)
    page = (await browser.get(f"/submissions/{ranked}", headers=HTML)).text
    assert page.count(note) == 1
    assert "withheld in leaderboard mode" not in page
    for sid in runs.values():
        assert note not in (await browser.get(f"/submissions/{sid}", headers=HTML)).text


async def test_a_cpu_profile_heading_and_calls_add_up(browser: httpx.AsyncClient) -> None:
    new_problem("profile-sums")
    author, token = make_user()
    sid = graded(token, "profile-sums", "p", mode="profile")
    profile = {
        "tool": "torch.profiler",
        "why_not_ncu": "a CPU worker: Nsight Compute profiles CUDA kernels only",
        "calls": 3,
        "wall_us_per_call": 49.4,
        "rows": [{"name": "aten::add", "device_type": "CPU", "count": 3, "self_us": 75.0,
                  "total_us": 75.0, "self_device_us": 0.0, "device_us": 0.0}],
    }  # fmt: skip
    stored(sid, status="passed", message="all 1 benchmark cases passed and were profiled",
           cases=[{**untimed("benchmark"), "profile": profile}])  # fmt: skip
    await log_in(browser, author)
    page = (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    assert "49.4 µs a call in all, under the profiler" in page
    assert "25 µs of it in the operations listed" in page
    assert '<td class="num">1</td>' in page and ">1.0<" not in page


async def test_a_warning_says_what_to_do_and_keeps_why_folded(
    browser: httpx.AsyncClient,
) -> None:
    """Two warnings filled three screens of a phone: each now shows its title and what to
    do, its reasons folded under "Why"."""
    new_problem("folded")
    author, token = make_user()
    sid = graded(token, "folded", "w", mode="benchmark")
    timed = {"median_s": 1e-4, "iqr_over_median": 0.3, "cv": 0.3, "samples": 40}
    case = {**untimed("benchmark"), "time": timed, "roofline": {"sol_fraction": 2.0}}
    stored(sid, status="passed", message="all 1 benchmark cases passed", cases=[case])
    await log_in(browser, author)
    page = (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    for key in ("noisy-warning", "sol-warning"):
        box = page.split(f'id="{key}"', 1)[1].split("</div>", 1)[0]
        shown, folded = box.split('<details class="why">', 1)
        assert "What to do:" in shown and "</h2>" in shown
        assert "<summary>Why</summary>" in folded and "<p>" in folded.split("</details>")[0]
