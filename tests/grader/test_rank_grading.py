"""Multi-rank problems (task.yml `multi_gpu: true`) graded on the CPU with gloo: every rank's
output checked by the trusted reference group, each call's figure its slowest rank's, and a
rank that hangs, dies or raises named in the verdict."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable

import pytest

from grader.harness import grade
from grader.problem import Problem, load_problem
from grader.ranksession import RankOutcome, RankState, verdict
from grader.report import Mode, Status, flag_codes

HANGS_AFTER_ITS_COLLECTIVE = """
import time
import torch.distributed as dist
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    out = data.clone()
    dist.all_reduce(out)
    if dist.get_rank() == 1:
        while True:
            time.sleep(1)
    return out
"""

DIES_ON_RANK_1 = """
import os
import torch.distributed as dist
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    if dist.get_rank() == 1:
        os._exit(3)
    out = data.clone()
    dist.all_reduce(out)
    return out
"""

FORGES_ITS_CLOCK = """
import time
import torch.distributed as dist
from task import input_t, output_t

_real = time.perf_counter
time.perf_counter = lambda: _real() / 1000


def custom_kernel(data: input_t) -> output_t:
    out = data.clone()
    dist.all_reduce(out)
    return out
"""


@pytest.fixture(scope="module")
def allreduce() -> Problem:
    return load_problem("allreduce")


def quick(problem: Problem, **spec: object) -> Problem:
    """The problem with other cases or limits (a hanging rank should not hold a test 20 s)."""
    return dataclasses.replace(problem, spec={**problem.spec, **spec})


def test_the_problem_declares_ranks(allreduce: Problem) -> None:
    assert allreduce.multi_gpu
    sizes = {case["world_size"] for case in allreduce.tests + allreduce.benchmarks_for("cpu")}
    assert sizes == {2, 4}


def test_a_correct_solution_passes_at_two_and_four_ranks(
    allreduce: Problem, solution: Callable[[str, str], str]
) -> None:
    code = solution("allreduce", "pytorch")
    report = grade(allreduce, code, mode=Mode.TEST, device="cpu")
    assert report.status == Status.PASSED, report.message + report.stderr[-2000:]
    assert [case.params["world_size"] for case in report.cases] == [2, 2, 4, 4]


def test_a_wrong_solution_fails_naming_each_wrong_rank(
    allreduce: Problem, solution: Callable[[str, str], str]
) -> None:
    problem = quick(allreduce, tests=[{"size": 64, "seed": 1, "world_size": 4}])
    code = solution("allreduce", "wrong")
    report = grade(problem, code, mode=Mode.TEST, device="cpu")
    assert report.status == Status.FAILED
    for rank in range(4):
        assert f"rank {rank}: " in report.message, report.message


def test_benchmark_ranks_each_call_by_its_slowest_rank(
    allreduce: Problem, solution: Callable[[str, str], str]
) -> None:
    problem = quick(allreduce, case_time_budget_s=0.3)
    code = solution("allreduce", "pytorch")
    report = grade(problem, code, mode=Mode.BENCHMARK, device="cpu")
    assert report.status == Status.PASSED, report.message + report.stderr[-2000:]
    assert report.score is not None and report.score > 0
    for case in report.cases:
        assert case.time is not None and case.ranks is not None
        assert [r.rank for r in case.ranks] == list(range(case.params["world_size"]))
        assert case.time.ranked_by == "grader"
        # Each call's figure is at least every rank's, so the median is too.
        assert all(case.time.median_s >= r.median_s for r in case.ranks)
        assert case.rank_skew_s is not None and case.rank_skew_s >= 0
    assert report.to_dict()["cases"][0]["ranks"][0]["samples"] >= 5
    medians = [case.time.median_s for case in report.cases if case.time]
    assert report.score == pytest.approx(statistics.geometric_mean(medians))


def test_a_rank_s_own_clock_is_shown_and_flagged_never_ranked(allreduce: Problem) -> None:
    problem = quick(
        allreduce, case_time_budget_s=0.3, cpu_benchmarks=allreduce.spec["cpu_benchmarks"][:1]
    )
    report = grade(problem, FORGES_ITS_CLOCK, mode=Mode.BENCHMARK, device="cpu", screen=False)
    assert report.status == Status.PASSED, report.message
    (case,) = report.cases
    assert case.ranks is not None and case.time is not None
    for figures in case.ranks:
        assert figures.runner_median_s is not None
        assert figures.runner_median_s < figures.median_s / 100
    # The harness's clock still sees the work: the copy of 256 KiB and an all-reduce.
    assert case.time.median_s > 1e-5
    assert "timing.runner_clock" in flag_codes(report.flags), report.flags


def test_what_task_yml_requires_comes_first(allreduce: Problem) -> None:
    problem = quick(allreduce, requires={"devices": ["mi300x8"]})
    report = grade(problem, "", mode=Mode.TEST, device="cpu")
    assert report.status == Status.ERROR
    assert report.message.startswith("this problem needs a device of type mi300x8")


def test_a_hanging_rank_times_out_and_is_named(allreduce: Problem) -> None:
    problem = quick(
        allreduce, tests=[{"size": 64, "seed": 1, "world_size": 2}], test_cases_timeout=5
    )
    report = grade(problem, HANGS_AFTER_ITS_COLLECTIVE, mode=Mode.TEST, device="cpu")
    assert report.status == Status.TIMEOUT, report.message
    assert report.message.startswith("rank 1 did not finish"), report.message
    assert "(rank 0 did)" in report.message


def test_a_dying_rank_is_a_runtime_error_naming_it(allreduce: Problem) -> None:
    problem = quick(allreduce, tests=[{"size": 64, "seed": 1, "world_size": 2}])
    report = grade(problem, DIES_ON_RANK_1, mode=Mode.TEST, device="cpu", screen=False)
    assert report.status == Status.ERROR, report.message
    assert report.message.startswith("rank 1 exited during case"), report.message
    assert report.error_class == "runtime"


def test_single_device_problems_take_the_usual_path(solution: Callable[[str, str], str]) -> None:
    problem = load_problem("vectorsum")
    assert not problem.multi_gpu
    report = grade(problem, solution("vectorsum", "pytorch"), mode=Mode.TEST, device="cpu")
    assert report.status == Status.PASSED
    assert all(case.ranks is None for case in report.cases)
    assert "ranks" not in report.to_dict()["cases"][0]


def _outcome(rank: int, state: RankState) -> RankOutcome:
    reply = {"error": "peer closed"} if state == RankState.RAISED else {}
    return RankOutcome(rank, state, reply)


def test_the_verdict_blames_the_rank_that_died_not_its_waiting_peers() -> None:
    """A peer blocked in a collective with a dead rank raises or stays silent: the dead one
    is named; a raised one before a silent one; silence alone is a timeout."""
    died = verdict(
        [
            _outcome(0, RankState.RAISED),
            _outcome(1, RankState.EXITED),
            _outcome(2, RankState.SILENT),
        ],
        "call 1",
    )
    assert died is not None and died.status == Status.ERROR
    assert died.message == "rank 1 exited during call 1"
    raised = verdict([_outcome(0, RankState.SILENT), _outcome(1, RankState.RAISED)], "call 1")
    assert raised is not None and raised.message.startswith("custom_kernel raised on rank 1")
    silent = verdict([_outcome(0, RankState.ANSWERED), _outcome(1, RankState.SILENT)], "call 1")
    assert silent is not None and silent.status == Status.TIMEOUT
    assert verdict([_outcome(0, RankState.ANSWERED)], "call 1") is None


def test_the_verdict_shows_the_error_of_the_rank_that_raised_first() -> None:
    """A peer whose collective its partner left raises too, later: the first error is the
    one shown, and the later ranks are named after it."""
    culprit = RankOutcome(1, RankState.RAISED, {"error": "ValueError: my own bug"}, 0.010)
    victim = RankOutcome(0, RankState.RAISED, {"error": "RuntimeError: Connection reset"}, 0.015)
    stop = verdict([victim, culprit], "call 1")
    assert stop is not None and stop.status == Status.ERROR
    assert stop.message == (
        "custom_kernel raised on rank 1 during call 1 (rank 0 raised after it):\n"
        "ValueError: my own bug"
    )


def test_validation_checks_that_every_case_names_its_ranks(allreduce: Problem) -> None:
    from grader.validate import check_reference

    assert check_reference(allreduce, "cpu").outcome == "ok"
    cases = [{k: v for k, v in case.items() if k != "world_size"} for case in allreduce.tests]
    unranked = dataclasses.replace(allreduce, spec={**allreduce.spec, "tests": cases})
    refused = check_reference(unranked, "cpu")
    assert refused.outcome == "problem"
    assert "names no world_size" in refused.message and "size=1000" in refused.message
