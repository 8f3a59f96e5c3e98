"""KernelBench modules as problems: loading, the weights seed, ModelNew graded against Model."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.harness import grade
from grader.kernelbench import is_kernelbench_module
from grader.problem import ProblemError, load_problem, problem_from_files

MODULE = Path(__file__).resolve().parents[1] / "data" / "kernelbench_scaled_linear.py"

ADDMM = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        y = torch.addmm(self.linear.bias, x, self.linear.weight.t())
        return y.clamp_min(0) * self.scale
"""


def test_a_module_file_becomes_a_problem_that_survives_storage() -> None:
    problem = load_problem(MODULE)
    assert problem.name == "kernelbench_scaled_linear" and problem.format == "kernelbench"
    assert problem.description == "A linear layer followed by a scaled ReLU."
    assert set(problem.files) == {"task.yml", "reference.py", "model.py", "submission.py"}
    assert problem.files["model.py"] == MODULE.read_text()  # the module, unchanged
    assert problem.tolerance == {"atol": 0.01, "rtol": 0.01}  # KernelBench's
    stored = problem_from_files(problem.name, problem.files)  # as a worker receives it
    assert stored.format == "kernelbench" and stored.tests == problem.tests


def test_a_folder_holding_one_module_is_a_problem(tmp_path: Path) -> None:
    folder = tmp_path / "19_scaled_linear"
    folder.mkdir()
    (folder / "anything.py").write_text(MODULE.read_text())
    assert load_problem(folder).name == "19_scaled_linear"


def test_a_python_file_that_is_not_a_module_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "not_kb.py"
    other.write_text("class Model:\n    pass\n")
    assert not is_kernelbench_module(other.read_text())
    with pytest.raises(ProblemError, match="not a KernelBench module"):
        load_problem(other)


def test_model_new_is_built_like_model_and_its_forward_pass_is_timed() -> None:
    problem = load_problem(MODULE)
    report = grade(problem, ADDMM, mode="benchmark")
    assert report.status == "passed", report.message + report.stderr
    assert report.score is not None and report.cases[-1].time is not None
    # The template a competitor downloads passes as it is.
    assert grade(problem, problem.submission_template, mode="test").status == "passed"


def test_wrong_outputs_and_weights_made_in_another_order_fail() -> None:
    problem = load_problem(MODULE)
    wrong = grade(problem, ADDMM.replace("* self.scale", "* 0.6"), mode="test")
    assert wrong.status == "failed" and "mismatch" in wrong.message
    # An extra layer created first consumes the seed: the weights no longer match.
    reordered = ADDMM.replace(
        "super().__init__()\n", "super().__init__()\n        self.extra = nn.Linear(4, 4)\n"
    )
    assert grade(problem, reordered, mode="test").status == "failed"


def test_a_submission_without_model_new_says_so() -> None:
    report = grade(load_problem(MODULE), "def custom_kernel(data):\n    return data\n")
    assert report.status == "error" and "ModelNew" in report.message
