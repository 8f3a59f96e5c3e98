"""The harness's side of the channel to one runner: starting it in the sandbox (before its
submission is known), loading the submission into it, handing it slabs, and every request
after that, each bounded by the grading's deadline. `Standby` keeps the next grading's runner
started while the current one is graded, so a worker's grading finds one ready."""

from __future__ import annotations

import collections
import contextlib
import itertools
import math
import os
import select
import shutil
import socket
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import sandbox
from grader import gate, nsight, shared
from grader.confine import runner_env, runner_folders, runner_isolation
from grader.hostsettings import HostSettings
from grader.protocol import (
    ChannelClosed,
    ChannelError,
    ChannelTimeout,
    recv_message,
    send_fd,
    send_message,
)
from grader.report import LOAD_FAILED, PhaseClock, Status, Stop, tail
from grader.shared import SharedMemoryError, Slab
from grader.staging import Layout, Sets

EXIT_GRACE_S = 2.0
# Runners a worker keeps started for its next gradings, by device kind (each holds a CUDA
# context on a GPU, about 0.6 GiB of its memory).
STANDBY_RUNNERS = {"cuda": 4, "cpu": 1}
# How long a timed grading waits for the waiting runners' starts (Standby.settle).
SETTLE_S = 60.0
# The problem's files that stay in the harness: the runner never sees its reference.
SKIP_IN_RUNNER = frozenset({"reference.py", "eval.py", "task.yml"})
# The report's phase each request counts for (see PhaseClock).
REQUEST_PHASES = {
    "run": "first_calls",
    "warmup": "timed_calls",
    "time": "timed_calls",
    "time_one": "timed_calls",
    "batch": "harness_clock",
    "windows": "harness_clock",
}
# Exchanges with the runner before its submission is loaded, to measure what a batch costs
# beyond its calls (see Overheads).
CALIBRATION_PINGS = 20
# On a GPU, windows of the grader's own work (a copy of each of TRUSTED_BYTES) in the runner
# against the same copy timed in this process alone: what a window costs beyond its call
# (the device passing from one process's context to the other's and back, and writing back
# what a call's output left in L2), for calls from short to long. Each round times the copy
# alone (the median of CALIBRATION_ALONE) and in CALIBRATION_WINDOWS windows (the first
# CALIBRATION_SKIPPED left out: the runner's context wakes; the rest averaged); a point's
# cost is the median of its rounds', so that one round the device spent otherwise does not
# move it.
TRUSTED_BYTES = (4 << 20, 16 << 20, 32 << 20, 64 << 20)
CALIBRATION_ROUNDS = 3
CALIBRATION_WINDOWS = 80
CALIBRATION_SKIPPED = 5
CALIBRATION_ALONE = 10
# A window's cost hardly depends on its call's length (286-295 µs over all four copies on an
# H100, within 4 µs in one runner): a point further than CALIBRATION_AGREEMENT from the
# median of the points was measured while something else held the device (once 230 µs,
# which ranked a 128 µs call at 188 µs) and is measured again, up to CALIBRATION_RETRIES
# times.
CALIBRATION_AGREEMENT = 0.02
CALIBRATION_RETRIES = 3
_slab_ids = itertools.count(1)
_Then = TypeVar("_Then")


