"""The trusted side of grading: `grade()` loads the submission into a sandboxed runner, then
for each case writes inputs into the slab the runner reads, checks every output and timing
it hands back, and writes the report. It never imports or executes the submission. The
steps it calls live by protocol step: the problem's side (`expected`), the runner channel
(`session`, `staging`), output checks (`check`), the ranked time (`clock`), timing rules
(`timing`, `plausibility`)."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from grader import clock, inputs, nsight, plausibility, profiling, replies
from grader.calibrate import DevicePeaks, measure_peaks
from grader.check import is_tensor_tree, modified_inputs, wrong_output
from grader.confine import DEFAULT_MEMORY_BYTES
from grader.device import DeviceInfo, detect_device, fingerprint
from grader.devicemap import harness_device_map
from grader.expected import CUDA_ONLY, CaseSetup, ProblemSide, device_env
from grader.hostsettings import HostSettings
from grader.plausibility import label as _label
from grader.problem import Problem
from grader.report import (
    PROFILE_FILE,
    RUNNER_CLOCK_FINDING,
    SCREENING_FLAG,
    SHORT_CALL_S,
    CaseKind,
    CaseResult,
    Mode,
    PhaseClock,
    Profile,
    Progress,
    ProgressPhase,
    Report,
    Roofline,
    RunnerTime,
    Status,
    Stop,
)
from grader.requirements import shortfall
from grader.screen import screen as screen_source
from grader.session import RunnerSession, Standby
from grader.shared import DeviceMemoryExhausted
from grader.staging import Layout, Sets
from grader.timing import Precision, enough_samples, geometric_mean, summarize
from grader.untrusted import SandboxedProblemSide

__all__ = ["CUDA_ONLY", "DEVICES", "MODES", "Precision", "Standby", "grade"]

# The runner's timed calls take at most this share of a case's timing budget; the harness's
# batches get the rest.
RUNNER_SHARE = 0.5
# No SM clock a runner reports is higher.
MAX_CLOCK_MHZ = 1e5

MODES = tuple(Mode)
DEVICES = ("cpu", "cuda")
MESSAGE_CAP = 4000
# The verdict when the GPU has no memory left for the grader's own buffers (inputs, outputs,
# the windows' sets) once the submission is loaded: its process keeps what the calls need.
OUT_OF_DEVICE_MEMORY = (
    "the GPU's memory ran out for the grader's own buffers (the cases' inputs and outputs) "
    "while the submission's process held it: a submission may keep only what its calls need"
)
# A multi-rank problem's reference group runs outside the sandbox (grader/rankreference.py).
UNTRUSTED_RANKS = (
    "problems of several ranks are graded only with a trusted reference (an organizer's "
    "problem): an author's reference cannot yet run sandboxed beside several ranks"
)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def grade(
    problem: Problem,
    code: str,
    *,
    mode: Mode | str = Mode.TEST,
    device: str = "cpu",
    secret_seed: int | None = None,
    timeout_s: float | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    peaks: DevicePeaks | None = None,
    enforce_floor: bool | None = None,
    isolate: bool = True,
    memory_bytes: int | None = None,
    screen: bool = True,
    nonce: int | None = None,
    standby: Standby | None = None,
    precision: Precision | str = Precision.STANDARD,
    untrusted_reference: bool = False,
    gpus: Sequence[str] | None = None,
) -> Report:
    """Grade `code` (the text of submission.py) on `problem` and return the report.

    `screen`: screen the source statically first (rejecting what cannot be part of a
    kernel, flagging what deserves review); off only to test the layers behind it.
    `isolate`: run the submission in the sandbox (bubblewrap, seccomp, a cgroup capping
    host memory at `memory_bytes`); only trusted code may be graded without it. Raises
    `sandbox.SandboxUnavailable` when the sandbox cannot be set up on this host.
    `standby`: where a worker keeps its next runner started (see `grader.session`); without
    one the runner starts here. `on_progress` is told where the grading stands as it moves
    (a `Progress`: loading, then each case); it runs in the grading's own thread, between
    timed work, so it must return at once.

    `peaks`: the device's measured ceilings (measured here when missing and timing is
    needed). `enforce_floor`: reject times under the physical floor; default on CUDA only,
    since a CPU shared with other work measures its peaks too unevenly to judge by.

    Profile mode on a GPU profiles with Nsight Compute where the worker has it
    (grader.nsight), else, or where it gives no profile, with torch.profiler, saying why.

    `nonce`: mixed into the secret seed in leaderboard mode so that no two gradings share a
    ranked input; drawn from the operating system for each grading when missing, and kept
    only in this process (the runner cannot read it, the report does not carry it). Tests
    fix it to show what a repeat would allow.

    `untrusted_reference`: the problem's reference (generate_input, ref_kernel,
    check_implementation) runs in a sandbox of its own, never in this process
    (grader/untrusted.py): for problems an author added, whose code is trusted no more than a
    submission. Problems of several ranks cannot be graded so yet.

    `precision`: how long benchmark cases are timed (grader/precision.py): `thorough` takes
    more samples to a smaller standard error, in a longer budget per case and a longer time
    limit (where `timeout_s` is not given); the checks are the same.

    `gpus`: the GPUs (as CUDA_VISIBLE_DEVICES names them) a grading of several ranks holds,
    one per rank, where its worker leased them (server/worker/lease.py); None: those
    CUDA_VISIBLE_DEVICES names, as for a grading on one device."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    mode = Mode(mode)
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}: use one of {', '.join(DEVICES)}")
    precision = Precision(precision)
    if problem.multi_gpu and untrusted_reference:
        return Report(
            status=Status.ERROR,
            problem=problem.name,
            mode=mode,
            device=device,
            message=UNTRUSTED_RANKS,
        )
    if problem.multi_gpu:
        # Several ranks, a trusted reference group, the harness's clock per rank: its own path.
        from grader.rankharness import grade_ranks

        return grade_ranks(
            problem,
            code,
            mode=mode,
            device=device,
            secret_seed=secret_seed,
            nonce=nonce,
            timeout_s=timeout_s,
            isolate=isolate,
            memory_bytes=memory_bytes,
            screen=screen,
            on_progress=on_progress,
            precision=precision,
            gpus=gpus,
        )
    info = detect_device(device)
    if peaks is None and mode != Mode.TEST:
        # Workers measure their peaks once when they start and pass them in.
        peaks = measure_peaks(info.kind)
    started = time.monotonic()
    ranked_seed = inputs.ranked_seed(secret_seed, nonce) if mode == Mode.LEADERBOARD else None

    def attempt(ncu: str | None, why_not_ncu: str) -> _Grading:
        report = Report(
            status=Status.RUNNING,
            problem=problem.name,
            mode=mode,
            **info.report_fields(),
            device_peaks=peaks,
            fingerprint=fingerprint(info),
        )
        grading = _Grading(problem, code, mode, info, ranked_seed, report, on_progress, peaks)
        grading.ncu, grading.why_not_ncu = ncu, why_not_ncu
        grading.precision = precision
        grading.total_limit_s = timeout_s or problem.timeout_for(mode, precision)
        grading.enforce_floor = info.kind == "cuda" if enforce_floor is None else enforce_floor
        grading.isolate, grading.memory_bytes = isolate, memory_bytes
        if untrusted_reference:
            side = SandboxedProblemSide(problem, info.kind, ranked_seed, grading.clock)
            side.isolate, side.memory_bytes = isolate, memory_bytes
            side.deadline = time.monotonic() + grading.total_limit_s
            grading.side = side
        if grading.has_requirements() and (not screen or grading.screen()):
            # A CPU worker grades problems written for CUDA by reading "cuda" as the CPU in
            # the harness (this process), where the reference makes the inputs.
            with (
                held_torch_settings(),
                harness_device_map(info.kind),
                device_env(info.kind),
                tempfile.TemporaryDirectory(prefix="kj-grade-") as root,
            ):
                grading.run(Path(root), standby)
        return grading

    grading = attempt(*_profiler(mode, info.kind))
    if grading.ncu_fell_through:
        # Nsight Compute gave no profile: the same grading with torch.profiler's, saying why.
        _remember_refusal(grading.ncu_fell_through)
        grading = attempt(None, grading.ncu_fell_through)
    report = grading.report
    report.wall_s = time.monotonic() - started
    return report


