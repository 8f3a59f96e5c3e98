"""A submission whose process keeps the GPU's memory leaves the grader none for its own
buffers: the grading ends with an error verdict that says so (a runtime error, the
candidate's), never a crashed harness without a report (tests/hostile/cases/70 on a GPU).
On this machine the grader's first allocation after the submission loaded is made to fail
as the driver fails it."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from grader.expected import ProblemSide
from grader.harness import OUT_OF_DEVICE_MEMORY, grade
from grader.problem import Problem
from grader.report import ErrorClass
from grader.shared import DeviceMemoryExhausted

CORRECT = """
def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
"""


@pytest.mark.parametrize(
    "exhausted",
    [
        torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 MiB"),
        DeviceMemoryExhausted("cuMemCreate found the GPU's memory exhausted"),
    ],
)
def test_no_memory_left_for_the_graders_buffers_is_the_submissions_error(
    vectoradd: Problem, monkeypatch: pytest.MonkeyPatch, exhausted: Exception
) -> None:
    def prepare(*args: Any, **kwargs: Any) -> Any:
        raise exhausted

    monkeypatch.setattr(ProblemSide, "prepare", prepare)
    report = grade(vectoradd, CORRECT, mode="test")
    assert report.status == "error"
    assert report.message.startswith(OUT_OF_DEVICE_MEMORY)
    assert str(exhausted).splitlines()[0] in report.message
    assert report.error_class == ErrorClass.RUNTIME
