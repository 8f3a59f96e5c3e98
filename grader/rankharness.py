"""Grading a multi-rank problem (task.yml `multi_gpu: true`): the trusted reference group
(grader/rankreference.py) makes each rank's inputs and checks each rank's output, and one
sandbox holds the submission's ranks (grader/ranksession.py). Both make their process
group once per world size, not per case.

Every call gets fresh inputs and every rank's output of every call is checked, so a rank
has no unchecked call to skip work on. Times come from the harness's clock alone: per rank
from the send of its call request, which carries its inputs (so no untimed moment follows
their arrival), to its output's arrival, less what the request and its inputs' bytes cost
that rank before the submission was loaded; the score of a call is its slowest rank's (the
slowest rank finishes the collective). A rank's own clock is only shown, and flagged where it
claims far less. Profile mode checks each case's call as benchmark mode does, then every rank
profiles its own calls with torch.profiler, and the case keeps one table per rank. Built so
far: the CPU (gloo), in every mode."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grader import inputs, profiling, replies
from grader.device import detect_device, fingerprint
from grader.harness import capped
from grader.hostsettings import HostSettings
from grader.plausibility import label
from grader.precision import Precision
from grader.problem import MAX_RANKS, Problem
from grader.rankreference import ReferenceGroup
from grader.ranksession import RankOutcome, RankSession, verdict
from grader.report import (
    RANKS_SCALED_FLAG,
    RUNNER_CLOCK_FINDING,
    SCREENING_FLAG,
    CaseKind,
    CaseResult,
    Mode,
    Progress,
    ProgressPhase,
    RankTime,
    Report,
    Status,
    Stop,
)
from grader.requirements import shortfall
from grader.screen import screen as screen_source
from grader.timing import geometric_mean, summarize

MIN_TIMED_CALLS = 5
MAX_TIMED_CALLS = 50
# A rank whose own median is under this share of the harness's figure for it is flagged.
OWN_CLOCK_SHARE = 0.5
HARNESS_CLOCK = "rank calls"
NOT_BUILT = "multi-rank problems are graded on the CPU (gloo) only so far"


def offered(cases: list[dict[str, Any]], sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    """The cases as this host grades them: where it offers only some world sizes (`sizes`,
    KJ_WORLD_SIZES), a case asking for another runs on the largest offered below it; none
    below it ends the grading in `error`, as the worker's shortfall."""
    asked = world_sizes(cases)
    if not sizes:
        return cases
    graded = []
    for case, size in zip(cases, asked, strict=True):
        below = [offer for offer in sizes if offer <= size]
        if not below:
            shown = ", ".join(map(str, sizes))
            raise Stop(
                Status.ERROR,
                f"this worker offers world sizes {shown}; case {label(case)} asks for {size}",
            )
        graded.append({**case, "world_size": size if size in sizes else max(below)})
    return graded


def scaled_flag(asked: list[int], graded: list[int], sizes: tuple[int, ...]) -> str | None:
    """The report's flag where some case runs on fewer ranks than it asks for."""
    if asked == graded:
        return None
    pairs = sorted({(a, g) for a, g in zip(asked, graded, strict=True) if a != g})
    said = ", ".join(f"{g} where a case asks for {a}" for a, g in pairs)
    offers = ", ".join(map(str, sizes))
    return f"{RANKS_SCALED_FLAG}{said} (this worker offers world sizes {offers})"


def world_sizes(cases: list[dict[str, Any]]) -> list[int]:
    """Each case's `world_size`; a missing or impossible one ends the grading in `error`,
    as the problem's fault."""
    sizes = []
    for case in cases:
        size = case.get("world_size")
        if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= MAX_RANKS:
            raise Stop(
                Status.ERROR,
                f"the problem's case {label(case)} needs a world_size from 1 to {MAX_RANKS}",
            )
        sizes.append(size)
    return sizes