# Why Nsight Compute cannot profile on this host, once a grading found it out for good
# (performance counters kept for administrators): later profiles go to torch.profiler.
_ncu_refused: list[str] = []


def _profiler(mode: Mode, kind: str) -> tuple[str | None, str]:
    """The ncu a profile grading runs under (or None), and why not where there is none."""
    if mode != Mode.PROFILE or kind != "cuda":
        return None, profiling.ON_CPU
    if _ncu_refused:
        return None, _ncu_refused[0]
    ncu = nsight.find_ncu(HostSettings.from_env().ncu)
    return ncu, "" if ncu else nsight.WHY_NOT["missing"]


def _remember_refusal(reason: str) -> None:
    if reason == nsight.WHY_NOT["counters"] and not _ncu_refused:
        _ncu_refused.append(reason)


def _deterministic_algorithms() -> tuple[bool, bool]:
    """Torch's deterministic-algorithms switch: on, and warn only."""
    return (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )


@contextlib.contextmanager
def held_torch_settings() -> Iterator[None]:
    """Torch's process-wide switches as they were before the grading: a problem's reference
    may turn TF32 off or cuDNN's autotuner on, and the next grading in this process (a
    worker's harness grades many) must compute its expected outputs as its own reference
    says, not as the last one left them."""
    matmul = torch.backends.cuda.matmul
    cudnn = torch.backends.cudnn
    flags = (
        (matmul, "allow_tf32"),
        (matmul, "allow_fp16_reduced_precision_reduction"),
        (matmul, "allow_bf16_reduced_precision_reduction"),
        (cudnn, "allow_tf32"),
        (cudnn, "benchmark"),
        (cudnn, "deterministic"),
    )
    saved_flags = [getattr(owner, name) for owner, name in flags]
    precision = torch.get_float32_matmul_precision()
    deterministic_algorithms = _deterministic_algorithms()
    dtype = torch.get_default_dtype()
    grad = torch.is_grad_enabled()
    try:
        yield
    finally:
        for (owner, name), value in zip(flags, saved_flags, strict=True):
            setattr(owner, name, value)
        torch.set_float32_matmul_precision(precision)
        if _deterministic_algorithms() != deterministic_algorithms:
            # Only when changed: the call imports torch._inductor, 2 s the first time.
            on, warn_only = deterministic_algorithms
            torch.use_deterministic_algorithms(on, warn_only=warn_only)
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)
        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()  # what this grading held goes back to the GPU


