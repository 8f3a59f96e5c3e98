"""The trusted side of grading: `grade()` generates inputs, starts the runner in the sandbox,
checks every output and timing it hands back, and writes the report. It never imports or
executes the submission."""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import statistics
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

import sandbox
from grader import inputs, plausibility
from grader.calibrate import DevicePeaks, measure_peaks
from grader.check import first_mismatches, run_check
from grader.confine import DEFAULT_MEMORY_BYTES, GRADER_PACKAGE, runner_env, runner_isolation
from grader.device import DeviceInfo, detect_device
from grader.devicemap import harness_device_map
from grader.inputs import (
    clone_data,
    devices_of,
    iter_tensors,
    poison,
    same_tensor,
    seeded_case,
    to_cpu,
    to_device,
    written_paths,
)
from grader.plausibility import label as _label
from grader.problem import Problem
from grader.protocol import (
    ChannelClosed,
    ChannelError,
    ChannelTimeout,
    recv_message,
    send_message,
    widen,
)
from grader.report import CaseResult, Mode, PhaseClock, Report, Stop
from grader.screen import screen as screen_source
from grader.timing import MAX_SAMPLES, enough_samples, geometric_mean, summarize

MODES = tuple(Mode)
DEVICES = ("cpu", "cuda")
DEVICE_ENV = "KJ_DEVICE"  # how problem code (problems/utils.py) learns the grading device
LEADERBOARD_MAX_SETS = 20
EXIT_GRACE_S = 2.0
MESSAGE_CAP = 4000
CUDA_ONLY = "this problem generates its inputs on CUDA; grade it on a GPU worker"
SKIP_IN_RUNNER = frozenset({"reference.py", "eval.py", "task.yml"})
# Registers and unregisters the problem's module names in sys.modules; one at a time.
_IMPORT_LOCK = threading.Lock()
# The report's phase each runner request counts for (see PhaseClock).
REQUEST_PHASES = {
    "run": "first_calls",
    "warmup": "timed_calls",
    "time": "timed_calls",
    "time_one": "timed_calls",
    "stage": "cross_check",
    "batch": "cross_check",
    "ping": "cross_check",
}


def _in_phase(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A _Grading method whose time counts for phase `name` of the report."""

    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def timed(self: _Grading, *args: Any, **kwargs: Any) -> Any:
            with self.clock.phase(name):
                return method(self, *args, **kwargs)

        return timed

    return wrap


def grade(
    problem: Problem,
    code: str,
    *,
    mode: str = "test",
    device: str = "cpu",
    secret_seed: int | None = None,
    timeout_s: float | None = None,
    on_progress: Callable[[str], None] | None = None,
    peaks: DevicePeaks | None = None,
    enforce_floor: bool | None = None,
    isolate: bool = True,
    memory_bytes: int | None = None,
    screen: bool = True,
    nonce: int | None = None,
) -> Report:
    """Grade `code` (the text of submission.py) on `problem` and return the report.

    `screen`: screen the source statically first (rejecting what cannot be part of a
    kernel, flagging what deserves review); off only to test the layers behind it.
    `isolate`: run the submission in the sandbox (bubblewrap, seccomp, a cgroup capping
    host memory at `memory_bytes`); only trusted code may be graded without it. Raises
    `sandbox.SandboxUnavailable` when the sandbox cannot be set up on this host.

    `peaks`: the device's measured ceilings (measured here when missing and timing is
    needed). `enforce_floor`: reject times under the physical floor; default on CUDA only,
    since a CPU shared with other work measures its peaks too unevenly to judge by.

    `nonce`: mixed into the secret seed in leaderboard mode so that no two gradings share a
    ranked input; drawn from the operating system for each grading when missing, and kept
    only in this process (the runner cannot read it, the report does not carry it). Tests
    fix it to show what a repeat would allow."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}: use one of {', '.join(DEVICES)}")
    info = detect_device(device)
    limit = timeout_s or problem.timeout_for(mode)
    if peaks is None and mode != "test":
        # Workers measure their peaks once when they start and pass them in.
        peaks = measure_peaks(info.kind)
    report = Report(
        status="running",
        problem=problem.name,
        mode=mode,
        device=info.kind,
        device_name=info.name,
        device_type=info.device_type,
        device_peaks=peaks.to_dict() if peaks else None,
    )
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kj-grade-") as root:
        ranked_seed = inputs.ranked_seed(secret_seed, nonce) if mode == "leaderboard" else None
        grading = _Grading(
            problem, code, mode, info, ranked_seed, limit, report, on_progress, peaks
        )
        grading.enforce_floor = info.kind == "cuda" if enforce_floor is None else enforce_floor
        grading.isolate, grading.memory_bytes = isolate, memory_bytes
        # A CPU worker grades problems written for CUDA by reading "cuda" as the CPU in the
        # harness (this process), where the reference makes the inputs.
        if not screen or grading.screen():
            with harness_device_map(info.kind):
                grading.run(Path(root))
    report.wall_s = time.monotonic() - started
    return report


