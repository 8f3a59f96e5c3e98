"""What a result's numbers say beyond themselves, for the person reading them: a spread that
says the machine was noisy, a speed-of-light fraction above 1 that says the device's
measured peaks are off; and which benchmark cases each device type really runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.problem import Problem as GraderProblem
from grader.report import CaseResult

# Above this interquartile range over the median, a case's timing is noisy: on a quiet
# machine the middle half of the samples lies within a few percent of the median.
NOISY_SPREAD = 0.10


@dataclass(frozen=True)
class Flagged:
    label: str  # as the case table names it: "benchmark 2"
    value: float


@dataclass(frozen=True)
class Judgement:
    timed: int = 0  # cases with a time
    noisy: list[Flagged] = field(default_factory=list)  # spread above NOISY_SPREAD
    beyond_light: list[Flagged] = field(default_factory=list)  # speed of light above 1
    # The indexes of those cases in the report.
    noisy_at: frozenset[int] = frozenset()
    beyond_light_at: frozenset[int] = frozenset()

    @property
    def worst_spread(self) -> Flagged | None:
        return max(self.noisy, key=lambda case: case.value, default=None)


def judge(cases: list[CaseResult]) -> Judgement:
    timed = 0
    noisy: dict[int, Flagged] = {}
    beyond_light: dict[int, Flagged] = {}
    for index, case in enumerate(cases):
        label = f"{case.kind} {index}"
        if case.time is not None:
            timed += 1
            case_spread = case.time.spread
            if case_spread is not None and case_spread > NOISY_SPREAD:
                noisy[index] = Flagged(label, case_spread)
        fraction = case.sol_fraction
        if fraction is not None and fraction > 1:
            beyond_light[index] = Flagged(label, fraction)
    return Judgement(
        timed,
        list(noisy.values()),
        list(beyond_light.values()),
        frozenset(noisy),
        frozenset(beyond_light),
    )


def device_kind(gpu_type: str) -> str:
    """The kind of device a GPU type names, as the grader's cases are chosen by it."""
    return "cpu" if gpu_type == "cpu" else "cuda"


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