def capped(text: str) -> str:
    """A report's or a case's message cut to MESSAGE_CAP characters, marked where it was
    cut: what a submission prints cannot swell its report, on one device or on many ranks."""
    return text if len(text) <= MESSAGE_CAP else text[:MESSAGE_CAP] + " [...]"


def _reported_samples(reply: dict[str, Any], most: int) -> list[float]:
    """The per-call seconds a runner reported: a list of finite, non-negative floats, no
    more than it was asked for; anything else rejects the submission."""
    samples = reply.get("samples")
    if not isinstance(samples, list) or not 0 < len(samples) <= most:
        raise Stop(Status.REJECTED, "the runner reported malformed timings")
    kept = [replies.number(value) for value in samples]
    if any(value is None for value in kept):
        raise Stop(Status.REJECTED, "the runner reported malformed timings")
    return [value for value in kept if value is not None]


def _harness_figures(measured: clock.Measured, floor_s: float, how: str) -> dict[str, Any]:
    """The harness's own clock beside a case's time (CaseResult.time)."""
    return {
        "harness_per_call_s": measured.fastest_s,
        "harness_floor_s": floor_s,
        "calls_per_batch": measured.calls_per_batch,
        "batches": len(measured.per_call_s),
        "harness_clock": how,
    }


def short_calls(kind: str, medians: list[float]) -> str:
    """What a GPU score says when at least half of its cases time calls shorter than
    SHORT_CALL_S (their device time moves by a few percent from one process to the next,
    where a grading cannot see it); empty where the score ranks as it stands."""
    short = sum(1 for median in medians if median < SHORT_CALL_S)
    if kind != "cuda" or not medians or 2 * short < len(medians):
        return ""
    return (
        f"{short} of {len(medians)} cases time calls under {SHORT_CALL_S * 1e6:.0f} µs of "
        "device time, which moves by a few percent from one process to the next: this score "
        "cannot rank finer than that"
    )