def _tail(text: str, lines: int = 12) -> str:
    kept = text.strip().splitlines()[-lines:]
    return "\n".join(kept)


def _cap(text: str) -> str:
    return text if len(text) <= MESSAGE_CAP else text[:MESSAGE_CAP] + " [...]"


def _is_tensor_tree(output: Any) -> bool:
    if type(output) is torch.Tensor:
        return True
    return type(output) in (tuple, list) and bool(output) and all(map(_is_tensor_tree, output))


@contextmanager
def device_env(kind: str) -> Iterator[None]:
    """KJ_DEVICE set to `kind` while the reference is imported and called (its utils read it)."""
    previous = os.environ.get(DEVICE_ENV)
    os.environ[DEVICE_ENV] = kind
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(DEVICE_ENV, None)
        else:
            os.environ[DEVICE_ENV] = previous


def import_reference(folder: Path, module_names: list[str]) -> ModuleType:
    """Import the problem's reference.py from `folder` without leaving its helper modules
    (utils, task) in sys.modules, where they would shadow another problem's."""
    with _IMPORT_LOCK:
        saved = {name: sys.modules.pop(name) for name in module_names if name in sys.modules}
        sys.path.insert(0, str(folder))
        try:
            return importlib.import_module("reference")
        finally:
            sys.path.remove(str(folder))
            for name in module_names:
                sys.modules.pop(name, None)
            sys.modules.update(saved)


@dataclass(frozen=True)
class Exchange:
    """One request's reply, the harness's wall time around it, and the sandbox's CPU time
    over it (None without a cgroup)."""

    reply: dict[str, Any]
    wall_s: float
    cpu_s: float | None

    @property
    def clocks(self) -> tuple[float, float | None]:
        return self.wall_s, self.cpu_s


