"""Each correctness and timing rule, shown by a submission that breaks it."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grader.calibrate import DevicePeaks
from grader.expected import ProblemSide
from grader.harness import grade
from grader.problem import BUILTIN_DIR, Problem, load_problem
from grader.report import PhaseClock

ADD = """
import torch
def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
"""


def small(with_cases: Callable[..., Problem], vectoradd: Problem) -> Problem:
    return with_cases(vectoradd, benchmarks=[{"size": 96, "seed": 3}], budget_s=0.3)


@pytest.fixture
def small_vectoradd(with_cases: Callable[..., Problem], vectoradd: Problem) -> Problem:
    """vectoradd with one small benchmark case and a short timing budget."""
    return small(with_cases, vectoradd)


def test_a_call_that_writes_nothing_fails(vectoradd: Problem) -> None:
    """The output buffer is poisoned before the call: whatever the memory held, an
    untouched `out` is NaN and fails."""
    report = grade(vectoradd, "def custom_kernel(data):\n    return data[2]\n")
    assert report.status == "failed"
    assert "got nan" in report.message


def test_skipping_work_after_the_checked_call_fails_in_benchmark_mode(
    small_vectoradd: Problem,
) -> None:
    lazy = ADD.replace(
        "def custom_kernel(data):",
        "calls = 0\ndef custom_kernel(data):\n    global calls\n    calls += 1\n"
        "    if calls > 1:\n        return data[2]",
    )
    report = grade(small_vectoradd, lazy, mode="benchmark")
    assert report.status == "failed"
    assert "output of the last timed call" in report.message
    assert report.score is None


def test_skipping_work_on_repeated_inputs_fails_in_leaderboard_mode(
    small_vectoradd: Problem,
) -> None:
    """A cache replaying the first result: every timed call gets fresh inputs and its own
    output checked, so the replay is wrong."""
    replay = ADD.replace(
        "def custom_kernel(data):",
        "seen = None\ndef custom_kernel(data):\n    global seen\n"
        "    if seen is not None:\n        data[2].copy_(seen)\n        return data[2]\n"
        "    seen = (data[0] + data[1]).clone()",
    )
    # Benchmark mode's runner times one public input set over and over, but the ranked time
    # (the grader's own clock) runs on fresh sets and checks them, so the replay is caught.
    benchmark = grade(small_vectoradd, replay, mode="benchmark")
    assert benchmark.status == "failed"
    assert "fresh inputs the grader timed on its own clock" in benchmark.message
    report = grade(small_vectoradd, replay, mode="leaderboard", secret_seed=7)
    assert report.status == "failed"
    assert "timed call" in report.message


def test_right_on_test_sizes_wrong_on_benchmark_sizes_fails(
    vectoradd: Problem, with_cases: Callable[..., Problem]
) -> None:
    sized = ADD.replace(
        "    return torch.add(a, b, out=out)",
        "    if a.shape[0] > 600:\n        return out.zero_()\n    return torch.add(a, b, out=out)",
    )
    assert grade(vectoradd, sized, mode="test").status == "passed"
    problem = with_cases(vectoradd, benchmarks=[{"size": 700, "seed": 5}], budget_s=0.3)
    report = grade(problem, sized, mode="benchmark")
    assert report.status == "failed"
    assert "size=700" in report.message


def test_a_time_under_the_physical_floor_is_rejected(
    small_vectoradd: Problem,
) -> None:
    """With peaks so low that no real call could beat the floor, an honest kernel's time is
    'impossible', which proves the rule is applied (on GPUs it is on by default)."""
    slow_machine = DevicePeaks(copy_bytes_per_s=1e3, matmul_flops_per_s=1e3, matmul_dtype="x")
    report = grade(small_vectoradd, ADD, mode="benchmark", peaks=slow_machine, enforce_floor=True)
    assert report.status == "rejected"
    assert "physical floor" in report.message
    honest = grade(small_vectoradd, ADD, mode="benchmark", peaks=slow_machine)  # CPU: not enforced
    assert honest.status == "passed"
    assert honest.cases[0].roofline is not None
    assert honest.cases[0].roofline.sol_fraction > 1


def test_a_problem_without_a_roofline_gets_its_floor_from_the_reference(
    with_cases: Callable[..., Problem],
) -> None:
    """A problem that declares no roofline (GPU MODE's and KernelBench's, imported as they
    are) still has a physical floor: what its reference's call read, wrote and computed, as
    torch counts it. Only a time under half of it is rejected (an honest kernel may skip work
    the reference does)."""
    matmul = load_problem("matmul")
    spec = {k: v for k, v in matmul.spec.items() if k != "roofline"}
    bare = with_cases(
        dataclasses.replace(matmul, spec=spec),
        benchmarks=[{"m": 64, "n": 48, "k": 32, "seed": 3}],
        budget_s=0.3,
    )
    assert not bare.declares_roofline
    code = (BUILTIN_DIR / "matmul" / "solutions" / "pytorch.py").read_text()
    # 0.1 GB/s and 0.1 GFLOP/s: the case's floor is 2 ms, far over any real call this size.
    slow = DevicePeaks(copy_bytes_per_s=1e8, matmul_flops_per_s=1e8, matmul_dtype="x")
    report = grade(bare, code, mode="benchmark", peaks=slow, enforce_floor=True)
    assert report.status == "rejected" and "0.5× the physical floor" in report.message
    fast = DevicePeaks(copy_bytes_per_s=1e15, matmul_flops_per_s=1e18, matmul_dtype="x")
    passed = grade(bare, code, mode="benchmark", peaks=fast, enforce_floor=True)
    assert passed.status == "passed"
    roofline = passed.cases[0].roofline
    assert roofline is not None and roofline.measured
    assert roofline.bytes == 2.0 * (64 * 32 + 32 * 48 + 64 * 48)  # 16-bit A, B and A @ B
    assert roofline.flops == 2.0 * 64 * 48 * 32


def _claiming(factor: str) -> str:
    """ADD taking 2 ms of CPU per call (busy, not asleep: on the CPU the grader also counts
    the sandbox's CPU time), with the runner's timer patched to report `factor` of it."""
    busy = (
        "a, b, out = data\n    t0 = time.perf_counter()\n"
        "    while time.perf_counter() - t0 < 0.002:\n        pass"
    )
    return (
        ADD.replace("a, b, out = data", busy)
        + f"""
import time
import grader.timing
_real = grader.timing.Timer.one_call
def _claim(self, fn, data, *args):
    seconds, output = _real(self, fn, data, *args)
    return {factor}, output
grader.timing.Timer.one_call = _claim
"""
    )


def test_times_below_what_the_graders_clock_allows_rank_at_its_bound(
    small_vectoradd: Problem,
) -> None:
    """A runner claiming a microsecond, or a tenth of its real time, for calls that take
    2 ms: on the CPU the grader's own clock over batches ranks, the claims count no less
    than 95% of its figure, flagged (they are under a fifth of it), with the claim kept as
    the runner's."""
    screened = grade(small_vectoradd, _claiming("1e-6"), mode="benchmark")
    assert screened.status == "rejected" and "grader" in screened.message
    # Behind the screening (which code built from strings would slip past), the clock:
    for mode, claim in (("benchmark", "1e-6"), ("benchmark", "seconds * 0.1"),
                        ("leaderboard", "1e-6")):  # fmt: skip
        report = grade(small_vectoradd, _claiming(claim), mode=mode, screen=False)
        assert report.status == "passed", report.message
        assert report.score is not None and report.score >= 0.002 * 0.95
        assert any("under what the grader's clock allows" in flag for flag in report.flags)
        for case in report.cases:
            assert case.time is not None and case.runner_time is not None
            assert case.time.ranked_by == "grader"
            # The claims (1 µs, a tenth) are under a fifth of the grader's figure, which
            # holds the 2 ms each call spends, however busy the machine.
            assert case.runner_time.median_s < case.time.median_s / 5
            assert case.time.median_s >= 0.002 * 0.95
            assert case.time.median_s >= case.time.harness_floor_s
            assert case.time.harness_per_call_s >= 0.002


def test_honest_times_rank_by_the_graders_clock_unflagged(
    small_vectoradd: Problem,
) -> None:
    """On the CPU the harness's batches rank: an honest runner's median stands where it is
    within 5% of their figure, and otherwise counts as the nearer bound, with no flag."""
    report = grade(small_vectoradd, ADD, mode="leaderboard")
    assert report.status == "passed" and not report.flags
    for case in report.cases:
        assert case.time is not None
        figure = case.time.harness_per_call_s
        assert case.time.harness_floor_s == pytest.approx(figure * 0.95)
        assert figure * 0.95 * 0.999 <= case.time.median_s <= figure * 1.05 * 1.001
        moved = case.time.ranked_by == "grader"
        assert (case.runner_time is not None) == moved


def _reference_with_unused_buffer(tmp_path: Path) -> Problem:
    """vectoradd whose reference returns a new tensor and never touches `out`, the way GPU
    MODE's conv2d passes an output buffer its reference ignores."""
    folder = tmp_path / "vectoradd_unused_out"
    shutil.copytree(BUILTIN_DIR / "vectoradd", folder)
    shutil.copy(BUILTIN_DIR / "utils.py", tmp_path / "utils.py")
    reference = folder / "reference.py"
    text = reference.read_text()
    assert "    out[...] = A + B\n    return out\n" in text
    reference.write_text(
        text.replace("    out[...] = A + B\n    return out\n", "    return A + B\n")
    )
    return load_problem(folder)


def test_a_buffer_the_reference_ignores_may_be_written(tmp_path: Path) -> None:
    problem = _reference_with_unused_buffer(tmp_path)
    writes_buffer = (
        "def custom_kernel(data):\n    A, B, out = data\n    out[...] = A + B\n    return out\n"
    )
    assert grade(problem, writes_buffer).status == "passed"


def test_an_input_the_reference_reads_still_may_not_be_written(tmp_path: Path) -> None:
    problem = _reference_with_unused_buffer(tmp_path)
    code = (
        "def custom_kernel(data):\n    A, B, out = data\n    C = A + B\n    B.zero_()\n"
        "    return C\n"
    )
    report = grade(problem, code)
    assert report.status == "failed"
    assert "custom_kernel modified its inputs (data[1])" in report.message


def test_a_buffer_the_reference_ignores_is_poisoned_before_every_call(
    tmp_path: Path, with_cases: Callable[..., Problem]
) -> None:
    """Writing the ignored buffer once and returning it untouched afterwards fails: it is
    refilled with NaN before each timed call like any output."""
    problem = small(with_cases, _reference_with_unused_buffer(tmp_path))
    once = (
        "calls = 0\ndef custom_kernel(data):\n    global calls\n    calls += 1\n"
        "    A, B, out = data\n    if calls == 1:\n        out[...] = A + B\n    return out\n"
    )
    report = grade(problem, once, mode="benchmark")
    assert report.status == "failed", report.message
    assert "got nan" in report.message


def _side_counting_reference_calls(problem: Problem, folder: Path) -> tuple[Any, list[int]]:
    """The harness's side of a grading of `problem`, its reference's calls counted."""
    for name, text in problem.files.items():
        if "/" not in name:
            (folder / name).write_text(text)
    side = ProblemSide(problem, "cpu", None, PhaseClock({}))
    side.load(folder)
    calls = [0]
    reference = side.module.ref_kernel

    def counted(data: Any) -> Any:
        calls[0] += 1
        return reference(data)

    setattr(side.module, "ref_kernel", counted)  # noqa: B010 (a module attribute)
    return side, calls


def test_an_input_seen_read_is_not_probed_again_in_later_cases(
    tmp_path: Path, vectoradd: Problem
) -> None:
    """Telling an input from a buffer the reference ignores costs one more reference call;
    an input the reference read in one case is not probed again in the next, so a slow
    reference (GPU MODE's eigh: 8 s a call on an H200) is not run twice for every case."""
    side, calls = _side_counting_reference_calls(vectoradd, tmp_path)
    cases = vectoradd.tests
    assert len(cases) >= 3
    for case in cases:
        assert side.prepare(case).written == {"data[2]"}
    # One call a case for its expected output, and a probe each for A and B: once, or
    # (seen in one CI run of eight) once more, far from the two a case it took before.
    assert calls[0] <= len(cases) + 3


def test_a_buffer_the_reference_ignores_is_found_so_in_every_case(tmp_path: Path) -> None:
    (tmp_path / "problem").mkdir()
    problem = _reference_with_unused_buffer(tmp_path)
    side, _ = _side_counting_reference_calls(problem, tmp_path / "problem")
    for case in problem.tests:
        assert side.prepare(case).written == {"data[2]"}