class _Grading:
    """One grading: the steps of `grade()` as short methods, in the order they run."""

    def __init__(
        self,
        problem: Problem,
        code: str,
        mode: Mode,
        info: DeviceInfo,
        ranked_seed: int | None,
        report: Report,
        on_progress: Callable[[Progress], None] | None,
        peaks: DevicePeaks | None,
    ) -> None:
        self.problem = problem
        self.peaks = peaks
        self.enforce_floor = False
        self.isolate = True
        self.memory_bytes: int | None = None
        self.precision = Precision.STANDARD
        self.code = code
        self.mode = mode
        self.kind = info.kind
        self.info = info
        self.report = report
        self.on_progress = on_progress
        self.clock = PhaseClock(report.phases)
        self.side = ProblemSide(problem, info.kind, ranked_seed, self.clock)
        self.started = time.monotonic()
        self.total_limit_s = problem.timeout_for(mode)
        # The limit that applies now, and what a timeout message says of it.
        self.deadline = math.inf
        self.limit_text = ""
        # Profile mode: the ncu the runner starts under (grader.nsight), or why there is
        # none; and why a run under it gave no profile (the grading is then run again).
        self.ncu: str | None = None
        self.why_not_ncu = ""
        self.ncu_fell_through = ""

    # -- setting up -------------------------------------------------------------------

    def has_requirements(self) -> bool:
        """False (and the report says what is missing) if this worker lacks what the
        problem's task.yml declares it needs (a device kind, a compute capability, a
        package)."""
        lacking = shortfall(self.problem.requirements, self.info)
        if lacking is None:
            return True
        self.report.status = Status.ERROR
        device = lacking.kind == "device"
        self.report.message = f"this problem {lacking.message}" if device else lacking.message
        return False

    def screen(self) -> bool:
        """Static screening; False (and the report says why) if the code is rejected."""
        found = screen_source(self.code)
        self.report.flags += [SCREENING_FLAG + flag for flag in found.flags]
        if not found.rejections:
            return True
        self.report.status = Status.REJECTED
        self.report.message = capped(
            "static screening rejected this submission:\n" + "\n".join(found.rejections)
        )
        return False

    def _limit(self, seconds: float, text: str, session: RunnerSession | None = None) -> None:
        """From now on, at most `seconds` more (and never past the whole grading's limit)."""
        total_end = self.started + self.total_limit_s
        end = time.monotonic() + seconds
        if end >= total_end:
            end, text = total_end, f"grading exceeded its time limit of {self.total_limit_s:g} s"
        self.deadline, self.limit_text = end, text
        if session is not None:
            session.deadline = end

    def run(self, root: Path, standby: Standby | None) -> None:
        trusted = self.problem.write_trusted(root)
        self._progress(Progress(ProgressPhase.LOAD))
        with self.clock.phase("runner_start"):
            if self.ncu is not None:
                session = RunnerSession(self.kind, isolate=self.isolate,
                                        memory_bytes=self.memory_bytes, ncu=self.ncu)  # fmt: skip
            elif standby is not None:
                session = standby.take(
                    self.kind, isolate=self.isolate, memory_bytes=self.memory_bytes
                )
                if self.mode != Mode.TEST and self.kind == "cuda":
                    standby.settle()  # no runner's start beside the timed windows
            else:
                session = RunnerSession(
                    self.kind, isolate=self.isolate, memory_bytes=self.memory_bytes
                )
        try:
            self._limit(
                self.problem.load_timeout,
                "loading submission.py (its import, compilation included) exceeded its "
                f"time limit of {self.problem.load_timeout:g} s",
            )
            self.side.load(trusted)
            seed = (
                self.problem.kernelbench_init_seed if self.problem.format == "kernelbench" else None
            )
            session.load(
                self.problem.files,
                self.code,
                deadline=self.deadline,
                clock=self.clock,
                kernelbench_seed=seed,
            )
            if self.mode == Mode.TEST:
                cases_limit = self.problem.test_cases_timeout
                self._limit(cases_limit, f"the test cases exceeded their time limit of "
                            f"{cases_limit:g} s", session)  # fmt: skip
            else:
                self._limit(math.inf, "", session)
            cases_from = time.monotonic()
            try:
                self._grade_cases(session)
            finally:
                self.report.cases_wall_s = time.monotonic() - cases_from
            if self.ncu is not None and self.report.status == Status.PASSED:
                self._progress(Progress(ProgressPhase.PROFILE))
                self._collect_profile(session)
        except Stop as stop:
            self.report.status = stop.status
            self.report.message = capped(stop.message) if stop.message else self.limit_text
            if self.ncu is not None and stop.status == Status.ERROR:
                self.ncu_fell_through = nsight.why_not(None, self.report.message)
        except (torch.OutOfMemoryError, DeviceMemoryExhausted) as exc:
            # The grader's own buffers come from the GPU the submission's process shares:
            # a process that keeps the device's memory ends its own grading, with a verdict.
            self.report.status = Status.ERROR
            self.report.message = capped(f"{OUT_OF_DEVICE_MEMORY} ({first_line(exc)})")
        finally:
            with self.clock.phase("teardown"):
                self.side.close()
                result = session.close()
                if standby is not None:
                    # On the CPU the next runner starts only now, after the timed work.
                    standby.refill(self.kind, isolate=self.isolate, memory_bytes=self.memory_bytes)
            self.report.stdout, self.report.stderr = result.stdout, result.stderr
        if result.oom_killed and self.report.status != Status.PASSED:
            limit = (self.memory_bytes or DEFAULT_MEMORY_BYTES) / (1 << 30)
            self.report.status = Status.ERROR
            self.report.message = (
                f"the submission ran out of host memory: its sandbox may use {limit:g} GiB\n"
                + self.report.message
            ).strip()

    def _progress(self, progress: Progress) -> None:
        if self.on_progress is not None:
            self.on_progress(progress)

    # -- the cases ----------------------------------------------------------------------

    def _grade_cases(self, session: RunnerSession) -> None:
        kind = CaseKind.TEST if self.mode == Mode.TEST else CaseKind.BENCHMARK
        cases = (
            self.problem.tests if kind == CaseKind.TEST else self.problem.benchmarks_for(self.kind)
        )
        if not cases:
            raise Stop(Status.ERROR, f"the problem has no {kind} cases")
        for index, case in enumerate(cases, start=1):
            phase = ProgressPhase.TEST if kind == CaseKind.TEST else ProgressPhase.BENCHMARK
            self._progress(Progress(phase, index, len(cases), _label(case)))
            result = CaseResult(kind=kind, params=dict(case), status=Status.RUNNING)
            self.report.cases.append(result)
            try:
                measure = kind == CaseKind.BENCHMARK and self._measures_roofline()
                self._grade_case(session, self.side.prepare(case, measure), result)
            except Stop as stop:
                result.status = stop.status
                result.message = capped(stop.message) if stop.message else self.limit_text
                raise
            if result.status != Status.PASSED and kind == CaseKind.BENCHMARK:
                break
        self._conclude()

    def _grade_case(self, session: RunnerSession, setup: CaseSetup, result: CaseResult) -> None:
        try:
            layout = Layout.of(setup.data, setup.expected, setup.written)
        except ValueError as exc:
            raise Stop(Status.ERROR, f"the problem's inputs cannot be handed over: {exc}") from exc
        slab_id, sets = session.stage("case", layout, 1)
        self._write(sets, setup.data, setup.written)
        reply = session.request({"op": "run", "slab": slab_id, "set": 0}).reply
        output = sets.output(0, reply.get("output"))
        failure = self._wrong(setup.case, setup.data, output, setup.expected)
        if not failure:
            changed = modified_inputs(setup.data, sets.inputs(0), setup.written)
            if changed:
                failure = (
                    f"case {_label(setup.case)}: custom_kernel modified its inputs "
                    f"({', '.join(changed)})"
                )
        if failure:
            result.status, result.message = Status.FAILED, capped(failure)
            return
        samples: list[float] = []
        if self.mode == Mode.BENCHMARK:
            samples = self._time_benchmark(session, setup, slab_id, sets, result)
        elif self.mode == Mode.LEADERBOARD:
            samples = self._time_ranked(session, setup, slab_id, sets, result)
        elif self.mode == Mode.PROFILE:
            with self.clock.phase("profile"):
                self._write(sets, setup.data, setup.written)
                request = {"op": "profile", "slab": slab_id, "set": 0,
                           "case": len(self.report.cases)}  # fmt: skip
                reply = session.request(request).reply
                if self.ncu is None:
                    result.profile = profiling.table_from_reply(reply, self.why_not_ncu)
        if samples:
            self._bound_by_harness_clock(session, setup, layout, samples, result)
        result.status = Status.PASSED

    def _write(self, sets: Sets, data: Any, written: set[str]) -> None:
        """Set 0 of the slab holds `data` (outputs poisoned) once this returns."""
        with self.clock.phase("inputs"):
            sets.write(0, data, written)
            if self.kind == "cuda":
                torch.cuda.synchronize()

    def _wrong(self, case: dict[str, Any], data: Any, output: Any, expected: Any = None) -> str:
        """'' if the output is right, else the message naming the case and first mismatches."""
        with self.clock.phase("checks"):
            if not is_tensor_tree(output):
                raise Stop(Status.ERROR, "custom_kernel must return a torch.Tensor")
            failure = wrong_output(
                self.side.module.check_implementation,
                data,
                output,
                lambda: (
                    expected
                    if expected is not None
                    else self.side.expected_and_written(case, data)[0]
                ),
                device=self.kind,
                tolerance=self.problem.tolerance,
            )
            return f"case {_label(case)}: {failure}" if failure else ""

    def _budget(self) -> float:
        end = min(self.deadline, self.started + self.total_limit_s)
        budget = self.precision.budget_s(self.problem.case_time_budget_s)
        return max(0.0, min(budget, end - time.monotonic()))

    def _time_benchmark(
        self,
        session: RunnerSession,
        setup: CaseSetup,
        slab_id: int,
        sets: Sets,
        result: CaseResult,
    ) -> list[float]:
        """The same public inputs for every call, the outputs poisoned before each: the
        runner's samples."""
        self._write(sets, setup.data, setup.written)
        request = {
            "op": "time",
            "slab": slab_id,
            "set": 0,
            "budget_s": self._budget() * RUNNER_SHARE,
            "max_samples": self.precision.max_samples,
            "precision": self.precision.value,
            "poison": sorted(setup.written),
        }
        exchange = session.request(request)
        reply = exchange.reply
        samples = _reported_samples(reply, self.precision.max_samples)
        paused = replies.number(reply.get("paused_s"), high=exchange.wall_s)
        if paused is not None:
            # As the runner tells it; within the timed calls' phase, for a reader only.
            phases = self.report.phases
            phases["pauses_in_timed_calls"] = phases.get("pauses_in_timed_calls", 0.0) + paused
        plausibility.check_claims(_label(setup.case), samples, exchange.wall_s)
        output = sets.output(0, reply.get("output"))
        failure = self._wrong(setup.case, setup.data, output, setup.expected)
        if failure:
            raise Stop(Status.FAILED, failure + " (output of the last timed call)")
        clock_mhz = replies.number(reply.get("sm_clock_mhz"), high=MAX_CLOCK_MHZ)
        result.time = summarize(samples, clock_mhz)
        return samples

    def _time_ranked(
        self,
        session: RunnerSession,
        setup: CaseSetup,
        slab_id: int,
        sets: Sets,
        result: CaseResult,
    ) -> list[float]:
        """Fresh inputs for every timed call, and every timed call's output checked: the
        runner's samples."""
        case = setup.case
        self._write(sets, setup.data, setup.written)
        session.request({"op": "warmup", "slab": slab_id, "set": 0})
        samples: list[float] = []
        walls: list[float] = []
        clocks: list[float] = []
        budget_ends = time.monotonic() + self._budget() * RUNNER_SHARE
        for repeat in range(1, self.precision.ranked_max_samples + 1):
            fresh = self.side.generate(case, repeat)
            self._write(sets, fresh, setup.written)
            exchange = session.request({"op": "time_one", "slab": slab_id, "set": 0})
            samples += _reported_samples(exchange.reply, 1)
            walls.append(exchange.wall_s)
            clock_mhz = replies.number(exchange.reply.get("sm_clock_mhz"), high=MAX_CLOCK_MHZ)
            if clock_mhz is not None:
                clocks.append(clock_mhz)
            failure = self._wrong(case, fresh, sets.output(0, exchange.reply.get("output")))
            if failure:
                raise Stop(Status.FAILED, failure + f" (timed call {repeat})")
            if enough_samples(samples, self.precision) or time.monotonic() > budget_ends:
                break
        plausibility.check_claims(_label(case), samples, sum(walls))
        result.time = summarize(samples, statistics.median(clocks) if clocks else None)
        return samples

    def _bound_by_harness_clock(
        self,
        session: RunnerSession,
        setup: CaseSetup,
        layout: Layout,
        samples: list[float],
        result: CaseResult,
    ) -> None:
        """What ranks comes from the harness's own clock (grader/clock.py). On a GPU with
        the gate, its windows' mean ranks and the runner's figures stay in `runner_time`.
        Elsewhere the runner's samples rank within what its batches allow: on the CPU
        within CPU_TOLERANCE either way, on a GPU without the gate no less than a fraction
        of them; where the runner's median is outside, every sample past the bound counts
        as the bound and the runner's figures stay in `runner_time`. A runner's median far
        under the harness's figure is also flagged."""
        assert result.time is not None
        budget_ends = time.monotonic() + self._budget()
        reported = result.time
        median = reported.median_s
        if session.gate is not None:
            # The harness's windows rank: the fastest round's mean (grader/clock.py), the
            # rounds' spread its distribution. The runner's own figures stay beside them in
            # `runner_time`.
            windows = clock.Windows(
                self.side, session, setup, layout, self.problem.tolerance, self.precision
            )
            measured = windows.measure(budget_ends)
            floor_s = clock.window_floor(measured.fastest_s)
            result.runner_time = RunnerTime.of(reported)
            result.time = dataclasses.replace(
                summarize(measured.per_call_s, reported.sm_clock_mhz),
                **_harness_figures(measured, floor_s, "windows"),
                median_s=measured.fastest_s,
                window_cost_s=measured.window_cost_s,
                ranked_by="grader",
            )
            self._flag_under(setup, median, floor_s, floor_s, measured, "the grader's figure")
        else:
            overheads = session.overheads
            if self.peaks is not None:
                overheads = dataclasses.replace(
                    overheads, copy_bytes_per_s=self.peaks.copy_bytes_per_s
                )
            batches = clock.Batches(
                self.side, session, setup, layout, self.problem.tolerance, overheads=overheads
            )
            measured = batches.measure(budget_ends, hint_s=median)
            warm = self.kind == "cpu" and self.mode == Mode.BENCHMARK
            warm_s = clock.cold_inputs_s(layout) if warm else 0.0
            floor_s, ceiling_s = clock.ranked_bounds(self.kind, measured.fastest_s, warm_s)
            figures = _harness_figures(measured, floor_s, "batches")
            if floor_s <= median <= ceiling_s:
                result.time = dataclasses.replace(reported, **figures, ranked_by="runner")
            else:
                result.runner_time = RunnerTime.of(reported)
                bounded = [min(max(x, floor_s), ceiling_s) for x in samples]
                result.time = dataclasses.replace(
                    summarize(bounded, reported.sm_clock_mhz), **figures, ranked_by="grader"
                )
            suspect_s = clock.ranked_floor(self.kind, measured.fastest_s, warm_s)
            self._flag_under(setup, median, suspect_s, floor_s, measured, "that bound")
        if result.time.median_s <= 0:
            raise Stop(
                Status.REJECTED, f"case {_label(setup.case)}: a median time of zero is impossible"
            )
        self._apply_roofline(setup, result)

    def _flag_under(
        self,
        setup: CaseSetup,
        median: float,
        suspect_s: float,
        floor_s: float,
        measured: clock.Measured,
        ranked_at: str,
    ) -> None:
        """A runner's own median under `suspect_s` is flagged: no honest call is that far
        under the grader's clock."""
        if median >= suspect_s:
            return
        how = (
            "calls on fresh inputs, each timed alone on its own events"
            if measured.window_cost_s is not None
            else "back-to-back calls on fresh inputs"
        )
        self.report.flags.append(
            f"case {_label(setup.case)}: {RUNNER_CLOCK_FINDING}{median * 1e6:.3f} µs is "
            f"under what the grader's clock allows ({floor_s * 1e6:.3f} µs a call, from "
            f"{measured.fastest_s * 1e6:.3f} µs over {measured.calls_per_batch} {how}); "
            f"ranked at {ranked_at}"
        )

    def _measures_roofline(self) -> bool:
        """Whether a benchmark case's reference call is measured for a physical floor: where
        the floor is enforced and the problem declares none."""
        return self.enforce_floor and self.peaks is not None and not self.problem.declares_roofline

    def _apply_roofline(self, setup: CaseSetup, result: CaseResult) -> None:
        """Speed-of-light fraction against this device's measured peaks; a time under the
        physical floor cannot be real and is rejected where the floor is enforced. Where the
        problem declares no roofline, the floor comes from what the reference's own call
        read, wrote and computed (`measured: true`), and only a time under MEASURED_MARGIN
        of it is rejected: an honest kernel may skip work the reference does."""
        declared = self.problem.roofline(setup.case)
        margin = plausibility.FLOOR_MARGIN
        roofline: Roofline | None = None
        if declared is not None:
            roofline = Roofline(bytes=declared.get("bytes", 0.0), flops=declared.get("flops", 0.0))
        elif setup.measured is not None:
            roofline = Roofline(
                bytes=setup.measured["bytes"], flops=setup.measured["flops"], measured=True
            )
            margin = plausibility.MEASURED_FLOOR_MARGIN
        if roofline is None or result.time is None:
            return
        result.roofline = roofline
        if self.peaks is None:
            return
        floor = self.peaks.floor_s(roofline.bytes, roofline.flops)
        if floor <= 0:
            return
        median = result.time.median_s
        roofline.floor_s = floor
        roofline.sol_fraction = floor / median
        if self.enforce_floor:
            # Judged against the floor less what the L2 cache absorbs: an honest vectoradd at
            # 4096² (its 34 MB output fits an H100's 50 MB L2) ran at 0.90x the plain floor.
            cached = self.peaks.cached_floor_s(roofline.bytes, roofline.flops)
            plausibility.check_floor(_label(setup.case), median, cached, margin)

    def _collect_profile(self, session: RunnerSession) -> None:
        """Nsight Compute's summary into each case, its report into the report's files; or,
        where it profiled nothing, why (and the grading is run again with torch.profiler)."""
        with self.clock.phase("profile"):
            summary, data = session.collect_profile(self.deadline)
        kernels = summary["cases"]
        if not any(kernels.get(str(i)) for i in range(1, len(self.report.cases) + 1)):
            self.ncu_fell_through = nsight.why_not(summary)
            return
        for index, result in enumerate(self.report.cases, start=1):
            result.profile = Profile(
                tool=nsight.TOOL,
                version=summary["version"],
                calls=profiling.PROFILED_CALLS,
                kernels=kernels.get(str(index), []),
            )
        if data:
            self.report.add_file(PROFILE_FILE, data)
        self.report.message = (
            f"all {len(self.report.cases)} benchmark cases passed and were profiled "
            f"({nsight.TOOL}; no score: a profile never ranks)"
        )

    def _conclude(self) -> None:
        failed = [c for c in self.report.cases if c.status != Status.PASSED]
        if failed:
            self.report.status = Status.FAILED
            shown = "\n".join(c.message for c in failed[:3])
            more = f"\n(and {len(failed) - 3} more failing cases)" if len(failed) > 3 else ""
            self.report.message = capped(
                f"{len(failed)} of {len(self.report.cases)} cases failed:\n{shown}{more}"
            )
            return
        self.report.status = Status.PASSED
        if self.mode == Mode.TEST:
            self.report.message = f"all {len(self.report.cases)} test cases passed"
            return
        if self.mode == Mode.PROFILE:
            self.report.message = (
                f"all {len(self.report.cases)} benchmark cases passed and were profiled "
                f"({profiling.TOOL}; no score: a profile never ranks)"
            )
            return
        medians = [c.time.median_s for c in self.report.cases if c.time]
        self.report.score = geometric_mean(medians)
        self.report.message = (
            f"all {len(self.report.cases)} benchmark cases passed; "
            f"score {self.report.score * 1e6:.3f} µs (geometric mean of medians)"
        )
        note = short_calls(self.kind, medians)
        if note:
            self.report.short_calls = True
            self.report.message += f"; {note}"
