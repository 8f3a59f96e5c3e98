"""Fixtures for grading tests: the built-in problems, their example solutions, and a
fast variant of a problem with small benchmark cases."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from grader.problem import Problem, load_problem

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def vectoradd() -> Problem:
    return load_problem("vectoradd")


@pytest.fixture(scope="session")
def vectorsum() -> Problem:
    return load_problem("vectorsum")


@pytest.fixture
def solution() -> Callable[[str, str], str]:
    def read(problem: str, name: str) -> str:
        return (REPO / "problems" / problem / "solutions" / f"{name}.py").read_text()

    return read


WithCases = Callable[..., Problem]


def _with_cases(
    problem: Problem,
    *,
    tests: list[dict[str, int]] | None = None,
    benchmarks: list[dict[str, int]] | None = None,
    budget_s: float = 0.5,
) -> Problem:
    """The same problem with other (smaller) cases, so timing stays fast on a CPU."""
    spec = dict(problem.spec)
    if tests is not None:
        spec["tests"] = tests
    if benchmarks is not None:
        spec["benchmarks"] = benchmarks
        spec.pop("cpu_benchmarks", None)
    spec["case_time_budget_s"] = budget_s
    return dataclasses.replace(problem, spec=spec)


@pytest.fixture
def with_cases() -> WithCases:
    return _with_cases


@pytest.fixture
def quick_vectoradd(vectoradd: Problem) -> Problem:
    return _with_cases(
        vectoradd,
        tests=[{"size": 127, "seed": 4242}, {"size": 64, "seed": 7}],
        benchmarks=[{"size": 64, "seed": 11}, {"size": 128, "seed": 12}],
    )
