"""Broken and hostile submissions get the verdict a person expects, never `passed`."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from grader import problem as problem_module
from grader.harness import grade
from grader.problem import TEST_CASES_FLOOR_S, Problem

CORRECT_CALL = """
def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
"""


def test_syntax_error_is_an_error(vectoradd: Problem) -> None:
    report = grade(vectoradd, "def custom_kernel(data):\n    return data[\n")
    assert report.status == "error"
    assert "SyntaxError" in report.message
    assert "submission.py failed to load" in report.message
    # Where to look, as the author sees their file: its line and a caret, no grader frames.
    assert 'File "submission.py", line 2' in report.message
    assert "^" in report.message
    assert "importlib" not in report.message and "grader" not in report.message


def test_missing_custom_kernel_is_an_error(vectoradd: Problem) -> None:
    report = grade(vectoradd, "def kernel(data):\n    return data[2]\n")
    assert report.status == "error"
    assert "does not define a function custom_kernel" in report.message


def test_exception_in_call_is_an_error_with_traceback(vectoradd: Problem) -> None:
    code = "def custom_kernel(data):\n    raise ValueError('boom at call')\n"
    report = grade(vectoradd, code)
    assert report.status == "error"
    assert "ValueError: boom at call" in report.message
    assert "ValueError: boom at call" in report.stderr
    assert report.cases[0].status == "error"
    # The traceback runs through the author's code only.
    assert 'File "submission.py", line 2, in custom_kernel' in report.message
    assert "grader" not in report.message and "runner.py" not in report.message


@pytest.mark.parametrize(
    "code",
    [
        "import sys\nsys.exit(0)\n" + CORRECT_CALL,
        "import os\nos._exit(0)\n" + CORRECT_CALL,
        "import sys\ndef custom_kernel(data):\n    sys.exit(0)\n",
        "import os\ndef custom_kernel(data):\n    os._exit(0)\n",
        "def custom_kernel(data):\n    raise KeyboardInterrupt\n",
    ],
    ids=["sys-exit-import", "os-exit-import", "sys-exit-call", "os-exit-call", "keyboard-int"],
)
def test_exiting_early_is_an_error(vectoradd: Problem, code: str) -> None:
    report = grade(vectoradd, code)
    assert report.status == "error", report.message
    if "os._exit" in code:
        assert "the runner exited before reporting (exit code 0)" in report.message


def test_infinite_loop_times_out_within_the_limit(vectoradd: Problem) -> None:
    code = "def custom_kernel(data):\n    while True:\n        pass\n"
    started = time.monotonic()
    report = grade(vectoradd, code, timeout_s=4)
    assert report.status == "timeout"
    assert "time limit of 4 s" in report.message
    assert time.monotonic() - started < 4 + 5


def test_a_hung_kernel_in_test_mode_frees_the_worker_after_the_floor(
    vectoradd: Problem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A built-in problem is live without a validation round, and a validated one gets the
    floor too (tests/grader/test_validate.py): a kernel that never returns ends in timeout
    once the test cases have run the floor (20 s), not after the 180 s test_timeout allows.
    The grading runs under a floor of 3 s, so the wait is 3 s and not 20."""
    assert vectoradd.test_cases_timeout == TEST_CASES_FLOOR_S < vectoradd.timeout_for("test")
    floor = 3.0
    monkeypatch.setattr(problem_module, "TEST_CASES_FLOOR_S", floor)
    code = "import time\ndef custom_kernel(data):\n    time.sleep(10**9)\n"
    started = time.monotonic()
    report = grade(vectoradd, code)  # no timeout_s: the problem's own limits, as on a worker
    assert report.status == "timeout"
    limit = f"the test cases exceeded their time limit of {floor:g} s"
    assert report.message.startswith(limit), report.message
    assert floor <= time.monotonic() - started < floor + 15


def test_loop_at_import_times_out(vectoradd: Problem) -> None:
    report = grade(vectoradd, "import time\ntime.sleep(1000)\n" + CORRECT_CALL, timeout_s=3)
    assert report.status == "timeout"


def test_printing_a_megabyte_is_capped(vectoradd: Problem) -> None:
    code = "import sys\nprint('x' * 1_000_000)\nsys.stderr.write('y' * 1_000_000)\n" + CORRECT_CALL
    report = grade(vectoradd, code)
    assert report.status == "passed", report.message
    assert len(report.stdout) < 65536 + 200
    assert "output truncated" in report.stdout
    assert "output truncated" in report.stderr


def test_writing_to_inputs_fails(vectoradd: Problem) -> None:
    code = """
def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    A.zero_()
    return out
"""
    report = grade(vectoradd, code)
    assert report.status == "failed"
    assert "custom_kernel modified its inputs (data[0])" in report.message


def test_returning_a_tensor_subclass_is_an_error(vectoradd: Problem) -> None:
    code = """
import torch
class Liar(torch.Tensor):
    def __eq__(self, other):
        return True
def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out.as_subclass(Liar)
"""
    report = grade(vectoradd, code)
    assert report.status == "error"
    assert "custom_kernel must return a torch.Tensor" in report.message


@pytest.mark.parametrize("value", ["'passed'", "42", "None", "[1, 2]"])
def test_returning_a_non_tensor_is_an_error(vectoradd: Problem, value: str) -> None:
    report = grade(vectoradd, f"def custom_kernel(data):\n    return {value}\n")
    assert report.status == "error"
    assert "custom_kernel must return a torch.Tensor" in report.message


def test_runner_does_not_see_the_parents_environment(
    vectoradd: Problem, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KJ_SECRET_TEST", "1")
    code = """
import os
def custom_kernel(data):
    A, B, out = data
    if "KJ_SECRET_TEST" in os.environ:
        return out.zero_()
    out[...] = A + B
    return out
"""
    assert grade(vectoradd, code).status == "passed"
    # The same submission does notice a variable the runner is given, so the probe works.
    assert grade(vectoradd, code.replace("KJ_SECRET_TEST", "TRITON_INTERPRET")).status == "failed"


def test_forged_timings_are_rejected(
    vectoradd: Problem, with_cases: Callable[..., Problem]
) -> None:
    problem = with_cases(vectoradd, benchmarks=[{"size": 64, "seed": 1}], budget_s=0.3)
    code = (
        CORRECT_CALL
        + """
import grader.timing
_real = grader.timing.Timer.one_call
def _slow_claim(self, fn, data, *args):
    seconds, output = _real(self, fn, data, *args)
    return 100.0, output
grader.timing.Timer.one_call = _slow_claim
"""
    )
    # Screening rejects the patch outright; the check behind it must hold on its own.
    assert "static screening" in grade(problem, code, mode="benchmark").message
    report = grade(problem, code, mode="benchmark", screen=False)
    assert report.status == "rejected"
    assert "reported timings add up to" in report.message
    assert report.score is None
