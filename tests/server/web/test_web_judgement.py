"""Numbers a competitor can act on: a robust spread beside each median and a warning when the
machine was noisy or a speed-of-light fraction says the peaks are off; the benchmark cases
each GPU type really runs; your rank and best score on the problem page."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from server.db import session_scope
from server.models import Submission
from tests.server.conftest import Account, changed_settings
from tests.server.web.test_web_pages import graded, new_problem
from tests.server.web_client import HTML, log_in, make_user, sign_in

pytestmark = pytest.mark.anyio


def timed_case(
    median_s: float, iqr_over_median: float, cv: float, sol_fraction: float = 0.5
) -> dict[str, Any]:
    return {
        "kind": "benchmark",
        "params": {"size": 256},
        "status": "passed",
        "time": {
            "median_s": median_s,
            "iqr_over_median": iqr_over_median,
            "cv": cv,
            "samples": 40,
        },
        "roofline": {"sol_fraction": sol_fraction},
    }


def with_cases(sid: int, cases: list[dict[str, Any]]) -> None:
    """The stored report's cases, as a worker would have measured them."""
    with session_scope() as session:
        submission = session.get(Submission, sid)
        assert submission is not None
        submission.report = {**(submission.report or {}), "cases": cases}


def benchmarked(token: str, problem: str, marker: str, *cases: dict[str, Any]) -> int:
    """A passed benchmark-mode submission whose report carries these timed cases."""
    sid = graded(token, problem, marker, mode="benchmark")
    with_cases(sid, list(cases))
    return sid


async def test_a_noisy_result_is_flagged_and_a_steady_one_is_not(
    browser: httpx.AsyncClient, alice: Account
) -> None:
    new_problem("noise")
    # One slow sample inflates the CV (135%) but not the interquartile range: still steady.
    steady = benchmarked(
        alice.token, "noise", "steady", timed_case(1e-4, 0.021, 1.35), timed_case(2e-4, 0.034, 0.04)
    )
    noisy = benchmarked(
        alice.token, "noise", "noisy", timed_case(1e-4, 0.03, 0.05), timed_case(2e-4, 0.34, 1.6)
    )

    calm = (await browser.get(f"/submissions/{steady}", headers=HTML)).text
    assert 'id="noisy-warning"' not in calm and 'id="sol-warning"' not in calm
    # The robust spread stands beside each median, the CV after it.
    assert "Spread (IQR)" in calm and ">2.1%<" in calm and ">135.0%<" in calm

    page = (await browser.get(f"/submissions/{noisy}", headers=HTML)).text
    warning = page.split('id="noisy-warning"', 1)[1].split("</div>", 1)[0]
    assert "The machine was noisy" in warning
    assert "On 1 of 2 timed cases" in warning and "up to 34%, on benchmark 1" in warning
    assert "submit again" in warning and "tell the organizers" in warning
    assert re.search(r'class="num mono noisy">34\.0%', page)
    # The polled part of the page carries it too, so it appears when grading ends.
    assert 'id="noisy-warning"' in (await browser.get(f"/submissions/{noisy}/live")).text


