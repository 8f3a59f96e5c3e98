"""How a result's numbers and warnings read, the same on the web pages and in the terminal:
times, speed-of-light fractions as percentages, and what a noisy machine or a fraction above
100% means. Standard library only: the submitter imports it without the server stack."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

# Above this interquartile range over the median, a case's timing is noisy: on a quiet
# machine the middle half of the samples lies within a few percent of the median.
NOISY_SPREAD = 0.10
UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
NONE = "—"


def duration(seconds: object, missing: str = NONE) -> str:
    """A time for people, three significant digits at most: 20.3 µs, 1.25 ms, 2 s."""
    if not isinstance(seconds, int | float) or not math.isfinite(seconds):
        return missing
    unit, scale = next(((unit, scale) for unit, scale in UNITS if abs(seconds) >= scale), UNITS[-1])
    value = seconds / scale
    return f"{value:.0f} {unit}" if abs(value) >= 1000 else f"{value:.3g} {unit}"


def percent(fraction: object, digits: int = 0, missing: str = NONE) -> str:
    """A fraction as a percentage: a speed of light of 1.712 is "171.2%" at one digit."""
    if not isinstance(fraction, int | float) or not math.isfinite(fraction):
        return missing
    return f"{fraction * 100:.{digits}f}%"


# A running grading's phases outside its cases (grader.report.ProgressPhase), in words.
PHASES = {
    "load": "loading the code (compilation included)",
    "profile": "collecting the Nsight Compute profile",
}


def progress_text(progress: Mapping[str, object] | None) -> str:
    """Where a running grading stands (an API body's `progress`): "case 3 of 10
    (benchmark): size=1024 seed=54352", "loading the code (compilation included)"; empty
    before its worker has said."""
    if not progress:
        return ""
    phase = str(progress.get("phase") or "")
    cases = progress.get("cases")
    if isinstance(cases, int) and cases > 0:
        text = f"case {progress.get('case')} of {cases} ({phase})"
        label = progress.get("label")
        return f"{text}: {label}" if label else text
    return PHASES.get(phase, phase)


def labels(kinds: Iterable[str]) -> list[str]:
    """Each case as "test 0", "benchmark 2": its kind and its place among that kind."""
    counts: dict[str, int] = {}
    named = []
    for kind in kinds:
        counts[kind] = counts.get(kind, -1) + 1
        named.append(f"{kind} {counts[kind]}")
    return named


@dataclass(frozen=True)
class CaseFigures:
    """What the warnings read of one case."""

    label: str
    timed: bool
    spread: float | None  # IQR over median (a report from before it: the CV)
    sol_fraction: float | None


@dataclass(frozen=True)
class Flagged:
    label: str  # as the case table names it: "benchmark 2"
    value: float


@dataclass(frozen=True)
class Caution:
    """A warning about a result: its anchor on the page, its title, what happened, and what
    to do."""

    key: str
    title: str
    said: str
    advice: str


@dataclass(frozen=True)
class Judgement:
    timed: int = 0  # cases with a time
    noisy: list[Flagged] = field(default_factory=list)  # spread above NOISY_SPREAD
    beyond_light: list[Flagged] = field(default_factory=list)  # speed of light above 1
    # The indexes of those cases in the report.
    noisy_at: frozenset[int] = frozenset()
    beyond_light_at: frozenset[int] = frozenset()
    warnings: list[Caution] = field(default_factory=list)

    @property
    def worst_spread(self) -> Flagged | None:
        return max(self.noisy, key=lambda case: case.value, default=None)


def judge_figures(cases: list[CaseFigures], *, scored: bool, warm_inputs: bool) -> Judgement:
    """Which cases were noisy or above the speed of light, and the warnings they call for;
    `scored`: the result has a score; `warm_inputs`: benchmark mode on a CPU worker."""
    noisy: dict[int, Flagged] = {}
    beyond_light: dict[int, Flagged] = {}
    for index, case in enumerate(cases):
        if case.timed and case.spread is not None and case.spread > NOISY_SPREAD:
            noisy[index] = Flagged(case.label, case.spread)
        if case.sol_fraction is not None and case.sol_fraction > 1:
            beyond_light[index] = Flagged(case.label, case.sol_fraction)
    timed = sum(case.timed for case in cases)
    warnings = []
    if noisy:
        warnings.append(noisy_warning(list(noisy.values()), timed, scored=scored))
    if beyond_light:
        warnings.append(light_warning(list(beyond_light.values()), warm_inputs=warm_inputs))
    return Judgement(
        timed,
        list(noisy.values()),
        list(beyond_light.values()),
        frozenset(noisy),
        frozenset(beyond_light),
        warnings,
    )


def noisy_warning(noisy: list[Flagged], timed: int, *, scored: bool) -> Caution:
    worst = max(noisy, key=lambda case: case.value)
    return Caution(
        "noisy-warning",
        "The machine was noisy while this ran",
        f"On {len(noisy)} of {timed} timed case{'' if timed == 1 else 's'} the middle half of "
        f"the timing samples spread over more than {percent(NOISY_SPREAD)} of the median (up "
        f"to {percent(worst.value)}, on {worst.label}). A steady machine keeps them within a "
        "few percent. The median shrugs off a few slow samples, but not a machine that was "
        f"busy the whole time: this {'score' if scored else 'time'} may move by that much on "
        "another run.",
        "submit again before you trust a small gain or loss. If every run is noisy, tell the "
        "organizers: the worker may be shared with other work, or slowing down as it heats.",
    )


def light_warning(beyond: list[Flagged], *, warm_inputs: bool) -> Caution:
    where = ", ".join(f"{case.label} ({percent(case.value)})" for case in beyond)
    if warm_inputs:
        return Caution(
            "sol-warning",
            "Faster than the speed of light",
            f"The speed of light is above 100% on {where}. Benchmark mode on a CPU worker "
            "times one input set over and over, so inputs that fit the CPU's caches are read "
            "from there, faster than the memory bandwidth 100% is measured against. "
            "Leaderboard mode times every call on fresh inputs, so the same code is slower "
            "there.",
            "compare benchmark-mode times with benchmark-mode times; what ranks is "
            "leaderboard mode's.",
        )
    return Caution(
        "sol-warning",
        "Faster than the speed of light",
        f"The speed of light is above 100% on {where}, which no kernel can reach: 100% is "
        "the least time this much work can take at the device's measured bandwidth and "
        "arithmetic rate. So the peaks this worker measured when it started are too low (or "
        "its clock was disturbed while it measured them); your times are measured as usual, "
        "but the percentage is not to be trusted.",
        "compare times, not speed-of-light percentages, and tell the organizers, so they can "
        "have the worker measure its peaks again.",
    )


def figures_of(cases: list[dict[str, object]]) -> list[CaseFigures]:
    """The figures of a report's cases as the API sends them (JSON)."""
    figures = []
    for label, case in zip(labels(str(c.get("kind", "case")) for c in cases), cases, strict=True):
        time = case.get("time")
        time = time if isinstance(time, dict) else {}
        roofline = case.get("roofline")
        roofline = roofline if isinstance(roofline, dict) else {}
        spread = _finite(time.get("iqr_over_median"))
        figures.append(
            CaseFigures(
                label,
                bool(time),
                spread if spread is not None else _finite(time.get("cv")),
                _finite(roofline.get("sol_fraction")),
            )
        )
    return figures


def _finite(value: object) -> float | None:
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def per_call(count: object, calls: int) -> str:
    """How many times an operation ran in one call: "1", "2.5"."""
    if not isinstance(count, int | float):
        return NONE
    return f"{round(count / max(1, calls), 2):g}"


def profiled_call(wall_us: object, operations_us: float) -> str:
    """What a torch.profiler case's heading says: the whole call's wall time under the
    profiler, which holds more than the operations listed under it."""
    wall = wall_us / 1e6 if isinstance(wall_us, int | float) else None
    return (
        f"{duration(wall)} a call in all, under the profiler (the call's own Python and the "
        f"profiler's cost included); {duration(operations_us / 1e6)} of it in the operations "
        "listed"
    )


@dataclass(frozen=True)
class Standing:
    """Where a ranked run stands on its problem's board (server/leaderboards/standing.py):
    its author's rank there (their best run's, which may be an earlier one), their best
    score before this run, and the leader's; the page and `status` write it as ``line``."""

    problem: str
    gpu: str
    submission_id: int
    score: float
    rank: int | None  # None: its author is not on the board (banned)
    entries: int
    best_submission_id: int | None  # the author's run the board ranks
    previous_best: float | None  # None: this was their first ranked run there
    leader: str | None
    leader_score: float | None
    version: int | None = None  # the archived leaderboard of this version; None: the live one

    @property
    def beats_previous_best(self) -> bool:
        """Strictly: an equal score later ranks below the earlier one."""
        return self.previous_best is not None and self.score < self.previous_best

    @classmethod
    def of(cls, submission: dict[str, Any]) -> Standing | None:
        """A submission's standing as the API sends it (JSON): its ``standing`` object (with
        whatever fields a newer server adds), its id and score; None where it has none."""
        standing = submission.get("standing")
        if not isinstance(standing, dict):
            return None
        given: dict[str, Any] = {
            **standing,
            "submission_id": submission.get("id"),
            "score": submission.get("score"),
        }
        known: dict[str, Any] = {each.name: given.get(each.name) for each in fields(cls)}
        return cls(**known)

    def line(self, *, own: bool = True) -> str:
        """One line, as in: rank 3 of 17 on vectoradd (cpu); your best before: 1.25 ms,
        beaten by 250 µs (20.0%); leader: ada, 1 ms. ``own``: read by its author; others
        read no best of theirs."""
        board = f"{self.problem} ({self.gpu})"
        if self.version is not None:
            board += f", version {self.version}'s leaderboard"
        whose = "your" if own else "its author's"
        if self.rank is None:
            parts = [f"not ranked on {board}, of {self.entries} entries"]
        else:
            parts = [f"rank {self.rank} of {self.entries} on {board}"]
            if self.best_submission_id not in (None, self.submission_id):
                parts[0] += f" by {whose} best run, submission {self.best_submission_id}"
        if own:
            if self.previous_best is None:
                parts.append("your best before: none, this is your first ranked run")
            elif self.beats_previous_best:
                gain = self.previous_best - self.score
                parts.append(
                    f"your best before: {duration(self.previous_best)}, beaten by "
                    f"{duration(gain)} ({percent(gain / self.previous_best, 1)})"
                )
            else:
                parts.append(f"your best before: {duration(self.previous_best)}, not beaten")
        if self.leader is not None:
            parts.append(f"leader: {self.leader}, {duration(self.leader_score)}")
        return "; ".join(parts)