class RunnerSession:
    """The runner child and the two pipes to it; every exchange is bounded by `deadline`."""

    def __init__(
        self,
        work: Path,
        lib: Path,
        kind: str,
        deadline: float,
        isolation: sandbox.Isolation | None,
        runner_args: tuple[str, ...] = (),
        clock: PhaseClock | None = None,
    ) -> None:
        self.deadline = deadline
        self.clock = clock or PhaseClock({})
        to_runner_r, self._to_runner = os.pipe()
        self._from_runner, from_runner_w = os.pipe()
        for fd in (self._to_runner, self._from_runner):
            widen(fd)
        argv = [
            sys.executable, "-m", "grader.runner",
            "--recv-fd", str(to_runner_r), "--send-fd", str(from_runner_w), "--device", kind,
            *runner_args,
        ]  # fmt: skip
        try:
            self.child = sandbox.start(
                argv,
                cwd=work,
                env=runner_env(work, lib, kind, isolated=isolation is not None),
                pass_fds=(to_runner_r, from_runner_w),
                isolation=isolation,
            )
        finally:
            os.close(to_runner_r)
            os.close(from_runner_w)
        self._ready = False

    def _exited(self) -> Stop:
        code = self.child.wait(max(0.0, min(5.0, self.deadline - time.monotonic())))
        shown = "unknown" if code is None else str(code)
        return Stop("error", f"the runner exited before reporting (exit code {shown})")

    def _receive(self) -> dict[str, Any]:
        try:
            reply = recv_message(self._from_runner, deadline=self.deadline)
        except ChannelTimeout as exc:
            raise Stop("timeout", "") from exc
        except ChannelClosed as exc:
            raise self._exited() from exc
        except ChannelError as exc:
            raise Stop("error", f"the runner sent a malformed message: {exc}") from exc
        if not isinstance(reply, dict) or "ok" not in reply:
            raise Stop("error", "the runner sent a malformed message")
        if not reply["ok"]:
            error = str(reply.get("error", "unknown error"))
            if reply.get("phase") == "import":
                raise Stop("error", "submission.py failed to load:\n" + _tail(error))
            raise Stop("error", "custom_kernel raised:\n" + _tail(error))
        return reply

    def _send(self, message: dict[str, Any]) -> None:
        try:
            send_message(self._to_runner, message, deadline=self.deadline)
        except ChannelTimeout as exc:
            raise Stop("timeout", "") from exc
        except ChannelClosed as exc:
            raise self._exited() from exc

    def request(self, message: dict[str, Any]) -> Exchange:
        """Send one request; the reply with the harness-measured wall time around it and the
        sandbox's CPU time over it."""
        if not self._ready:
            with self.clock.phase("runner_start"):
                self._receive()  # the runner imported the submission, or says why not
            self._ready = True
        with self.clock.phase(REQUEST_PHASES.get(str(message.get("op")), "requests")):
            return self._exchange(message)

    def _exchange(self, message: dict[str, Any]) -> Exchange:
        cpu_before = self.child.cpu_seconds()
        started = time.monotonic()
        self._send(message)
        reply = self._receive()
        wall = time.monotonic() - started
        cpu_after = self.child.cpu_seconds()
        cpu = cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
        return Exchange(reply, wall, cpu)

    def close(self) -> sandbox.ProcessResult:
        for fd in (self._to_runner, self._from_runner):
            with contextlib.suppress(OSError):
                os.close(fd)
        # A runner whose channel closed exits by itself; give it a moment, then kill the rest.
        self.child.wait(max(0.0, min(EXIT_GRACE_S, self.deadline - time.monotonic())))
        return self.child.result()


@dataclass
class CaseSetup:
    """A case ready to grade: its first input set (output buffers poisoned), the expected
    output, and the input paths the submission may write."""

    case: dict[str, Any]
    data: Any
    expected: Any
    written: set[str]


