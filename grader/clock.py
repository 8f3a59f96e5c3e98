"""The harness's own clock over batches of back-to-back calls on fresh input sets, and the
least time a call may rank at by it (`ranked_floor`). Nothing the submission's process
reports enters it: the harness starts its clock before the inputs land in the runner's
slab, stops it when the runner hands the batch back, and subtracts only what it measured
with trusted code (`Overheads`)."""

from __future__ import annotations

import functools
import math
import random
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from grader.check import wrong_output
from grader.expected import CaseSetup, ProblemSide
from grader.plausibility import label
from grader.precision import Precision
from grader.report import Status, Stop
from grader.session import Overheads, RunnerSession
from grader.shared import Slab, aligned
from grader.staging import READ, Layout, Sets

# How long a batch's calls should last: long enough that what it costs once (the round trip,
# on a GPU the device passing between processes, up to a millisecond) is a small part of it,
# short enough that a GPU's clock has not yet fallen under sustained load. On the CPU a
# batch costs a round trip once, and making its sets costs more than running them.
BATCH_S = {"cuda": 0.05, "cpu": 0.01}
# Batches that count: MIN_BATCHES, the fastest giving the figure (a runner can only make a
# batch slower: its span holds all its calls' work). Batches too short to count (a first
# guess of the call's time that was too long) are sized again, up to MAX_BATCHES_RUN
# batches in all.
MIN_BATCHES = 3
MAX_BATCHES_RUN = 8
# The least time a call ranks at: the fastest batch's per-call time divided by RATIO, less
# SLACK_S. A batch's call also pays what the runner's timed call leaves out: the copy of an
# output returned as a new tensor into its result slot, launches the device does not hide,
# the runner's own bookkeeping, and fixed costs a batch of few large sets cannot spread. The
# honest built-in solutions measured up to 2.3 times their median there on an H100 (rmsnorm,
# whose output is a new tensor; vectoradd 1.7 once 10 µs is allowed), and up to about 4.5
# times on a 2-core CPU for calls of a few microseconds (the interpreter's own cost of a
# call in a batch). The bound is set above those, so that it does not raise an honest time,
# and a runner's figure below it ranks at it (docs/benchmarks.md).
RATIO = {"cuda": 2.5, "cpu": 5.0}
SLACK_S = {"cuda": 10e-6, "cpu": 0.0}
# On the CPU the harness's batches are the clock that ranks: the runner's median refines
# their figure by no more than this fraction either way (a CPU call timed alone and one in a
# batch differ by 0.5-1.5 times on a 2-core VM, the thread pool waking or staying awake, so
# a median further off says nothing about the calls a batch timed). A median under the
# figure over RATIO is also flagged: no honest call is that far under it.
CPU_TOLERANCE = 0.05
# How fast a CPU core brings over inputs another core wrote, at the least (one thread on a
# 2-core VM moved 6 MiB between the harness and the runner in about 1.1 ms).
CPU_COLD_BYTES_PER_S = 5e9
# At most this many calls a batch: making a set costs the harness more than a call costs the
# runner, and on the CPU the floor needs no finer measure than a few hundred calls give.
MAX_CALLS = {"cuda": 2000, "cpu": 200}
L2_TIMES = 4
# A call this long is measured alone, and twice is enough: beside a call of a second, a
# round trip or a page fault is nothing, and GPU MODE's eigh_py spends 8 s a call.
LONG_CALL_S = 1.0
# The most memory a batch's sets take (twice over: the harness's own image of them and the
# slab the runner reads), and on a GPU an eighth of what is free at most.
BATCH_MAX_BYTES = {"cuda": 8 << 30, "cpu": 64 << 20}
# Outputs checked per batch besides the last one, chosen after it ran: skipping a fraction p
# of the calls goes unseen with probability (1 - p) ** CHECKED_PER_BATCH.
CHECKED_PER_BATCH = 16
# The batches' input sets are numbered from here, apart from the case's first set.
FIRST_REPEAT = 1_000_000
# On a GPU (Windows) the windows' figure ranks; a runner's median under it less this
# fraction and this many seconds (more than a window's calibrated cost leaves uncertain,
# docs/benchmarks.md) is flagged.
WINDOW_TOLERANCE = 0.02
WINDOW_SLACK_S = 2e-6
# A round of windows lasts about WINDOWS_S, within WINDOWS windows and WINDOWS_MAX_BYTES
# (or a third of the device's free memory); at a thorough precision, its factor times as long
# and as many windows at most, so a round's mean has a smaller standard error while the
# figure is still the fastest of MIN_BATCHES rounds.
WINDOWS_S = 0.05
WINDOWS = (10, 200)
WINDOWS_MAX_BYTES = 24 << 30
# Windows at a round's start, timed but not counted: the first windows after the harness's
# own work (making the round's sets) find the device's clocks and the runner's context
# asleep. A runner cannot use them for work on the counted calls: a set's inputs land only
# just before its own window.
WARM_WINDOWS = 4
# Room in the arena beyond a round's outputs, for the calls' temporaries: at least this, or
# what the pilot call held from its arena at most (its output and temporaries). A call
# needing more gets it from the driver, and an output made there is copied into its slot
# inside its window (grader/gate.py): an honest call that would be timed slower.
ARENA_SPARE_BYTES = 256 << 20
# How long after the runner's reply its windows may still be running on the device.
WINDOW_GRACE_S = 2.0


