"""The plausibility checks: why a time the runner reports is accepted, flagged or rejected.
The runner times the calls in the submission's own process, so its times can be forged; a
time stands only if it fits the harness's own clock and the device's physical floor."""

from __future__ import annotations

import math
from dataclasses import dataclass

from grader.report import Stop

# A case may not run faster than this fraction of its physical floor on this device.
FLOOR_MARGIN = 0.9
# The harness's own clock around a batch of back-to-back calls (grader/crosscheck.py): long
# enough to be measured well, and at least two of them, the fastest one counting. Where a
# batch holds only a few calls (large cases, whose sets fill the memory a batch may take),
# more batches run, up to CROSS_CHECK_MIN_CALLS calls or CROSS_CHECK_MAX_BATCHES batches:
# one call alone is at the mercy of a single page fault or preemption. Calls long enough that
# the batches past the first two would last CROSS_CHECK_LONG_S get no more: beside a call of
# seconds a page fault is nothing, and eight calls of linalg/eigh_py's largest case (640
# eigendecompositions of 512², 8.2 s a call on an H200) took over a minute a case.
CROSS_CHECK_BATCH_S = 0.05
CROSS_CHECK_BATCHES = 2
CROSS_CHECK_MIN_CALLS = 8
CROSS_CHECK_MAX_BATCHES = 8
CROSS_CHECK_MAX_CALLS = 2000
CROSS_CHECK_LONG_S = 1.0


@dataclass(frozen=True)
class Bounds:
    """How far the harness's per-call time may exceed the reported median: beyond
    `flag_ratio` times it plus `flag_slack_s` an organizer is told, beyond `reject_ratio` times
    it plus `reject_slack_s` the times cannot be real."""

    flag_ratio: float
    flag_slack_s: float
    reject_ratio: float
    reject_slack_s: float


# On CUDA both clocks time calls on inputs not in L2 (the runner flushes it before each timed
# call, the batch's sets are fresh), but the events leave out launch overhead that the
# launch lead hides (up to about 100 µs), and a batch pays once what no timed call pays
# (CUDA_BATCH_FIXED_S). A rejection there needs 10 times the median: at 3 times, every
# ranked grading of the honest rmsnorm solution on an H200 was rejected (2026-12-01), when
# a batch's fixed cost was spread over the 2 to 5 calls its 2 GiB held; below 10 times a
# disagreement over 1.5 times is flagged for organizers, and the physical floor still
# bounds a forged time. On the CPU the runner's clock and ours time the
# same Python calls, but its timed calls find their inputs in the caches of its own core
# and the batch's calls find them where the harness wrote them (`HarnessClock.allowance_s`
# allows for bringing them over once, grader/crosscheck.py), and a shared CPU is uneven: on
# a 2-core VM honest built-in solutions measured up to 4.5 times their median there, and a
# batch's own bookkeeping (taking each set, leaving each output) adds to every call: on a
# slower 2-core VM an honest add of 96² measured 15 to 30 µs over its 8 to 12 µs median
# (2026-12-03), past the 10 µs the flag once allowed, so honest runs were flagged at times.
CROSS_CHECK_BOUNDS = {
    "cuda": Bounds(1.5, 50e-6, 10.0, 150e-6),
    "cpu": Bounds(2.0, 30e-6, 6.0, 20e-6),
}
# What a batch costs on a GPU once, beyond its calls and the empty round trip subtracted for
# it: the GPU passing from the harness's context (which has just copied the inputs in) to
# the runner's, after the idleness of the harness's checks and input making between batches.
# Traced inside real gradings on an H200 (bench/crosscheck_trace.py, 2026-12-04): 0.65 to
# 0.93 ms a batch, alike for rmsnorm's Triton and PyTorch solutions and for vectoradd,
# sandboxed or not; the same batch sent again at once paid a sixth of it, and again after
# 20 ms idle about half. Spread over a batch's calls, it is allowed once per batch: where a
# batch holds few calls (large sets), it would otherwise read as several medians a call.
CUDA_BATCH_FIXED_S = 1.5e-3
# On the CPU an honest median is within a small factor of our per-call time even where the
# slack above would excuse the gap (a claimed picosecond against a 4 µs call): beyond this
# ratio it cannot be real.
CPU_CROSS_CHECK_IMPOSSIBLE_RATIO = 100.0


