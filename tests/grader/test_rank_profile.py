"""Profile mode on a multi-rank problem, on the CPU with gloo: each case's output checked on
every rank, then every rank's calls profiled with torch.profiler, and the case carrying one
table per rank, naming it; a rank that raises while profiled ends the grading naming it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from grader.harness import grade
from grader.problem import Problem, load_problem
from grader.report import Mode, Status

# Right on every rank; rank 1 alone flips a copy of its input on the way, and the other
# ranks scale theirs by one: each rank's own operations show in its own table only.
WORK_BY_RANK = """
import torch
import torch.distributed as dist
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    if dist.get_rank() == 1:
        out = torch.flip(torch.flip(data, [0]), [0])
    else:
        out = data * 1.0
    dist.all_reduce(out)
    return out
"""

# Right on its first (checked) call; rank 1 raises on its second, the first of profile
# mode's calls, after the collective its peer waits in.
RAISES_WHEN_PROFILED = """
import torch.distributed as dist
from task import input_t, output_t

calls = 0


def custom_kernel(data: input_t) -> output_t:
    global calls
    calls += 1
    out = data.clone()
    dist.all_reduce(out)
    if dist.get_rank() == 1 and calls == 2:
        raise RuntimeError("rank 1 gives up on its second call")
    return out
"""


@pytest.fixture(scope="module")
def allreduce() -> Problem:
    return load_problem("allreduce")


def one_case(problem: Problem) -> Problem:
    """The problem with one small 2-rank benchmark case on the CPU."""
    cases = [{"size": 4096, "seed": 7, "world_size": 2}]
    return dataclasses.replace(problem, spec={**problem.spec, "cpu_benchmarks": cases})


def test_a_correct_solution_is_profiled_on_every_rank(
    allreduce: Problem, solution: Callable[[str, str], str]
) -> None:
    report = grade(allreduce, solution("allreduce", "pytorch"), mode=Mode.PROFILE, device="cpu")
    assert report.status == Status.PASSED, report.message + report.stderr[-2000:]
    assert report.score is None and "a profile never ranks" in report.message
    assert [case.params for case in report.cases] == allreduce.benchmarks_for("cpu")
    for case in report.cases:
        assert case.time is None and case.profile is None
        assert case.rank_profiles is not None
        assert [p.rank for p in case.rank_profiles] == list(range(case.params["world_size"]))
        for profile in case.rank_profiles:
            assert profile.tool == "torch.profiler" and profile.calls == 3
            assert profile.why_not_ncu is not None and "CPU worker" in profile.why_not_ncu
            assert profile.rows is not None
            counts = {row["name"]: row["count"] for row in profile.rows}
            # Each profiled call of this rank clones its input and all-reduces the copy.
            assert counts["aten::clone"] == counts["c10d::allreduce_"] == 3, counts
            assert profile.wall_us_per_call is not None and profile.wall_us_per_call > 0
    shown = report.to_dict()["cases"][1]
    assert "profile" in shown and shown["profile"] is None
    assert [p["rank"] for p in shown["rank_profiles"]] == [0, 1, 2, 3]


def test_each_rank_s_table_holds_its_own_calls(allreduce: Problem) -> None:
    report = grade(one_case(allreduce), WORK_BY_RANK, mode=Mode.PROFILE, device="cpu")
    assert report.status == Status.PASSED, report.message + report.stderr[-2000:]
    (case,) = report.cases
    assert case.rank_profiles is not None
    names = [{row["name"] for row in p.rows or []} for p in case.rank_profiles]
    assert "aten::flip" in names[1] and "aten::flip" not in names[0], names
    assert "aten::mul" in names[0] and "aten::mul" not in names[1], names
    (flips,) = [row for row in case.rank_profiles[1].rows or [] if row["name"] == "aten::flip"]
    assert flips["count"] == 2 * 3


def test_a_rank_that_raises_while_profiled_is_an_error_naming_it(allreduce: Problem) -> None:
    report = grade(one_case(allreduce), RAISES_WHEN_PROFILED, mode=Mode.PROFILE, device="cpu")
    assert report.status == Status.ERROR, report.message
    # Rank 0, left waiting in the collective of the next call, raises after it.
    assert report.message.startswith(
        "custom_kernel raised on rank 1 during case size=4096 seed=7 world_size=2 (profiled calls)"
    ), report.message
    assert report.message.endswith("RuntimeError: rank 1 gives up on its second call")
    (case,) = report.cases
    assert case.status == Status.ERROR and case.rank_profiles is None
