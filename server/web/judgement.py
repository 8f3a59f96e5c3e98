"""What a result's numbers say beyond themselves, for the person reading them: a spread that
says the machine was noisy, a speed-of-light fraction above 1 that says the device's
measured peaks are off; and which benchmark cases each device type really runs."""

from __future__ import annotations

from typing import Any

from grader.problem import Problem as GraderProblem
from grader.report import CaseResult
from server.client.figures import CaseFigures, Judgement, judge_figures, labels
from server.problems.loaded import device_kind


def judge(cases: list[CaseResult], *, scored: bool, warm_inputs: bool) -> Judgement:
    """The warnings a report's cases call for, worded as the submitter's ``status`` words
    them (server/client/figures.py)."""
    named = labels(case.kind for case in cases)
    return judge_figures(
        [
            CaseFigures(
                label,
                case.time is not None,
                case.time.spread if case.time is not None else None,
                case.sol_fraction,
            )
            for label, case in zip(named, cases, strict=True)
        ],
        scored=scored,
        warm_inputs=warm_inputs,
    )


def benchmarks_by_gpu(
    problem: GraderProblem, gpu_types: list[str]
) -> list[tuple[list[str], list[dict[str, Any]]]]:
    """The benchmark cases each GPU type runs (a CPU worker may run smaller ones), GPU types
    with the same cases together; with none offered, the problem's own benchmarks."""
    if not gpu_types:
        return [([], problem.benchmarks)]
    groups: list[tuple[list[str], list[dict[str, Any]]]] = []
    for gpu_type in gpu_types:
        cases = problem.benchmarks_for(device_kind(gpu_type))
        same = next((names for names, shown in groups if shown == cases), None)
        if same is not None:
            same.append(gpu_type)
        else:
            groups.append(([gpu_type], cases))
    return groups