@dataclass(frozen=True)
class Measured:
    """Per-call seconds of each counted batch, on the harness's clock."""

    per_call_s: list[float]
    calls_per_batch: int
    # Windows: what was subtracted from the fastest round's mean, a window's own calibrated
    # cost at that call's length (`Overheads.window_call_s`); None for batches.
    window_cost_s: float | None = None

    @property
    def fastest_s(self) -> float:
        """The figure: a runner can slow a batch, never make one faster than its work."""
        return min(self.per_call_s)


def ranked_floor(kind: str, fastest_s: float, warm_s: float = 0.0) -> float:
    """The least time a call may rank at, from the fastest batch's per-call time. `warm_s`:
    what a batch's call pays that the runner's timed call did not because its inputs stayed
    warm in its caches (benchmark mode on the CPU times one input set over and over)."""
    return max(0.0, (fastest_s - warm_s) / RATIO[kind] - SLACK_S[kind])


def ranked_bounds(kind: str, fastest_s: float, warm_s: float = 0.0) -> tuple[float, float]:
    """The least and the most a call may rank at from host-clock batches: on the CPU the
    fastest batch's per-call time within CPU_TOLERANCE (from it less `warm_s`, up to it:
    benchmark mode's runner times warm inputs, which the batches' calls may or may not find
    in its caches); on a GPU without windows, no less than ranked_floor and no upper bound."""
    if kind != "cpu":
        return ranked_floor(kind, fastest_s, warm_s), math.inf
    return max(0.0, fastest_s - warm_s) * (1 - CPU_TOLERANCE), fastest_s * (1 + CPU_TOLERANCE)


def window_floor(fastest_s: float) -> float:
    """On a GPU, the runner's median under which is flagged: the windows' figure less more
    than calibrating a window's own cost leaves uncertain (WINDOW_TOLERANCE of it and
    WINDOW_SLACK_S)."""
    return max(0.0, fastest_s * (1 - WINDOW_TOLERANCE) - WINDOW_SLACK_S)


def cold_inputs_s(layout: Layout) -> float:
    """The time a CPU core takes to bring over a set's inputs another core wrote."""
    return sum(p.nbytes for p in layout.inputs if p.part == READ) / CPU_COLD_BYTES_PER_S