@dataclass(frozen=True)
class Overheads:
    """What a batch costs beyond its calls, measured with trusted code only: exchanges with
    the runner before its submission is loaded (the fastest of several, so never more than
    an honest batch pays), and the device's copy bandwidth measured when the worker started.
    A batch subtracts one round trip, on a GPU the passing of the device from the harness's
    process to the runner's, and the copy of its inputs into the slab."""

    round_trip_s: float = 0.0
    copy_bytes_per_s: float = math.inf
    # (a trusted call's seconds alone, what its window cost beyond it), shortest call first.
    window_points: tuple[tuple[float, float], ...] = ()

    @property
    def window_s(self) -> float:
        """What a window costs beyond a long call (the longest trusted call's)."""
        return self.window_points[-1][1] if self.window_points else 0.0

    def window_call_s(self, mean_s: float) -> float:
        """A call's seconds from the mean of its windows: less the cost calibrated for the
        shortest trusted call up to its length, the longest one's from its length on, and
        in between the cost drawn on straight lines between neighbouring points."""
        if not self.window_points:
            return max(0.0, mean_s)
        points = sorted(self.window_points)
        call_s = mean_s - points[0][1]
        if call_s <= points[0][0]:
            return max(0.0, call_s)
        for (short_s, short_cost), (long_s, long_cost) in itertools.pairwise(points):
            if long_s <= short_s:
                continue
            slope = min(0.5, max(-0.5, (long_cost - short_cost) / (long_s - short_s)))
            call_s = (mean_s - short_cost + slope * short_s) / (1 + slope)
            if call_s < long_s:
                return max(0.0, call_s)
        return max(0.0, mean_s - points[-1][1])

    def batch_s(self, input_bytes: int, copied_s: float = math.inf) -> float:
        """The seconds subtracted from a batch whose sets' inputs take `input_bytes`: the
        copy at the measured bandwidth, but never longer than it took (`copied_s`, on the
        harness's clock), so peaks measured too low cannot take the calls' time away."""
        copy_s = min(2 * input_bytes / self.copy_bytes_per_s, copied_s)
        return self.round_trip_s + copy_s