class _Grading:
    """One grading: the steps of `grade()` as short methods, in the order they run."""

    def __init__(
        self,
        problem: Problem,
        code: str,
        mode: str,
        info: DeviceInfo,
        ranked_seed: int | None,
        limit_s: float,
        report: Report,
        on_progress: Callable[[str], None] | None,
        peaks: DevicePeaks | None,
    ) -> None:
        self.problem = problem
        self.peaks = peaks
        self.enforce_floor = False
        self.isolate = True
        self.memory_bytes: int | None = None
        self.code = code
        self.mode = mode
        self.kind = info.kind
        self.device_type = info.device_type
        # Leaderboard mode only: the secret seed mixed with this grading's nonce.
        self.ranked_seed = ranked_seed
        self.limit_s = limit_s
        self.deadline = time.monotonic() + limit_s
        self.report = report
        self.on_progress = on_progress
        self.reference: ModuleType | None = None
        self.clock = PhaseClock(report.phases)

    # -- setting up -------------------------------------------------------------------

    def screen(self) -> bool:
        """Static screening; False (and the report says why) if the code is rejected."""
        found = screen_source(self.code)
        self.report.flags += [f"screening: {flag}" for flag in found.flags]
        if not found.rejections:
            return True
        self.report.status = "rejected"
        self.report.message = _cap(
            "static screening rejected this submission:\n" + "\n".join(found.rejections)
        )
        return False

    def run(self, root: Path) -> None:
        work, trusted, lib = root / "run", root / "trusted", root / "lib"
        with self.clock.phase("setup"):
            self._materialise(work, trusted, lib)
            isolation = (
                runner_isolation(work, self.kind, self.memory_bytes) if self.isolate else None
            )
            runner_args: tuple[str, ...] = ()
            if self.problem.format == "kernelbench":
                runner_args = ("--kernelbench-seed", str(self.problem.kernelbench_init_seed))
            session = RunnerSession(
                work, lib, self.kind, self.deadline, isolation, runner_args, self.clock
            )
        try:
            with device_env(self.kind):
                self._load_reference(trusted)
                self._grade_cases(session)
        except Stop as stop:
            self.report.status = stop.status
            self.report.message = _cap(stop.message) if stop.message else self._timeout_message()
        finally:
            with self.clock.phase("teardown"):
                result = session.close()
            self.report.stdout, self.report.stderr = result.stdout, result.stderr
        if result.oom_killed and self.report.status != "passed":
            limit = (self.memory_bytes or DEFAULT_MEMORY_BYTES) / (1 << 30)
            self.report.status = "error"
            self.report.message = (
                f"the submission ran out of host memory: its sandbox may use {limit:g} GiB\n"
                + self.report.message
            ).strip()

    def _timeout_message(self) -> str:
        return f"grading exceeded its time limit of {self.limit_s:g} s"

    def _materialise(self, work: Path, trusted: Path, lib: Path) -> None:
        for folder in (work / "home", work / "tmp", trusted, lib):
            folder.mkdir(parents=True)
        for name, text in self.problem.files.items():
            if name == "submission.py":
                continue
            (trusted / name).write_text(text)
            if name not in SKIP_IN_RUNNER:
                (work / name).write_text(text)
        (work / "submission.py").write_text(self.code)
        # Only the grader package is importable from the runner, not the rest of the repo.
        (lib / "grader").symlink_to(GRADER_PACKAGE, target_is_directory=True)

    @_in_phase("reference")
    def _load_reference(self, trusted: Path) -> None:
        names = [Path(name).stem for name in self.problem.files if name.endswith(".py")]
        try:
            self.reference = import_reference(trusted, names)
        except Exception as exc:
            if self.kind == "cpu" and "cuda" in str(exc).lower():
                raise Stop("error", CUDA_ONLY) from exc
            raise Stop(
                "error",
                "the problem's reference.py failed to import:\n" + _tail(traceback.format_exc()),
            ) from exc
        for needed in ("generate_input", "ref_kernel", "check_implementation"):
            if not callable(getattr(self.reference, needed, None)):
                raise Stop("error", f"the problem's reference.py does not define {needed}")

    def _progress(self, text: str) -> None:
        if self.on_progress is not None:
            self.on_progress(text)

    def _check_deadline(self) -> None:
        if time.monotonic() > self.deadline:
            raise Stop("timeout", "")

    # -- the problem's side -------------------------------------------------------------

    def _ref(self) -> ModuleType:
        assert self.reference is not None
        return self.reference

    @_in_phase("inputs")
    def _generate(self, case: dict[str, Any], repeat: int = 0) -> Any:
        kwargs = seeded_case(case, self.ranked_seed, repeat=repeat)
        try:
            data = self._ref().generate_input(**kwargs)
        except Exception as exc:
            if self.kind == "cpu" and "cuda" in str(exc).lower():
                raise Stop("error", CUDA_ONLY) from exc
            raise Stop(
                "error",
                f"the problem's generate_input failed for case {_label(case)}:\n"
                + _tail(traceback.format_exc()),
            ) from exc
        if self.kind == "cpu" and "cuda" in devices_of(data):
            raise Stop("error", CUDA_ONLY)
        self._check_deadline()
        return data

    @_in_phase("reference")
    def _written_by_reference(self, case: dict[str, Any], data: Any) -> tuple[Any, set[str]]:
        """The expected output, and which input tensors the reference itself writes."""
        scratch = clone_data(data)
        try:
            expected = self._ref().ref_kernel(scratch)
        except Exception as exc:
            raise Stop(
                "error",
                f"the problem's ref_kernel failed for case {_label(case)}:\n"
                + _tail(traceback.format_exc()),
            ) from exc
        return expected, written_paths(data, scratch)

    @_in_phase("checks")
    def _verdict(self, case: dict[str, Any], data: Any, output: Any, expected: Any = None) -> str:
        """'' if the output is right, else the message naming the case and first mismatches."""
        if not _is_tensor_tree(output):
            raise Stop("error", "custom_kernel must return a torch.Tensor")
        output = to_device(output, self.kind)
        ok, message = run_check(self._ref().check_implementation, clone_data(data), output)
        if ok:
            return ""
        if expected is None:
            expected, _ = self._written_by_reference(case, data)
        tol = self.problem.tolerance
        listing = first_mismatches(
            output, expected, rtol=tol.get("rtol", 1e-5), atol=tol.get("atol", 1e-8)
        )
        return f"case {_label(case)}: " + "; ".join(p for p in (listing, message) if p)

    def _ignored_buffers(self, data: Any, written: set[str], expected: Any) -> set[str]:
        """Output buffers the reference neither reads nor writes (GPU MODE's conv2d passes
        one its reference never uses): input tensors shaped like an expected output whose
        poisoning leaves the reference's result alone. They are the submission's to write,
        and are poisoned before every call like the buffers the reference writes, so a
        call cannot pass on what an earlier one left there."""
        shapes = {(t.shape, t.dtype) for _, t in iter_tensors(expected)}
        return {
            path
            for path, tensor in iter_tensors(data)
            if path not in written
            and (tensor.shape, tensor.dtype) in shapes
            and self._reference_ignores(data, path, expected)
        }

    @_in_phase("reference")
    def _reference_ignores(self, data: Any, path: str, expected: Any) -> bool:
        """Whether the reference's result is the same with the tensor at `path` poisoned. A
        tensor the reference reads changes its result and stays an input the submission
        must leave alone."""
        scratch = clone_data(data)
        poison(scratch, [path])
        try:
            again = self._ref().ref_kernel(scratch)
        except Exception:
            return False
        return _is_tensor_tree(again) and not written_paths(expected, again)

    @_in_phase("checks")
    def _modified_inputs(self, data: Any, returned: Any, written: set[str]) -> list[str]:
        after = dict(iter_tensors(returned))
        changed = []
        for path, tensor in iter_tensors(data):
            if path in written:
                continue
            other = after.get(path)
            if other is None or not same_tensor(tensor, other.to(tensor.device)):
                changed.append(path)
        return changed

    # -- the cases ----------------------------------------------------------------------

    def _grade_cases(self, session: RunnerSession) -> None:
        kind = "test" if self.mode == "test" else "benchmark"
        cases = self.problem.tests if kind == "test" else self.problem.benchmarks_for(self.kind)
        if not cases:
            raise Stop("error", f"the problem has no {kind} cases")
        for index, case in enumerate(cases, start=1):
            self._progress(f"{self.mode}: case {index}/{len(cases)} {_label(case)}")
            result = CaseResult(kind=kind, params=dict(case), status="running")
            self.report.cases.append(result)
            setup = self._prepare(case)
            try:
                self._grade_case(session, setup, result)
            except Stop as stop:
                result.status = stop.status
                result.message = _cap(stop.message) if stop.message else self._timeout_message()
                raise
            if result.status != "passed" and kind == "benchmark":
                break
        self._conclude()

    def _prepare(self, case: dict[str, Any]) -> CaseSetup:
        """The case's first input set, poisoned where the submission writes, with the
        reference's expected output."""
        data = self._generate(case)
        expected, written = self._written_by_reference(case, data)
        written |= self._ignored_buffers(data, written, expected)
        poison(data, written)
        return CaseSetup(case, data, expected, written)

    def _grade_case(self, session: RunnerSession, setup: CaseSetup, result: CaseResult) -> None:
        case, data, written = setup.case, setup.data, setup.written
        reply = session.request({"op": "run", "data": to_cpu(data), "return_data": True}).reply
        failure = self._verdict(case, data, reply.get("output"), setup.expected)
        if not failure:
            changed = self._modified_inputs(data, reply.get("data"), written)
            if changed:
                failure = (
                    f"case {_label(case)}: custom_kernel modified its inputs ({', '.join(changed)})"
                )
        if failure:
            result.status, result.message = "failed", _cap(failure)
            return
        if self.mode == "benchmark":
            self._time_benchmark(session, case, data, written, result)
        elif self.mode == "leaderboard":
            self._time_ranked(session, setup, result)
        result.status = "passed"

    def _budget(self) -> float:
        return max(0.0, min(self.problem.case_time_budget_s, self.deadline - time.monotonic()))

    def _time_benchmark(
        self,
        session: RunnerSession,
        case: dict[str, Any],
        data: Any,
        written: set[str],
        result: CaseResult,
    ) -> None:
        request = {
            "op": "time",
            "data": to_cpu(data),
            "budget_s": self._budget(),
            "max_samples": MAX_SAMPLES,
            "poison": sorted(written),
        }
        exchange = session.request(request)
        samples = self._samples(exchange.reply)
        paused = exchange.reply.get("paused_s")
        if isinstance(paused, float) and 0 <= paused <= exchange.wall_s:
            # As the runner tells it; within the timed calls' phase, for a reader only.
            phases = self.report.phases
            phases["pauses_in_timed_calls"] = phases.get("pauses_in_timed_calls", 0.0) + paused
        plausibility.check_claims(_label(case), samples, exchange.wall_s)
        failure = self._verdict(case, data, exchange.reply.get("output"))
        if failure:
            raise Stop("failed", failure + " (output of the last timed call)")
        self._record_time(case, samples, exchange.reply.get("sm_clock_mhz"), result)
        self._cross_check(session, case, data, result)

    def _time_ranked(self, session: RunnerSession, setup: CaseSetup, result: CaseResult) -> None:
        """Fresh inputs for every timed call, and every timed call's output checked."""
        case = setup.case
        session.request({"op": "warmup", "data": to_cpu(setup.data)})
        samples: list[float] = []
        walls: list[float] = []
        clocks: list[float] = []
        budget_ends = time.monotonic() + self._budget()
        for repeat in range(1, LEADERBOARD_MAX_SETS + 1):
            fresh = self._generate(case, repeat)
            poison(fresh, setup.written)
            exchange = session.request({"op": "time_one", "data": to_cpu(fresh)})
            samples += self._samples(exchange.reply)
            walls.append(exchange.wall_s)
            if isinstance(exchange.reply.get("sm_clock_mhz"), int | float):
                clocks.append(float(exchange.reply["sm_clock_mhz"]))
            failure = self._verdict(case, fresh, exchange.reply.get("output"))
            if failure:
                raise Stop("failed", failure + f" (timed call {repeat})")
            if enough_samples(samples) or time.monotonic() > budget_ends:
                break
        plausibility.check_claims(_label(case), samples, sum(walls))
        clock = statistics.median(clocks) if clocks else None
        self._record_time(case, samples, clock, result)
        self._cross_check(session, case, setup.data, result)

    def _samples(self, reply: dict[str, Any]) -> list[float]:
        samples = reply.get("samples")
        if (
            not isinstance(samples, list)
            or not samples
            or not all(isinstance(s, float) and s == s and s >= 0 for s in samples)
        ):
            raise Stop("rejected", "the runner reported malformed timings")
        return samples

    def _record_time(
        self, case: dict[str, Any], samples: list[float], clock: Any, result: CaseResult
    ) -> None:
        clock_mhz = float(clock) if isinstance(clock, int | float) else None
        result.time = summarize(samples, clock_mhz)
        if result.time["median_s"] <= 0:
            raise Stop("rejected", f"case {_label(case)}: a median time of zero is impossible")
        self._apply_roofline(case, result)

    def _apply_roofline(self, case: dict[str, Any], result: CaseResult) -> None:
        """Speed-of-light fraction against this device's measured peaks; a time under the
        physical floor cannot be real and is rejected where the floor is enforced."""
        roofline = self.problem.roofline(case)
        if roofline is None or result.time is None:
            return
        result.roofline = roofline
        if self.peaks is None:
            return
        floor = self.peaks.floor_s(roofline.get("bytes", 0.0), roofline.get("flops", 0.0))
        if floor <= 0:
            return
        median = result.time["median_s"]
        roofline["floor_s"] = floor
        roofline["sol_fraction"] = floor / median
        if self.enforce_floor:
            plausibility.check_floor(_label(case), median, floor)

    def _cross_check(
        self, session: RunnerSession, case: dict[str, Any], data: Any, result: CaseResult
    ) -> None:
        """Time batches of back-to-back calls on our own clock. The inputs go to the runner
        once, untimed; a batch request then carries none, so its wall time is the calls and
        one empty round trip (a transfer of large inputs would swamp a few calls)."""
        assert result.time is not None
        median = result.time["median_s"]
        calls = max(
            3,
            min(
                plausibility.CROSS_CHECK_MAX_CALLS,
                int(plausibility.CROSS_CHECK_BATCH_S / median),
            ),
        )
        session.request({"op": "stage", "data": to_cpu(data)})
        batches = [
            session.request({"op": "batch", "calls": calls}).clocks
            for _ in range(plausibility.CROSS_CHECK_BATCHES)
        ]
        pings = [session.request({"op": "ping"}).clocks for _ in range(3)]
        session.request({"op": "stage", "data": None})  # the runner lets the inputs go
        clock = plausibility.batch_clock(calls, batches, pings, self.kind == "cpu")
        self._judge(case, result, clock, "harness_per_call_s")

    def _judge(
        self,
        case: dict[str, Any],
        result: CaseResult,
        clock: plausibility.HarnessClock,
        key: str,
    ) -> None:
        assert result.time is not None
        result.time[key] = clock.per_call_s
        flag = plausibility.judge(self.kind, _label(case), result.time["median_s"], clock)
        if flag:
            self.report.flags.append(flag)

    def _conclude(self) -> None:
        failed = [c for c in self.report.cases if c.status != "passed"]
        if failed:
            self.report.status = "failed"
            shown = "\n".join(c.message for c in failed[:3])
            more = f"\n(and {len(failed) - 3} more failing cases)" if len(failed) > 3 else ""
            self.report.message = _cap(
                f"{len(failed)} of {len(self.report.cases)} cases failed:\n{shown}{more}"
            )
            return
        self.report.status = "passed"
        if self.mode == "test":
            self.report.message = f"all {len(self.report.cases)} test cases passed"
            return
        medians = [c.time["median_s"] for c in self.report.cases if c.time]
        self.report.score = geometric_mean(medians)
        self.report.message = (
            f"all {len(self.report.cases)} benchmark cases passed; "
            f"score {self.report.score * 1e6:.3f} µs (geometric mean of medians)"
        )
