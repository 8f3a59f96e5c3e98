"""Loading problems: built-ins, foreign GPU MODE folders, payload round trips, errors."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from grader.harness import grade
from grader.problem import (
    TEST_CASES_FLOOR_S,
    Problem,
    ProblemError,
    builtin_problems,
    derived_test_cases_timeout,
    eval_arithmetic,
    load_problem,
    problem_from_files,
)

FOREIGN_UTILS = """
import torch

def verbose_allclose(received, expected, rtol=1e-05, atol=1e-08):
    if received.shape != expected.shape:
        return ["SIZE MISMATCH"]
    bad = ~torch.isclose(received, expected, rtol=rtol, atol=atol)
    return [f"{int(bad.sum())} mismatched elements"] if bad.any() else []
"""

FOREIGN_REFERENCE = """
import torch
from task import input_t
from utils import verbose_allclose

def ref_kernel(data: input_t):
    return data.float().square()

def generate_input(size: int, seed: int) -> input_t:
    gen = torch.Generator(device=DEVICE)
    gen.manual_seed(seed)
    return torch.randn(size, device=DEVICE, generator=gen)

def check_implementation(data, output) -> str:
    reasons = verbose_allclose(output, ref_kernel(data))
    return "mismatch: " + " ".join(reasons) if reasons else ""
"""

FOREIGN_TASK = """
files:
  - {"name": "submission.py", "source": "@SUBMISSION@"}
  - {"name": "task.py", "source": "task.py"}
  - {"name": "utils.py", "source": "../utils.py"}
  - {"name": "reference.py", "source": "reference.py"}
  - {"name": "eval.py", "source": "../eval.py"}
lang: "py"
description: "Square a vector."
config: {main: "eval.py"}
templates: {Python: "submission.py"}
tests:
  - {"size": 100, "seed": 1}
  - {"size": 33, "seed": 2}
benchmarks:
  - {"size": 1000, "seed": 3}
ranking_by: "geom"
"""


def make_foreign(root: Path, device: str = "cpu") -> Path:
    """A GPU MODE-style tree: problems/utils.py shared, problems/square_py/ the problem."""
    (root / "utils.py").write_text(FOREIGN_UTILS)
    folder = root / "square_py"
    folder.mkdir()
    (folder / "task.yml").write_text(FOREIGN_TASK)
    (folder / "task.py").write_text("import torch\ninput_t = torch.Tensor\n")
    (folder / "reference.py").write_text(f"DEVICE = {device!r}\n" + FOREIGN_REFERENCE)
    (folder / "submission.py").write_text("def custom_kernel(data):\n    return data\n")
    return folder


def test_builtin_problems_load_with_their_description() -> None:
    problems = {p.name: p for p in builtin_problems()}
    assert {"vectoradd", "vectorsum"} <= set(problems)
    vectoradd = problems["vectoradd"]
    assert "float16" in vectoradd.description
    assert {"task.yml", "reference.py", "task.py", "utils.py", "submission.py"} <= set(
        vectoradd.files
    )
    assert "eval.py" not in vectoradd.files
    assert vectoradd.tests[0] == {"size": 127, "seed": 4242}
    assert vectoradd.ranked_timeout == 300 and vectoradd.ranking_by == "geom"
    assert vectoradd.roofline({"size": 1024}) == {
        "bytes": 3 * 1024 * 1024 * 2,
        "flops": 1024 * 1024,
    }


def test_foreign_problem_with_parent_utils_loads_and_grades(tmp_path: Path) -> None:
    problem = load_problem(make_foreign(tmp_path))
    assert problem.name == "square_py"
    assert "verbose_allclose" in problem.files["utils.py"]
    assert problem.test_timeout == 180 and problem.benchmark_timeout == 180
    right = "def custom_kernel(data):\n    return data * data\n"
    assert grade(problem, right).status == "passed"
    wrong = grade(problem, "def custom_kernel(data):\n    return data + 1\n")
    assert wrong.status == "failed"
    # The old-style string message of the problem, plus our own listing.
    assert "mismatch: " in wrong.message and "mismatch at (" in wrong.message


def test_problem_round_trips_through_a_json_payload(tmp_path: Path) -> None:
    problem = load_problem(make_foreign(tmp_path))
    payload = json.loads(json.dumps({"name": problem.name, "files": problem.files}))
    rebuilt = problem_from_files(payload["name"], payload["files"])
    assert rebuilt == problem


def test_missing_referenced_file_names_it(tmp_path: Path) -> None:
    folder = make_foreign(tmp_path)
    (tmp_path / "utils.py").unlink()
    with pytest.raises(ProblemError, match=r"utils\.py"):
        load_problem(folder)


def test_unknown_problem_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ProblemError, match="neither a problem folder nor a built-in"):
        load_problem("no_such_problem_anywhere")
    with pytest.raises(ProblemError, match=r"no task\.yml"):
        load_problem(tmp_path)


def test_problem_generating_cuda_inputs_grades_on_a_cpu_grader(tmp_path: Path) -> None:
    """GPU MODE's references name "cuda"; a CPU worker reads it as the CPU
    (grader/devicemap.py) instead of refusing the problem."""
    problem = load_problem(make_foreign(tmp_path, device="cuda"))
    report = grade(problem, "def custom_kernel(data):\n    return data * data\n")
    assert report.status == "passed", report.message
    assert grade(problem, "def custom_kernel(data):\n    return data + 1\n").status == "failed"


def test_roofline_expressions_allow_only_arithmetic() -> None:
    assert eval_arithmetic("3 * size * size * 2", {"size": 4}) == 96
    assert eval_arithmetic("(m + 1) // 2 - -1", {"m": 5}) == 4
    for hostile in ("__import__('os').system('true')", "size.bit_length()", "open", "2 ** 999"):
        with pytest.raises(ProblemError):
            eval_arithmetic(hostile, {"size": 4})


def test_test_modes_limit_is_task_yml_s_else_the_validated_one_else_the_floor(
    vectoradd: Problem,
) -> None:
    """Built-in problems set no test_cases_timeout and go live without validation: a hung
    kernel on one frees its worker after the floor, 20 s, as before the limit was derived."""
    for problem in builtin_problems():
        assert problem.declared_test_cases_timeout is None, problem.name
        assert problem.test_cases_timeout == TEST_CASES_FLOOR_S == 20, problem.name
    validated = dataclasses.replace(vectoradd, validated_test_cases_timeout=37.0)
    assert validated.test_cases_timeout == 37
    declared = dataclasses.replace(validated, spec={**vectoradd.spec, "test_cases_timeout": 5})
    assert declared.declared_test_cases_timeout == declared.test_cases_timeout == 5
    # Ten times the reference's own test cases, in whole seconds, at least 20 s, at most
    # the problem's test_timeout.
    assert derived_test_cases_timeout(0.3, 180) == 20
    assert derived_test_cases_timeout(2.01, 180) == 21
    assert derived_test_cases_timeout(60, 240) == 240


def test_problem_is_frozen(vectoradd: Problem) -> None:
    with pytest.raises(AttributeError):
        vectoradd.name = "other"  # type: ignore[misc]