def grade_ranks(
    problem: Problem,
    code: str,
    *,
    mode: Mode,
    device: str,
    secret_seed: int | None = None,
    nonce: int | None = None,
    timeout_s: float | None = None,
    isolate: bool = True,
    memory_bytes: int | None = None,
    screen: bool = True,
    on_progress: Any = None,
    precision: Precision = Precision.STANDARD,
    gpus: Sequence[str] | None = None,
) -> Report:
    """grade() for a problem whose cases span several ranks (see the module's docstring).
    `gpus`: the GPUs its sandbox of ranks holds, one per rank (grade()'s)."""
    started = time.monotonic()
    info = detect_device(device)
    report = Report(
        status=Status.RUNNING,
        problem=problem.name,
        mode=mode,
        **info.report_fields(),
        fingerprint=fingerprint(info),
    )
    lacking = shortfall(problem.requirements, info)
    if lacking is not None:
        # As for a single device (grader/harness.py): what task.yml requires comes first.
        device_kind = lacking.kind == "device"
        report.status = Status.ERROR
        report.message = f"this problem {lacking.message}" if device_kind else lacking.message
        return report
    if device != "cpu":
        report.status, report.message = Status.ERROR, f"this worker cannot grade it: {NOT_BUILT}"
        return report
    if screen:
        found = screen_source(code)
        report.flags += [SCREENING_FLAG + flag for flag in found.flags]
        if found.rejections:
            report.status = Status.REJECTED
            report.message = "static screening rejected this submission:\n" + "\n".join(
                found.rejections
            )
            return report
    ranked = inputs.ranked_seed(secret_seed, nonce) if mode == Mode.LEADERBOARD else None
    grading = _RankGrading(problem, code, mode, report, ranked, on_progress)
    grading.precision = precision
    grading.gpus = gpus
    grading.limit_s = timeout_s or problem.timeout_for(mode, precision)
    with tempfile.TemporaryDirectory(prefix="kj-grade-ranks-") as root:
        grading.run(Path(root), isolate, memory_bytes)
    report.wall_s = time.monotonic() - started
    return report