def disagreeing(points: list[tuple[float, float]]) -> list[int]:
    """The calibration points whose window cost lies further than CALIBRATION_AGREEMENT from
    the median of all the points' costs."""
    middle = statistics.median_high([cost for _, cost in points])
    return [
        index
        for index, (_, cost) in enumerate(points)
        if abs(cost - middle) > CALIBRATION_AGREEMENT * middle
    ]


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
    """One runner child, from its start to its end: it starts with no submission (torch
    imported, its CUDA context made) in an empty work folder, gets the grading's files and
    `load` when its grading begins, and is never used for another submission. With `ncu`
    (profile mode on a GPU) it starts under Nsight Compute's driver (grader.nsight)."""

    def __init__(
        self,
        kind: str,
        *,
        isolate: bool = True,
        memory_bytes: int | None = None,
        ncu: str | None = None,
    ):
        self.kind = kind
        self.isolate = isolate
        self.memory_bytes = memory_bytes
        self.ncu = ncu
        self.deadline = time.monotonic() + 3600.0  # until a grading sets its own
        self.clock = PhaseClock({})
        self.root, self.work, lib = runner_folders("kj-runner-")
        self._sock, theirs = socket.socketpair()
        # Under Nsight Compute, the driver's channel (grader.nsight).
        self._results: socket.socket | None = None
        results_theirs: socket.socket | None = None
        if ncu:
            self._results, results_theirs = socket.socketpair()
        argv = [
            sys.executable, "-m", "grader.runner",
            "--channel-fd", str(theirs.fileno()), "--device", kind,
        ]  # fmt: skip
        more = nsight.sandbox_paths(ncu) if ncu else []
        isolation = runner_isolation(self.work, kind, memory_bytes, more) if isolate else None
        env = runner_env(self.work, lib, kind, isolated=isolation is not None)
        passed = [theirs.fileno()]
        if ncu and results_theirs is not None:
            argv = nsight.driver_argv(ncu, results_theirs.fileno(), [*argv, "--under-ncu"])
            env["PATH"] = os.pathsep.join([str(Path(ncu).parent), env["PATH"]])
            passed.append(results_theirs.fileno())
        try:
            self.child = sandbox.start(
                argv,
                cwd=self.work,
                env=env,
                pass_fds=tuple(passed),
                isolation=isolation,
            )
        except BaseException:
            self._sock.close()
            if self._results is not None:
                self._results.close()
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        finally:
            theirs.close()
            if results_theirs is not None:
                results_theirs.close()
        self._fd = self._sock.fileno()
        os.set_blocking(self._fd, False)
        if self._results is not None:
            os.set_blocking(self._results.fileno(), False)
        self._ready = False
        self._loaded = False
        self._slabs: dict[str, tuple[int, Slab]] = {}
        self._arena: Slab | None = None
        self.gate: gate.Gate | None = None
        # How long a windows request waits for the runner's `queued` (gate.QUEUED_WAIT_S),
        # until a runner once fails to say it in time (a call that waits for the device):
        # its later rounds then open their windows at once instead of waiting each time.
        self.queued_wait_s = gate.QUEUED_WAIT_S
        self.overheads = Overheads()

    def wait_ready(self, deadline: float) -> bool:
        """Until the runner has started (torch imported, its CUDA context made) or
        `deadline`; False where it died or did not start in time (then only fit to close)."""
        if self._ready:
            return True
        saved, self.deadline = self.deadline, deadline
        try:
            self._receive()
        except Stop:
            return False
        finally:
            self.deadline = saved
        self._ready = True
        return True

    def matches(self, kind: str, isolate: bool, memory_bytes: int | None) -> bool:
        same = (kind, isolate, memory_bytes) == (self.kind, self.isolate, self.memory_bytes)
        return same and self.ncu is None

    def alive(self) -> bool:
        return self.child.poll() is None

    def pids(self) -> set[int]:
        """Every process of this runner (its sandbox's cgroup, or its process group)."""
        return self.child.pids()

    # -- a grading's start ------------------------------------------------------------------

    def load(
        self,
        files: dict[str, str],
        code: str,
        *,
        deadline: float,
        clock: PhaseClock,
        kernelbench_seed: int | None = None,
    ) -> None:
        """Give the runner its grading's files and have it import the submission (building
        whatever it compiles at import) before `deadline`. Raises Stop with the reason."""
        self.deadline, self.clock = deadline, clock
        with clock.phase("setup"):
            for name, text in files.items():
                if name != "submission.py" and name not in SKIP_IN_RUNNER:
                    (self.work / name).write_text(text)
            (self.work / "submission.py").write_text(code)
        with clock.phase("runner_start"):
            if not self._ready:
                self._receive()  # the runner imported torch and made its context
                self._ready = True
        with clock.phase("setup"):
            self.overheads = self._calibrate()
        with clock.phase("load"):
            self._send({"op": "load", "kernelbench_seed": kernelbench_seed})
            self._receive()
        self._loaded = True

    def _calibrate(self) -> Overheads:
        """A batch's fixed costs, measured while the runner holds no submission: its answers
        are the grader's own code's, so nothing a submission does can make them larger. On a
        GPU the gate is handed over here too (grader/gate.py), and a window's own cost
        measured; where the driver cannot make one, `gate` stays None and the harness times
        host-clock batches instead (grader/clock.py)."""
        pings = []
        for _ in range(CALIBRATION_PINGS):
            started = time.perf_counter()
            self._exchange_now({"op": "ping"})
            pings.append(time.perf_counter() - started)
        round_trip = min(pings)
        if self.kind != "cuda" or self.ncu or not HostSettings.from_env().clock_windows:
            return Overheads(round_trip)  # profile mode ranks nothing
        try:
            self.gate = gate.Gate()
        except (SharedMemoryError, RuntimeError, AttributeError):
            return Overheads(round_trip)
        try:
            self._hand_over(self.gate.slab, {"op": "gate", "nbytes": self.gate.slab.nbytes})
            points = self._window_points(self.gate)
        except Stop as exc:
            if exc.status == Status.TIMEOUT:
                raise
            self.gate.close()
            self.gate = None
            return Overheads(round_trip)
        return Overheads(round_trip, window_points=points)

    def _window_points(self, opened: gate.Gate) -> tuple[tuple[float, float], ...]:
        """A point per TRUSTED_BYTES, each measured again while it disagrees with the others
        (CALIBRATION_AGREEMENT)."""
        points = [self._window_cost(opened, nbytes) for nbytes in TRUSTED_BYTES]
        for _ in range(CALIBRATION_RETRIES):
            outliers = disagreeing(points)
            if not outliers:
                break
            for index in outliers:
                points[index] = self._window_cost(opened, TRUSTED_BYTES[index])
        return tuple(points)

    def _window_cost(self, opened: gate.Gate, nbytes: int) -> tuple[float, float]:
        """A trusted copy of `nbytes`: its seconds alone, and what a window costs beyond it
        (see TRUSTED_BYTES)."""
        import torch

        source = torch.ones(nbytes, dtype=torch.uint8, device="cuda")
        target = torch.empty_like(source)
        alone: list[float] = []
        costs: list[float] = []
        for _ in range(CALIBRATION_ROUNDS):
            copies = gate.copies_alone_s(target, source, opened.flush, CALIBRATION_ALONE)
            alone_s = statistics.median_high(copies)
            # This process queues its windows once the runner has queued its calls, as in a
            # round of a submission's windows (grader/clock.py).
            message = {"op": "windows", "seq": opened.next_seq, "count": CALIBRATION_WINDOWS,
                       "trusted_bytes": nbytes}  # fmt: skip
            _, marks, _ = self._queued_first(
                message, lambda: opened.enqueue(CALIBRATION_WINDOWS), gate.QUEUED_WAIT_S
            )
            measured = opened.finish(marks, time.monotonic() + 5.0)
            if measured is None:
                raise Stop(Status.ERROR, "the runner did not open its calibration windows")
            counted = measured[CALIBRATION_SKIPPED:]
            alone.append(alone_s)
            costs.append(sum(counted) / len(counted) - alone_s)
        return statistics.median_high(alone), max(0.0, statistics.median_high(costs))

    # -- the channel ------------------------------------------------------------------------

    def _exited(self) -> Stop:
        code = self.child.wait(max(0.0, min(5.0, self.deadline - time.monotonic())))
        shown = "unknown" if code is None else str(code)
        return Stop(Status.ERROR, f"the runner exited before reporting (exit code {shown})")

    def _receive(self) -> dict[str, Any]:
        try:
            reply = recv_message(self._fd, deadline=self.deadline)
        except ChannelTimeout as exc:
            raise Stop(Status.TIMEOUT, "") from exc
        except ChannelClosed as exc:
            raise self._exited() from exc
        except ChannelError as exc:
            raise Stop(Status.ERROR, f"the runner sent a malformed message: {exc}") from exc
        if not isinstance(reply, dict) or "ok" not in reply:
            raise Stop(Status.ERROR, "the runner sent a malformed message")
        if not reply["ok"]:
            error = str(reply.get("error", "unknown error"))
            if reply.get("phase") == "import":
                raise Stop(Status.ERROR, LOAD_FAILED + ":\n" + tail(error))
            raise Stop(Status.ERROR, "custom_kernel raised:\n" + tail(error))
        return reply

    def _send(self, message: dict[str, Any]) -> None:
        try:
            send_message(self._fd, message, deadline=self.deadline)
        except ChannelTimeout as exc:
            raise Stop(Status.TIMEOUT, "") from exc
        except (ChannelClosed, ConnectionResetError) as exc:
            raise self._exited() from exc

    def request(
        self, message: dict[str, Any], meanwhile: Callable[[], None] | None = None
    ) -> Exchange:
        """Send one request; the reply with the harness-measured wall time around it and the
        sandbox's CPU time over it. `meanwhile` runs once the request is sent."""
        if not self._loaded:
            raise RuntimeError("request before the submission was loaded")
        with self.clock.phase(REQUEST_PHASES.get(str(message.get("op")), "requests")):
            return self._exchange(message, meanwhile)

    def request_first(
        self, message: dict[str, Any], then: Callable[[], _Then]
    ) -> tuple[dict[str, Any], _Then]:
        """Send a windows request (grader/gate.py) and run `then` (which queues the harness's
        windows) once the runner says it has queued every call behind its gate, or after
        `queued_wait_s` when it has not said so (a call that waits for the device, say);
        its reply and what `then` returned."""
        if not self._loaded:
            raise RuntimeError("request before the submission was loaded")
        with self.clock.phase(REQUEST_PHASES.get(str(message.get("op")), "requests")):
            reply, queued, in_time = self._queued_first(message, then, self.queued_wait_s)
            if not in_time:
                self.queued_wait_s = 0.0
            return reply, queued

    def _queued_first(
        self, message: dict[str, Any], then: Callable[[], _Then], wait_s: float
    ) -> tuple[dict[str, Any], _Then, bool]:
        """The reply, what `then` returned, and whether `queued` came within `wait_s`."""
        self._send(message)
        ready, _, _ = select.select([self._fd], [], [], wait_s)
        first = self._receive() if ready else None
        queued = then()
        in_time = first == gate.QUEUED
        if first is None or first == gate.QUEUED:
            first = self._receive()
        if first == gate.QUEUED:  # said late, after the windows were queued
            first = self._receive()
        return first, queued, in_time

    def _exchange(
        self, message: dict[str, Any], meanwhile: Callable[[], None] | None = None
    ) -> Exchange:
        cpu_before = self.child.cpu_seconds()
        started = time.monotonic()
        self._send(message)
        if meanwhile is not None:
            meanwhile()
        reply = self._receive()
        wall = time.monotonic() - started
        cpu_after = self.child.cpu_seconds()
        cpu = cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
        return Exchange(reply, wall, cpu)

    # -- slabs ------------------------------------------------------------------------------

    def stage(self, purpose: str, layout: Layout, count: int) -> tuple[int, Sets]:
        """`count` sets of `layout` in the runner's slab for `purpose` ("case", "batch"): the
        slab it holds already when it is large enough (laid out anew), else a larger one
        handed over in its place. The runner never unmaps a slab it was given (a submission
        may keep views into it), so reusing one keeps its memory to the largest case's."""
        need = count * layout.set_bytes
        held = self._slabs.get(purpose)
        with self.clock.phase("setup"):
            if held is not None and held[1].nbytes >= need:
                slab_id, slab = held
                self._exchange_now({"op": "layout", "slab": slab_id, "sets": count,
                                    "layout": layout.to_message()})  # fmt: skip
                return slab_id, Sets(slab, layout, count)
            if held is not None:
                self._forget(purpose)
            slab = shared.create(need, self.kind)
            slab_id = next(_slab_ids)
            self._slabs[purpose] = (slab_id, slab)
            self._hand_over(slab, {"op": "attach", "slab": slab_id, "nbytes": slab.nbytes,
                                   "sets": count, "layout": layout.to_message()})  # fmt: skip
        return slab_id, Sets(slab, layout, count)

    def arena(self, nbytes: int) -> Slab:
        """A slab of at least `nbytes` the runner's calls allocate from in windows (see
        grader/gate.py): the one it has when large enough, else a new one it moves to."""
        if self._arena is not None and self._arena.nbytes >= nbytes:
            return self._arena
        with self.clock.phase("setup"):
            slab = shared.create(nbytes, self.kind)
            self._hand_over(slab, {"op": "arena", "nbytes": slab.nbytes})
            if self._arena is not None:
                self._arena.close()  # the runner keeps its own mapping for its pool
            self._arena = slab
        return slab

    def _hand_over(self, slab: Slab, message: dict[str, Any]) -> None:
        """Send `message` and `slab`'s file descriptor after it; wait for the reply."""
        self._send(message)
        try:
            send_fd(self._sock, slab.fd, deadline=self.deadline)
        except ChannelTimeout as exc:
            raise Stop(Status.TIMEOUT, "") from exc
        except ChannelClosed as exc:
            raise self._exited() from exc
        self._receive()

    def _exchange_now(self, message: dict[str, Any]) -> None:
        self._send(message)
        self._receive()

    def _forget(self, purpose: str) -> None:
        """The runner drops a slab (keeping it mapped) and the harness lets its own go."""
        slab_id, slab = self._slabs.pop(purpose)
        try:
            self._exchange_now({"op": "release", "slab": slab_id})
        finally:
            slab.close()

    # -- the end ----------------------------------------------------------------------------

    def collect_profile(self, deadline: float) -> tuple[dict[str, Any], bytes | None]:
        """Under Nsight Compute: end the runner, then take the driver's summary (see
        grader.nsight) and its report's bytes, by `deadline`. Raises Stop without them."""
        assert self._results is not None, "a runner not started under Nsight Compute"
        self.deadline = deadline
        with contextlib.suppress(Stop):
            self._send({"op": "exit"})  # a runner that has gone already is as good
        try:
            reply = recv_message(self._results.fileno(), deadline=deadline, max_bytes=16 << 20)
            if not isinstance(reply, dict):
                raise ChannelError("not a summary")
            summary = nsight.summary_from_reply(reply)
            if not summary["report"]:
                return summary, None
            return summary, nsight.read_report(self._results, deadline)
        except ChannelTimeout as exc:
            raise Stop(Status.TIMEOUT, "Nsight Compute's report was not read back in time") from exc
        except (ChannelClosed, ChannelError, OSError) as exc:
            raise Stop(Status.ERROR, f"Nsight Compute's summary did not come back: {exc}") from exc

    def close(self) -> sandbox.ProcessResult:
        with contextlib.suppress(OSError):
            self._sock.close()
            if self._results is not None:
                self._results.close()
        if self._loaded or self._ready:
            # A runner whose channel closed exits by itself; give it a moment.
            self.child.wait(max(0.0, min(EXIT_GRACE_S, self.deadline - time.monotonic())))
        result = self.child.result()
        for _, slab in self._slabs.values():
            slab.close()
        self._slabs.clear()
        if self._arena is not None:
            self._arena.close()
            self._arena = None
        if self.gate is not None:
            self.gate.close()
            self.gate = None
        shutil.rmtree(self.root, ignore_errors=True)
        return result


