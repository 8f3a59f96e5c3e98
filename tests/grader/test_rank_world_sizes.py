"""A worker host that offers only some world sizes (KJ_WORLD_SIZES) grades a multi-rank
problem's cases on the largest it offers up to what each case asks for, and its report says
so; a case asking for fewer ranks than any it offers ends in `error`, as the worker's
shortfall (a trainer retries it elsewhere)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from grader.harness import grade
from grader.hostsettings import WORLD_SIZES_ENV, HostSettings, world_sizes
from grader.problem import Problem, load_problem
from grader.report import ErrorClass, Mode, Status, flag_codes


@pytest.fixture(scope="module")
def allreduce() -> Problem:
    return load_problem("allreduce")


def test_cases_run_on_the_ranks_the_host_offers_and_the_report_says_so(
    allreduce: Problem, solution: Callable[[str, str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(WORLD_SIZES_ENV, "2, 3")
    report = grade(allreduce, solution("allreduce", "pytorch"), mode=Mode.TEST, device="cpu")
    assert report.status == Status.PASSED, report.message + report.stderr[-2000:]
    # The 4-rank cases ran on 3 ranks (the most offered up to 4), the 2-rank ones as asked.
    assert [case.params["world_size"] for case in report.cases] == [2, 2, 3, 3]
    assert flag_codes(report.flags) == ["ranks.scaled"] and report.ranks_scaled
    assert "3 where a case asks for 4" in report.flags[0]


def test_a_case_under_every_offered_size_is_the_workers_shortfall(
    allreduce: Problem, solution: Callable[[str, str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(WORLD_SIZES_ENV, "4")
    report = grade(allreduce, solution("allreduce", "pytorch"), mode=Mode.TEST, device="cpu")
    assert report.status == Status.ERROR
    assert report.message.startswith("this worker offers world sizes 4; case ")
    assert report.error_class == ErrorClass.INFRASTRUCTURE


def test_the_setting_reads_sizes_and_names_what_is_not_one() -> None:
    assert world_sizes(" 4,2,,2 ") == (2, 4)
    assert HostSettings.from_env({}).world_sizes == ()
    with pytest.raises(ValueError, match="'two' is not a world size"):
        world_sizes("two")
