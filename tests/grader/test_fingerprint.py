"""Every report says which machine graded it: on the CPU its model and torch's version (a
GPU worker adds the GPU's UUID, the driver, CUDA and Triton), stored as the report's
``fingerprint`` and read back whole."""

from __future__ import annotations

from collections.abc import Callable

import torch

from grader.device import detect_device, fingerprint
from grader.harness import grade
from grader.problem import Problem


def test_the_cpu_fingerprint_names_the_cpu_and_torch() -> None:
    found = fingerprint(detect_device("cpu"))
    assert found.device_name and found.device_name != ""
    assert found.torch == torch.__version__
    assert (found.gpu_uuid, found.driver, found.cuda) == (None, None, None)


def test_a_grading_report_carries_the_fingerprint(
    quick_vectoradd: Problem, solution: Callable[[str, str], str]
) -> None:
    report = grade(quick_vectoradd, solution("vectoradd", "pytorch"), mode="test", device="cpu")
    assert report.fingerprint == fingerprint(detect_device("cpu"))
    assert report.status == "passed", report.message + report.stderr
    kept = report.to_dict()["fingerprint"]
    assert kept["torch"] == torch.__version__ and kept["gpu_uuid"] is None
