"""KernelJudge's grader: problem formats, inputs, checks, timing, the sandboxed runner and
the trusted harness. Attributes load lazily so the runner imports only what it needs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grader.device import DeviceInfo, detect_device
    from grader.harness import grade
    from grader.problem import Problem, ProblemError, builtin_problems, load_problem
    from grader.report import CaseResult, Report

_EXPORTS = {
    "grade": "grader.harness",
    "Problem": "grader.problem",
    "ProblemError": "grader.problem",
    "load_problem": "grader.problem",
    "problem_from_files": "grader.problem",
    "builtin_problems": "grader.problem",
    "Report": "grader.report",
    "CaseResult": "grader.report",
    "DeviceInfo": "grader.device",
    "detect_device": "grader.device",
}

__all__ = [
    "CaseResult",
    "DeviceInfo",
    "Problem",
    "ProblemError",
    "Report",
    "builtin_problems",
    "detect_device",
    "grade",
    "load_problem",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'grader' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