async def test_a_speed_of_light_above_one_says_the_peaks_are_off(
    browser: httpx.AsyncClient, alice: Account
) -> None:
    new_problem("lightspeed")
    sid = benchmarked(
        alice.token,
        "lightspeed",
        "fast",
        timed_case(1e-4, 0.02, 0.03, 2.43),
        timed_case(2e-4, 0.02, 0.03, 0.8),
    )
    page = (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    warning = page.split('id="sol-warning"', 1)[1].split("</div>", 1)[0]
    assert "Faster than the speed of light" in warning
    assert "above 100% on benchmark 0 (243%)" in warning and "benchmark 1" not in warning
    assert "compare times, not speed-of-light percentages" in warning
    assert 'id="noisy-warning"' not in page
    plain = graded(alice.token, "lightspeed", "plain", mode="benchmark")
    assert 'id="sol-warning"' not in (await browser.get(f"/submissions/{plain}", headers=HTML)).text


def listed_cases(page: str, gpus: str) -> list[str]:
    match = re.search(rf'<ul class="cases" data-gpus="{gpus}">(.*?)</ul>', page, re.S)
    assert match, f"no benchmark list for {gpus}"
    return re.findall(r'<span class="k">size</span>=(\d+)', match.group(1))


async def test_the_problem_page_lists_the_cases_each_gpu_type_runs(
    browser: httpx.AsyncClient,
) -> None:
    """vectorsum's GPU cases run to 64 Mi values; a CPU worker grades its cpu_benchmarks."""
    with changed_settings(gpu_types="cpu,h200"):
        await sign_in(browser)  # a signed-in reader gets the page made for this request
        page = (await browser.get("/problems/vectorsum", headers=HTML)).text
    assert listed_cases(page, "cpu") == ["65536", "262144", "1048576"]
    assert listed_cases(page, "h200") == ["1048576", "4194304", "16777216", "67108864"]
    assert "<dt>Benchmark cases</dt><dd>3 on cpu; 4 on h200</dd>" in page

    alone = (await browser.get("/problems/vectorsum", headers=HTML)).text
    assert listed_cases(alone, "cpu") == ["65536", "262144", "1048576"]
    assert 'data-gpus="h200"' not in alone


async def test_your_rank_and_best_score_on_the_problem_page(
    browser: httpx.AsyncClient, client: httpx.AsyncClient, alice: Account
) -> None:
    new_problem("standing")
    second, second_token = make_user()
    graded(alice.token, "standing", "fast", score=1e-4)  # the leader
    best = graded(second_token, "standing", "better", score=2e-4)
    graded(second_token, "standing", "worse", score=3e-4)

    anonymous = (await client.get("/problems/standing", headers=HTML)).text
    assert 'id="your-standing"' not in anonymous
    assert 'href="/problems/standing/bundle"' in anonymous

    await log_in(browser, second)
    page = (await browser.get("/problems/standing", headers=HTML)).text
    standing = page.split('id="your-standing"', 1)[1].split("</section>", 1)[0]
    row = standing.split('data-gpu="cpu"', 1)[1].split("</tr>", 1)[0]
    assert "<strong>2</strong> of 2" in row
    assert f'<a href="/submissions/{best}">200 µs</a>' in row

    await sign_in(browser)
    fresh = (await browser.get("/problems/standing", headers=HTML)).text
    assert "no ranked run yet" in fresh.split('id="your-standing"', 1)[1]


async def test_cpu_benchmark_mode_says_its_inputs_were_warm_not_that_the_peaks_are_off(
    browser: httpx.AsyncClient,
) -> None:
    """Benchmark mode on a CPU worker times one input set over and over: a case beyond the
    speed of light there is the CPU's caches, and leaderboard mode's fresh inputs are slower.
    The page says so instead of blaming the worker's peaks."""
    new_problem("warm")
    _, token = make_user()
    sid = graded(token, "warm", "cached", mode="benchmark")
    ranked = graded(token, "warm", "ranked", mode="leaderboard")
    for graded_id in (sid, ranked):
        with_cases(graded_id, [timed_case(1e-4, 0.02, 0.03, 2.43)])
        with session_scope() as session:
            submission = session.get(Submission, graded_id)
            assert submission is not None
            submission.report = {**(submission.report or {}), "device": "cpu"}
    page = (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    warning = page.split('id="sol-warning"', 1)[1].split("</div>", 1)[0]
    assert "one input set over and over" in warning and "peaks" not in warning
    assert 'id="warm-inputs"' in page and "fresh inputs" in page
    other = (await browser.get(f"/submissions/{ranked}", headers=HTML)).text
    assert 'id="warm-inputs"' not in other