class _RankGrading:
    """One multi-rank grading's steps, in the order they run."""

    def __init__(
        self,
        problem: Problem,
        code: str,
        mode: Mode,
        report: Report,
        ranked_seed: int | None,
        on_progress: Any,
    ) -> None:
        self.problem, self.code, self.mode, self.report = problem, code, mode, report
        self.ranked_seed = ranked_seed
        # Timed calls' inputs: from the ranked seed, else one drawn for this grading alone.
        self.fresh_seed = ranked_seed if ranked_seed is not None else inputs.ranked_seed(None)
        self.on_progress = on_progress
        self.limit_s = problem.timeout_for(mode)
        self.precision = Precision.STANDARD
        self.gpus: Sequence[str] | None = None
        self.started = time.monotonic()

    @property
    def deadline(self) -> float:
        return self.started + self.limit_s

    def run(self, root: Path, isolate: bool, memory_bytes: int | None) -> None:
        kind = CaseKind.TEST if self.mode == Mode.TEST else CaseKind.BENCHMARK
        cases = self.problem.tests if kind == CaseKind.TEST else self.problem.benchmarks_for("cpu")
        session: RankSession | None = None
        reference: ReferenceGroup | None = None
        try:
            if not cases:
                raise Stop(Status.ERROR, f"the problem has no {kind} cases")
            host_sizes = HostSettings.from_env().world_sizes
            asked = world_sizes(cases)
            cases = offered(cases, host_sizes)
            sizes = world_sizes(cases)
            flag = scaled_flag(asked, sizes, host_sizes)
            if flag is not None:
                self.report.flags.append(flag)
            trusted = self.problem.write_trusted(root)
            self._progress(Progress(ProgressPhase.LOAD))
            names = [Path(name).stem for name in self.problem.files if name.endswith(".py")]
            session = RankSession(
                max(sizes), "cpu", isolate=isolate, memory_bytes=memory_bytes, gpus=self.gpus
            )
            reference = ReferenceGroup(max(sizes), trusted, names, "cpu")
            loaded_by = min(self.deadline, time.monotonic() + self.problem.load_timeout)
            session.load(self.problem.files, self.code, loaded_by)
            cases_from = time.monotonic()
            if self.mode == Mode.TEST:
                # Test mode's short limit on the cases, as for a single device.
                used_s = cases_from - self.started
                self.limit_s = min(self.limit_s, used_s + self.problem.test_cases_timeout)
            session.deadline = self.deadline
            try:
                self._cases(session, reference, kind, cases, sizes)
            finally:
                self.report.cases_wall_s = time.monotonic() - cases_from
        except Stop as stop:
            self.report.status, self.report.message = stop.status, capped(stop.message)
            if self.report.cases and self.report.cases[-1].status == Status.RUNNING:
                self.report.cases[-1].status = stop.status
                self.report.cases[-1].message = self.report.message
        finally:
            if reference is not None:
                reference.close()
            if session is not None:
                result = session.close()
                self.report.stdout, self.report.stderr = result.stdout, result.stderr

    def _progress(self, progress: Progress) -> None:
        if self.on_progress is not None:
            self.on_progress(progress)

    def _cases(
        self,
        session: RankSession,
        reference: ReferenceGroup,
        kind: CaseKind,
        cases: list[dict[str, Any]],
        sizes: list[int],
    ) -> None:
        phase = ProgressPhase.TEST if kind == CaseKind.TEST else ProgressPhase.BENCHMARK
        world_size = 0
        for index, (case, size) in enumerate(zip(cases, sizes, strict=True), start=1):
            self._progress(Progress(phase, index, len(cases), label(case)))
            if size != world_size:
                reference.group(size, self.deadline)
                stop = verdict(
                    session.exchange({"op": "group", "world_size": size}),
                    f"making the process group of {size} ranks",
                )
                if stop is not None:
                    raise stop
                world_size = size
            result = CaseResult(kind=kind, params=dict(case), status=Status.RUNNING)
            self.report.cases.append(result)
            failure = self._call(session, reference, case, 0, f"case {label(case)}")[2]
            if not failure and self.mode == Mode.PROFILE:
                self._profile(session, reference, case, result)
            elif not failure and kind == CaseKind.BENCHMARK:
                failure = self._time(session, reference, case, result)
            result.status = Status.FAILED if failure else Status.PASSED
            result.message = capped(failure)
            if failure and kind == CaseKind.BENCHMARK:
                break
        self._conclude()

    def _call(
        self,
        session: RankSession,
        reference: ReferenceGroup,
        case: dict[str, Any],
        repeat: int,
        what: str,
    ) -> tuple[list[float], list[RankOutcome], str]:
        """One call on every rank of the case's world, on fresh inputs: each rank's figure
        (the harness's clock from the request's send to the output's arrival, less what
        handing over the request and its inputs costs), each rank's outcome, and '' when
        every output is right, else the message naming the wrong ranks. The inputs travel
        with the call, so no moment between their arrival and the timed span is left for a
        rank to start the work in."""
        world = range(case["world_size"])
        seed = self.ranked_seed if repeat == 0 else self.fresh_seed
        seeded = inputs.seeded_case(case, seed, repeat=repeat)
        data = reference.generate(seeded, self.deadline)
        outcomes = session.exchange([{"op": "call", "data": one} for one in data], world)
        stop = verdict(outcomes, what)
        if stop is not None:
            raise stop
        checks = reference.check([o.reply.get("output") for o in outcomes], self.deadline)
        wrong = [
            f"rank {rank}: {message or 'wrong output'}"
            for rank, (ok, message) in enumerate(checks)
            if not ok
        ]
        input_bytes = [sum(t.nbytes for _, t in inputs.iter_tensors(one)) for one in data]
        figures = [
            max(0.0, o.wall_s - session.hand_over_s(o.rank, input_bytes[o.rank])) for o in outcomes
        ]
        return figures, outcomes, (f"{what}: " + "; ".join(wrong) if wrong else "")

    def _time(
        self,
        session: RankSession,
        reference: ReferenceGroup,
        case: dict[str, Any],
        result: CaseResult,
    ) -> str:
        """Timed calls, each on fresh inputs and checked on every rank; the case's time is
        the median over calls of the slowest rank's figure. '' or the failure."""
        per_rank: list[list[float]] = [[] for _ in range(case["world_size"])]
        own: list[list[float]] = [[] for _ in range(case["world_size"])]
        scores: list[float] = []
        skews: list[float] = []
        budget_ends = time.monotonic() + self.precision.budget_s(self.problem.case_time_budget_s)
        for repeat in range(1, self.precision.scaled(MAX_TIMED_CALLS) + 1):
            what = f"case {label(case)} (timed call {repeat})"
            figures, outcomes, failure = self._call(session, reference, case, repeat, what)
            if failure:
                return failure
            for outcome, figure in zip(outcomes, figures, strict=True):
                per_rank[outcome.rank].append(figure)
                claimed = replies.number(outcome.reply.get("own_s"), high=outcome.wall_s)
                if claimed is not None:
                    own[outcome.rank].append(claimed)
            scores.append(max(figures))
            skews.append(max(figures) - min(figures))
            if repeat >= self.precision.scaled(MIN_TIMED_CALLS) and time.monotonic() > budget_ends:
                break
        if statistics.median(scores) <= 0:
            raise Stop(Status.REJECTED, f"case {label(case)}: a median time of zero is impossible")
        result.time = summarize(scores)
        result.time.ranked_by, result.time.harness_clock = "grader", HARNESS_CLOCK
        result.rank_skew_s = statistics.median(skews)
        result.ranks = [
            RankTime(
                rank=rank,
                median_s=statistics.median(times),
                min_s=min(times),
                max_s=max(times),
                samples=len(times),
                runner_median_s=statistics.median(own[rank]) if own[rank] else None,
            )
            for rank, times in enumerate(per_rank)
        ]
        self._flag_own_clocks(case, result.ranks)
        return ""

    def _profile(
        self,
        session: RankSession,
        reference: ReferenceGroup,
        case: dict[str, Any],
        result: CaseResult,
    ) -> None:
        """Every rank's calls on the case's public inputs under torch.profiler (all ranks at
        once, so that the collectives in them meet), each rank's table kept apart, naming
        it. Profile mode on the CPU only: Nsight Compute per rank is not built."""
        seeded = inputs.seeded_case(case, self.ranked_seed, repeat=0)
        data = reference.generate(seeded, self.deadline)
        world = range(case["world_size"])
        outcomes = session.exchange([{"op": "profile", "data": one} for one in data], world)
        stop = verdict(outcomes, f"case {label(case)} (profiled calls)")
        if stop is not None:
            raise stop
        result.rank_profiles = [
            profiling.table_from_reply(outcome.reply, profiling.ON_CPU, rank=outcome.rank)
            for outcome in outcomes
        ]

    def _flag_own_clocks(self, case: dict[str, Any], ranks: list[RankTime]) -> None:
        """A rank claiming far less than the harness measured is flagged for review (it
        cannot change the score: the harness's clock ranks)."""
        for figures in ranks:
            own = figures.runner_median_s
            if own is not None and own < OWN_CLOCK_SHARE * figures.median_s:
                self.report.flags.append(
                    f"case {label(case)}: rank {figures.rank}: {RUNNER_CLOCK_FINDING}"
                    f"{own * 1e6:.3f} µs is under what the grader's clock allows "
                    f"({figures.median_s * 1e6:.3f} µs a call on the harness's clock)"
                )

    def _conclude(self) -> None:
        failed = [c for c in self.report.cases if c.status != Status.PASSED]
        count = len(self.report.cases)
        if failed:
            self.report.status = Status.FAILED
            shown = "\n".join(c.message for c in failed[:3])
            self.report.message = capped(f"{len(failed)} of {count} cases failed:\n{shown}")
            return
        self.report.status = Status.PASSED
        if self.mode == Mode.TEST:
            self.report.message = f"all {count} test cases passed"
            return
        if self.mode == Mode.PROFILE:
            self.report.message = (
                f"all {count} benchmark cases passed and were profiled on every rank "
                f"({profiling.TOOL}; no score: a profile never ranks)"
            )
            return
        medians = [c.time.median_s for c in self.report.cases if c.time]
        self.report.score = geometric_mean(medians)
        self.report.message = (
            f"all {count} benchmark cases passed; score {self.report.score * 1e6:.3f} µs "
            "(geometric mean of medians; each call's figure is its slowest rank's)"
        )