class Standby:
    """The runners for a worker's next gradings, started before their jobs arrive: `take`
    hands over the oldest waiting one (or starts one). On a GPU it keeps `STANDBY_RUNNERS`
    waiting, the successors starting right away, so that a test grading does not wait for a
    runner's start (about 4 s on an H200, most of it importing torch); a timed grading waits
    for their starts before its first window (`settle`). On the CPU one, started once the
    current grading's timed work is done (`refill`)."""

    def __init__(self) -> None:
        self._waiting: collections.deque[RunnerSession] = collections.deque()

    def take(self, kind: str, *, isolate: bool, memory_bytes: int | None) -> RunnerSession:
        session = None
        while self._waiting and session is None:
            candidate = self._waiting.popleft()
            if candidate.matches(kind, isolate, memory_bytes) and candidate.alive():
                session = candidate
            else:
                candidate.close()
        if session is None:
            session = RunnerSession(kind, isolate=isolate, memory_bytes=memory_bytes)
        if kind != "cpu":
            self.refill(kind, isolate=isolate, memory_bytes=memory_bytes)
        return session

    def settle(self, within_s: float = SETTLE_S) -> None:
        """Until every waiting runner has started: a timed grading on a GPU begins only then,
        since a CUDA context being made shares the device with the grading's windows and with
        the calibration of their cost, and made them miss a call's time by up to a whole
        kernel (bench/ranked_clock.py `spread --standby`). A runner that does not start in
        time is closed."""
        deadline = time.monotonic() + within_s
        started: collections.deque[RunnerSession] = collections.deque()
        while self._waiting:
            session = self._waiting.popleft()
            if session.alive() and session.wait_ready(deadline):
                started.append(session)
            else:
                session.close()
        self._waiting = started

    def refill(self, kind: str, *, isolate: bool, memory_bytes: int | None) -> None:
        while len(self._waiting) < STANDBY_RUNNERS.get(kind, 1):
            self._waiting.append(RunnerSession(kind, isolate=isolate, memory_bytes=memory_bytes))

    def pids(self) -> set[int]:
        """The waiting runners' processes (GPU hygiene counts them as the worker's own)."""
        return set().union(*(session.pids() for session in self._waiting))

    def close(self) -> None:
        while self._waiting:
            self._waiting.popleft().close()
