"""Every built-in problem is complete, its correct example solutions pass and its wrong
ones fail, on the CPU here and on CUDA where there is a GPU (CUDA-only solutions are
skipped on the CPU, never faked)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from grader.device import detect_device
from grader.harness import grade
from grader.problem import BUILTIN_DIR, builtin_problems, load_problem
from grader.requirements import language_shortfall

PROBLEMS = [problem.name for problem in builtin_problems()]
SOLUTIONS = sorted(BUILTIN_DIR.glob("*/solutions/*.py"))
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def test_there_are_at_least_eight() -> None:
    assert len(PROBLEMS) >= 8, PROBLEMS


@pytest.mark.parametrize("name", PROBLEMS)
def test_problem_is_complete(name: str) -> None:
    problem = load_problem(name)
    assert problem.description.strip()
    assert problem.tests and problem.benchmarks
    assert problem.submission_template
    for case in problem.benchmarks + problem.benchmarks_for("cpu"):
        roofline = problem.roofline(case)
        assert roofline is not None and roofline["bytes"] > 0, case
    solutions = {path.stem for path in (BUILTIN_DIR / name / "solutions").glob("*.py")}
    assert {"pytorch", "triton"} <= solutions
    assert any(stem.startswith("wrong") for stem in solutions)


def needs_cuda(path: Path) -> bool:
    return path.stem.startswith("cuda")


def lacking_language(path: Path) -> str:
    """Why this worker cannot grade a solution written in Helion or CuTe DSL, or ''."""
    return language_shortfall(path.read_text(), detect_device(DEVICE))


@pytest.mark.parametrize(
    "path", SOLUTIONS, ids=[f"{p.parent.parent.name}/{p.stem}" for p in SOLUTIONS]
)
def test_example_solution_verdict(path: Path) -> None:
    if needs_cuda(path) and DEVICE != "cuda":
        pytest.skip("a CUDA-only solution; graded on GPU hosts")
    if reason := lacking_language(path):
        pytest.skip(reason)
    problem = load_problem(path.parent.parent.name)
    report = grade(problem, path.read_text(), mode="test", device=DEVICE)
    if path.stem.startswith("wrong"):
        assert report.status == "failed", report.message
        assert "mismatch" in report.message or "differ" in report.message
    else:
        assert report.status == "passed", report.message + report.stderr[-2000:]


@pytest.mark.parametrize("name", PROBLEMS)
def test_template_passes(name: str) -> None:
    problem = load_problem(name)
    report = grade(problem, problem.submission_template, mode="test", device=DEVICE)
    assert report.status == "passed", report.message + report.stderr[-2000:]