def batch_size(kind: str, per_call_s: float, set_bytes: int) -> int:
    """Calls in a batch of calls of about `per_call_s`, within the batch's memory. On a GPU
    a batch's sets also take L2_TIMES the L2 cache at least, so that each call finds its
    inputs outside L2, as a call after a flush does: they were copied in set after set, and
    the calls before a set's own streamed several L2s' worth through the cache since."""
    calls = max(1, min(MAX_CALLS[kind], int(BATCH_S[kind] / max(per_call_s, 1e-7))))
    limit = BATCH_MAX_BYTES[kind]
    if kind == "cuda":
        limit = min(limit, torch.cuda.mem_get_info()[0] // 8)
        l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 0)
        calls = max(calls, min(MAX_CALLS[kind], -(-L2_TIMES * l2 // set_bytes)))
    return max(1, min(calls, limit // set_bytes))


def _private_image(nbytes: int, device: str) -> Slab:
    """Memory of the harness's alone, laid out like the slab (the runner never sees it)."""
    return Slab(device, nbytes, -1, torch.empty(nbytes, dtype=torch.uint8, device=device))


@dataclass
class _CaseCalls:
    """What the harness's two clocks share: one case's calls, each on input sets never seen
    before (`made` counts those made so far), and the check of the outputs they gave."""

    problem: ProblemSide
    session: RunnerSession
    setup: CaseSetup
    layout: Layout
    tolerance: dict[str, float]
    made: int = field(default=0, init=False)

    def _fresh(self, image: Slab, count: int) -> Sets:
        pristine = _fresh_sets(self.problem, self.setup, image, self.layout, count, self.made)
        self.made += count
        return pristine


@dataclass
class Batches(_CaseCalls):
    """One case's batches: fresh sets made in the harness's own memory, copied into the
    runner's slab on the clock, every output poisoned before, outputs checked after."""

    overheads: Overheads
    _staged: tuple[int, Sets, Slab] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.kind = self.problem.kind

    def measure(self, budget_ends: float, hint_s: float | None = None) -> Measured:
        """Batches until MIN_BATCHES count or the budget is spent. The first is a single
        call, whose time sizes the rest, or `hint_s` (the runner's own median) where that is
        shorter: a single call's batch also pays a round trip, which a busy host can stretch
        to milliseconds, and a batch sized by it would hold too few calls to spread that
        (the figure a runner reports only sizes the batches: a smaller one makes more calls,
        each still on the harness's clock). The first batch on a newly laid out slab is not
        counted (its pages are new to the runner, and its calls' temporaries new to its
        heap)."""
        pilot = self.run(1)
        counted: list[float] = []
        if pilot >= LONG_CALL_S:
            counted.append(pilot)
            count = 1
        else:
            guess = pilot if hint_s is None or hint_s <= 0 else min(pilot, hint_s)
            count = batch_size(self.kind, guess, self.layout.set_bytes)
        for _ in range(MAX_BATCHES_RUN):
            if self._settled(counted):
                break
            settling = self._staged is None or self._staged[1].count != count
            per_call = self.run(count)
            if settling:
                continue
            long_enough = per_call * count >= BATCH_S[self.kind] / 2
            if long_enough or count >= MAX_CALLS[self.kind] or per_call >= LONG_CALL_S:
                counted.append(per_call)
            else:
                more = batch_size(self.kind, per_call, self.layout.set_bytes)
                if more <= count:  # memory, not the guess, keeps it short
                    counted.append(per_call)
                count = max(count, more)
            if self._settled(counted) or (time.monotonic() > budget_ends and counted):
                break
        if not counted:
            counted.append(pilot)
        return Measured(counted, count)

    @staticmethod
    def _settled(counted: list[float]) -> bool:
        if counted and counted[0] >= LONG_CALL_S:
            return len(counted) >= 2
        return len(counted) >= MIN_BATCHES

    def _stage(self, count: int) -> tuple[int, Sets, Slab]:
        if self._staged is not None and self._staged[1].count == count:
            return self._staged
        slab_id, sets = self.session.stage("batch", self.layout, count)
        image = _private_image(count * self.layout.set_bytes, self.kind)
        self._staged = (slab_id, sets, image)
        return self._staged

    def run(self, count: int) -> float:
        """One batch of `count` calls; its per-call seconds, net of the trusted overheads.
        Raises Stop when a checked output is wrong."""
        slab_id, sets, image = self._stage(count)
        pristine = self._fresh(image, count)
        outputs, span, copy_s = _timed_batch(self.session, sets, image, slab_id, self.kind)
        if not isinstance(outputs, list) or len(outputs) != count:
            raise Stop(Status.ERROR, "the runner answered a batch with the wrong outputs")
        _check_outputs(self, sets, pristine, outputs, None)
        fixed = self.overheads.batch_s(self.layout.read_part(count)[1], copied_s=copy_s)
        return max(0.0, span - fixed) / count


def _timed_batch(
    session: RunnerSession, sets: Sets, image: Slab, slab_id: int, kind: str
) -> tuple[Any, float, float]:
    """The prepared sets into the runner's slab, and the batch run, on one clock: the
    buffers the calls write and the result slots (poisoned) go in before it starts, the
    inputs the calls read inside it, so no call can be worked on before its clock runs.
    Returns the outputs' descriptions, the span, and how long the copy took within it."""
    start, length = sets.layout.read_part(sets.count)
    end = sets.count * sets.layout.set_bytes
    sets.slab.raw[start + length : end].copy_(image.raw[start + length : end])
    if kind == "cuda":
        torch.cuda.synchronize()  # the sets' making and their poisoned outputs are done
    started = time.perf_counter()
    sets.slab.raw[start : start + length].copy_(image.raw[start : start + length])
    if kind == "cuda":
        torch.cuda.synchronize()
    copied = time.perf_counter() - started
    reply = session.request({"op": "batch", "slab": slab_id}).reply
    span = time.perf_counter() - started
    return reply.get("outputs"), span, copied


@dataclass
class Windows(_CaseCalls):
    """One case's calls timed on a GPU by the harness's own events (grader/gate.py): each
    call on a fresh set, its inputs copied in just before its window, L2 flushed, the call
    alone between two events of the harness's stream. A round's figure is the mean of its
    windows less what a window itself costs (`Overheads.window_call_s`, measured with the grader's
    own work): the mean, because work a runner moves from one call to another (started
    early on a side stream) still lies in some window, where a median would drop it.
    Outputs are read from copies the harness's stream makes right after the last window, so
    work finished later does not pass either."""

    precision: Precision = Precision.STANDARD
    spare: int = field(default=ARENA_SPARE_BYTES, init=False)
    _staged: _WindowSets | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        assert self.session.gate is not None
        self.gate = self.session.gate

    def measure(self, budget_ends: float) -> Measured:
        """A pilot window sizes the rounds; the first round on newly staged sets is not
        counted (its arena segments and pages are new); then MIN_BATCHES rounds, or fewer
        when the budget runs out after one."""
        call_s = self.session.overheads.window_call_s
        pilot_mean = self.run(1, warm=0)
        pilot = call_s(pilot_mean)
        count = window_count(pilot, self.layout, self.session.overheads.window_s, self.precision)
        fit = window_memory() // (3 * self.layout.set_bytes)
        long_call = pilot >= LONG_CALL_S
        warm = 0 if long_call else max(0, min(WARM_WINDOWS, fit - count))
        counted: list[float] = []
        for _ in range(MAX_BATCHES_RUN):
            settling = self._staged is None or self._staged.count != count + warm
            mean_s = self.run(count, warm)
            if not settling:
                counted.append(mean_s)
            enough = len(counted) >= (2 if long_call else MIN_BATCHES)
            if enough or (counted and time.monotonic() > budget_ends):
                break
        if not counted:
            counted.append(pilot_mean)
        fastest = min(counted)
        return Measured([call_s(m) for m in counted], count, fastest - call_s(fastest))

    def _stage(self, count: int) -> _WindowSets:
        if self._staged is not None and self._staged.count == count:
            return self._staged
        self._staged = None  # its memory goes before the next is made
        slab_id, sets = self.session.stage("batch", self.layout, count)
        result_bytes = sum(aligned(p.nbytes) for p in self.layout.results)
        arena = self.session.arena(count * result_bytes + self.spare)
        nbytes = count * self.layout.set_bytes
        self._staged = _WindowSets(
            count,
            slab_id,
            sets,
            _private_image(nbytes, "cuda"),
            _private_image(nbytes, "cuda"),
            arena,
            _private_image(arena.nbytes, "cuda"),
        )
        return self._staged

    def run(self, count: int, warm: int) -> float:
        """`warm` windows, then `count` more: the mean of those, a window's own cost still in
        it. Raises Stop when a checked output is wrong or the runner never finishes a
        window."""
        counted = count
        count += warm
        staged = self._stage(count)
        sets, image = staged.sets, staged.image
        pristine = self._fresh(image, count)
        step = self.layout.read_bytes
        start, length = self.layout.read_part(count)
        rest = slice(start + length, count * self.layout.set_bytes)
        sets.slab.raw[rest].copy_(image.raw[rest])  # written buffers and slots, poisoned

        def land(i: int) -> None:
            sets.slab.raw[i * step : (i + 1) * step].copy_(image.raw[i * step : (i + 1) * step])

        def keep() -> None:
            staged.seen.raw.copy_(sets.slab.raw[: staged.seen.nbytes])
            staged.arena_seen.raw.copy_(staged.arena.raw[: staged.arena_seen.nbytes])

        # The runner is asked first and queues its calls behind the gate; this process queues
        # the windows once it says so (grader/gate.py's QUEUED), so that no window waits for
        # the runner's host to launch its call.
        request = {"op": "windows", "slab": staged.slab_id, "seq": self.gate.next_seq,
                   "count": count}  # fmt: skip
        try:
            reply, marks = self.session.request_first(
                request, lambda: self.gate.enqueue(count, land, keep)
            )
        except BaseException:
            self.gate.force_open()
            raise
        windows = self.gate.finish(marks, time.monotonic() + WINDOW_GRACE_S)
        if windows is None:
            raise Stop(Status.REJECTED, "the runner answered before its calls' windows were done")
        outputs = reply.get("outputs")
        if not isinstance(outputs, list) or len(outputs) != count:
            raise Stop(Status.ERROR, "the runner answered its windows with the wrong outputs")
        peak = reply.get("arena_peak")
        if type(peak) is not int or peak < 0:
            raise Stop(Status.REJECTED, "the runner's reply to its windows gave no arena size")
        # Only sizes the next arena (a runner claiming more than it used gets a bigger one,
        # up to what a round's memory allows); never a time.
        self.spare = max(self.spare, min(peak, window_memory()))
        seen = Sets(staged.seen, self.layout, count)
        _check_outputs(self, seen, pristine, outputs, staged.arena_seen)
        timed = windows[warm:]
        return sum(timed) / counted


@dataclass
class _WindowSets:
    count: int
    slab_id: int
    sets: Sets
    image: Slab  # the sets as made, in the harness's own memory
    seen: Slab  # the slab as the last window left it
    arena: Slab
    arena_seen: Slab  # the arena as the last window left it


def window_count(
    pilot_s: float, layout: Layout, window_s: float, precision: Precision = Precision.STANDARD
) -> int:
    """Windows counted in a round: about WINDOWS_S of them (times the precision's factor),
    within WINDOWS (the most times that factor) and the memory a round may take (its sets
    three times over: the slab, the harness's image and the copy read back)."""
    if pilot_s >= LONG_CALL_S:
        return 1
    count = int(precision.factor * WINDOWS_S / max(pilot_s + window_s, 1e-6))
    count = max(WINDOWS[0], min(precision.scaled(WINDOWS[1]), count))
    return max(1, min(count, window_memory() // (3 * layout.set_bytes)))


def window_memory() -> int:
    return min(WINDOWS_MAX_BYTES, torch.cuda.mem_get_info()[0] // 3)


def _fresh_sets(
    problem: ProblemSide, setup: CaseSetup, image: Slab, layout: Layout, count: int, made: int
) -> Sets:
    """`count` input sets never seen before (numbered on from `made`), written into the
    harness's own `image`, their written buffers and result slots poisoned."""
    pristine = Sets(image, layout, count)
    for index in range(count):
        data = problem.generate(setup.case, FIRST_REPEAT + made + index, seed=problem.fresh_seed)
        pristine.write(index, data, setup.written)
    return pristine


def _check_outputs(
    owner: _CaseCalls, sets: Sets, pristine: Sets, outputs: list[Any], arena: Slab | None
) -> None:
    """The last output and CHECKED_PER_BATCH others, chosen after the calls ran."""
    count = sets.count
    others = range(count - 1)
    picked = random.SystemRandom().sample(others, min(CHECKED_PER_BATCH, count - 1))
    for index in [count - 1, *picked]:
        data = pristine.data(index)
        failure = wrong_output(
            owner.problem.module.check_implementation,
            data,
            sets.output(index, outputs[index], arena),
            functools.partial(_expected, owner.problem, owner.setup.case, data),
            device=owner.problem.kind,
            tolerance=owner.tolerance,
        )
        if failure:
            raise Stop(
                Status.FAILED,
                f"case {label(owner.setup.case)}: {failure} (a call on fresh inputs the "
                "grader timed on its own clock)",
            )


def _expected(problem: ProblemSide, case: dict[str, Any], data: Any) -> Any:
    return problem.expected_and_written(case, data)[0]
