"""A thorough grading times each benchmark case with more samples than a standard one, to
a smaller standard error, and checks as much."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from grader.harness import grade
from grader.precision import MIN_SAMPLES, RANKED_MAX_SAMPLES, TARGET_REL_SEM, Precision
from grader.problem import Problem
from grader.report import Mode, Status
from grader.timing import enough_samples

WithCases = Callable[..., Problem]

# Right on the first call; afterwards it hands back the first call's sum again.
REPLAYS_ITS_FIRST_OUTPUT = """
import torch

_first = []


def custom_kernel(data):
    A, B, out = data
    if not _first:
        _first.append(torch.add(A, B))
    return out.copy_(_first[0])
"""


def test_thorough_asks_four_times_the_samples_to_half_the_standard_error() -> None:
    thorough = Precision.THOROUGH
    assert thorough.min_samples == 4 * MIN_SAMPLES
    assert thorough.ranked_max_samples == 4 * RANKED_MAX_SAMPLES
    assert thorough.target_rel_sem == pytest.approx(TARGET_REL_SEM / 2)
    assert thorough.budget_s(10.0) == 40.0
    steady = [1.0] * MIN_SAMPLES
    assert enough_samples(steady) and not enough_samples(steady, thorough)
    assert enough_samples([1.0] * thorough.min_samples, thorough)


def test_a_thorough_grading_may_take_longer(vectoradd: Problem) -> None:
    cases = max(len(vectoradd.benchmarks), len(vectoradd.benchmarks_for("cpu")))
    for mode in (Mode.BENCHMARK, Mode.LEADERBOARD):
        standard = vectoradd.timeout_for(mode)
        thorough = vectoradd.timeout_for(mode, Precision.THOROUGH)
        assert thorough == standard + 2 * 3 * vectoradd.case_time_budget_s * cases
    assert vectoradd.timeout_for(Mode.TEST, Precision.THOROUGH) == vectoradd.test_timeout


@pytest.mark.parametrize("mode", [Mode.BENCHMARK, Mode.LEADERBOARD])
def test_a_thorough_grading_times_each_case_with_more_samples(
    vectoradd: Problem,
    with_cases: WithCases,
    solution: Callable[[str, str], str],
    mode: Mode,
) -> None:
    # A budget well past the runner's warm-up (0.2 s), so that both precisions sample.
    problem = with_cases(vectoradd, benchmarks=[{"size": 64, "seed": 11}], budget_s=1.0)
    code = solution("vectoradd", "pytorch")
    samples: dict[Precision, int] = {}
    for precision in Precision:
        report = grade(problem, code, mode=mode, device="cpu", precision=precision)
        assert report.status == Status.PASSED, report.message + report.stderr
        assert report.score is not None
        (case,) = report.cases
        assert case.time is not None
        samples[precision] = case.time.samples
    assert samples[Precision.THOROUGH] > samples[Precision.STANDARD]
    assert samples[Precision.THOROUGH] >= Precision.THOROUGH.min_samples


def test_a_thorough_ranked_grading_still_checks_every_timed_call(
    vectoradd: Problem, with_cases: WithCases
) -> None:
    problem = with_cases(vectoradd, benchmarks=[{"size": 64, "seed": 11}], budget_s=0.2)
    report = grade(
        problem,
        REPLAYS_ITS_FIRST_OUTPUT,
        mode=Mode.LEADERBOARD,
        device="cpu",
        precision=Precision.THOROUGH,
    )
    assert report.status == Status.FAILED, report.message
    assert "timed call 1" in report.message
    assert report.score is None