def batch_count(calls_per_batch: int, median_s: float) -> int:
    """How many batches of `calls_per_batch` calls of `median_s` each the cross-check runs.
    (The median is the runner's claim: claiming a longer one than its calls take saves it
    batches only by ranking it slower.)"""
    calls = max(1, calls_per_batch)
    wanted = -(-CROSS_CHECK_MIN_CALLS // calls)
    if median_s > 0:
        wanted = min(wanted, math.ceil(CROSS_CHECK_LONG_S / (calls * median_s)))
    return max(CROSS_CHECK_BATCHES, min(CROSS_CHECK_MAX_BATCHES, wanted))


def label(case: dict[str, object]) -> str:
    return " ".join(f"{k}={v}" for k, v in case.items())


def check_claims(case_label: str, samples: list[float], wall_s: float) -> None:
    """Claimed kernel time cannot exceed the wall time we measured around it."""
    if sum(samples) > wall_s:
        raise Stop(
            "rejected",
            f"case {case_label}: the reported timings add up to {sum(samples):.6g} s, more "
            f"than the {wall_s:.6g} s the grader measured around them",
        )


def check_floor(case_label: str, median_s: float, floor_s: float) -> None:
    """A median under FLOOR_MARGIN of the physical floor cannot be real."""
    if median_s < FLOOR_MARGIN * floor_s:
        raise Stop(
            "rejected",
            f"case {case_label}: a median of {median_s * 1e6:.3f} µs is under "
            f"{FLOOR_MARGIN:g}× the physical floor of {floor_s * 1e6:.3f} µs (the case's "
            "bytes and flops at this GPU's measured peaks); no kernel can be that fast",
        )


@dataclass(frozen=True)
class HarnessClock:
    """What the harness's own clock says one call costs, how it measured it, and how much
    longer than its timed calls an honest call may take there (`allowance_s`)."""

    per_call_s: float
    how: str
    allowance_s: float = 0.0


def judge(kind: str, case_label: str, median_s: float, clock: HarnessClock) -> str | None:
    """Reject (raise Stop) when the harness's clock says the reported median cannot be
    real; return a flag for organizers when the two disagree less, else None."""
    bounds = CROSS_CHECK_BOUNDS[kind]
    per_call = clock.per_call_s
    shown = (
        f"the grader's own clock measured {per_call * 1e6:.1f} µs per call {clock.how}, "
        f"against a reported median of {median_s * 1e6:.3f} µs"
    )
    impossible = kind == "cpu" and per_call > CPU_CROSS_CHECK_IMPOSSIBLE_RATIO * median_s
    per_call -= clock.allowance_s
    if impossible or per_call > bounds.reject_ratio * median_s + bounds.reject_slack_s:
        raise Stop("rejected", f"case {case_label}: {shown}: the reported times cannot be real")
    if per_call > bounds.flag_ratio * median_s + bounds.flag_slack_s:
        return f"case {case_label}: {shown}"
    return None


def batch_clock(
    calls: int,
    batches: list[tuple[float, float | None]],
    pings: list[tuple[float, float | None]],
    on_cpu: bool,
    allowance_s: float = 0.0,
) -> HarnessClock:
    """Per-call time from batches of back-to-back calls on fresh input sets, net of an empty
    round trip. The faster batch is the one least disturbed by other work here; on a busy
    CPU the wall clock also counts time the runner waited for a core, which the kernel's
    count of the sandbox's CPU time does not (and it cannot be forged)."""
    per_call = max(0.0, min(w for w, _ in batches) - min(w for w, _ in pings)) / calls
    cpu_batches = [c for _, c in batches if c is not None]
    cpu_pings = [c for _, c in pings if c is not None]
    if on_cpu and cpu_batches and cpu_pings:
        per_call = min(per_call, max(0.0, min(cpu_batches) - min(cpu_pings)) / calls)
    return HarnessClock(per_call, f"over {calls} back-to-back calls on fresh inputs", allowance_s)
