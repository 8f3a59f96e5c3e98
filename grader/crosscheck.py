"""The harness's own clock over a submission's calls. The runner times calls in the
submission's own process, so its times could be forged; here the harness times batches of
back-to-back calls itself, on fresh input sets the runner has never seen before the clock
starts (they are copied into its slab inside the timed span), with every output poisoned
before and a random choice of outputs checked after: a runner that skips or fakes a batch's
work, or did it ahead of time, fails instead of being believed. `plausibility.judge` then
decides whether the reported median can be real next to what this clock measured."""

from __future__ import annotations

import functools
import math
import random
import time
from typing import Any

import torch

from grader import plausibility
from grader.calibrate import DevicePeaks
from grader.check import wrong_output
from grader.expected import CaseSetup, ProblemSide
from grader.plausibility import HarnessClock, label
from grader.report import Stop
from grader.session import RunnerSession
from grader.shared import Slab
from grader.staging import READ, Layout, Sets

# The most memory a batch's sets take on each device (twice over: the harness's own image
# of them and the slab the runner reads), and on a GPU an eighth of what is free at most.
# On a GPU each call of the batch reads a set not in L2, as the runner's timed calls do
# (it flushes L2 before each). On the CPU the runner times the same inputs over and over,
# warm in its caches, so the batch's sets are kept to what its caches hold, and its calls
# are timed by the sandbox's CPU time, which a short batch still measures well.
# A GPU's limit keeps a batch's fixed cost (plausibility.CUDA_BATCH_FIXED_S) to a fraction
# of a call even for sets of a gigabyte (at 2 GiB, rmsnorm's 0.8 GB sets made batches of 2).
BATCH_MAX_BYTES = {"cuda": 8 << 30, "cpu": 8 << 20}
# Outputs checked per batch, chosen after it ran: skipping a fraction p of the calls goes
# unseen with probability (1 - p) ** CHECKED_PER_BATCH.
CHECKED_PER_BATCH = 16
# An empty round trip is subtracted from a batch's time, but never more than this: a runner
# that answers pings slowly must not buy itself a smaller per-call time.
PING_ALLOWANCE_S = 500e-6
# How fast a CPU core brings over inputs another core wrote, at the least (one thread on a
# 2-core VM moved 6 MiB between the harness and the runner in about 1.1 ms).
CPU_COLD_BYTES_PER_S = 5e9
# Input sets of the cross-check are numbered from here, apart from the timed calls' sets.
FIRST_REPEAT = 1_000_000


def batch_size(kind: str, median_s: float, set_bytes: int) -> int:
    calls = max(1, min(plausibility.CROSS_CHECK_MAX_CALLS,
                       int(plausibility.CROSS_CHECK_BATCH_S / max(median_s, 1e-9))))  # fmt: skip
    limit = BATCH_MAX_BYTES[kind]
    if kind == "cuda":
        limit = min(limit, torch.cuda.mem_get_info()[0] // 8)
    return max(1, min(calls, limit // set_bytes))


def _private_image(nbytes: int, device: str) -> Slab:
    """Memory of the harness's alone, laid out like the slab (the runner never sees it)."""
    return Slab(device, nbytes, -1, torch.empty(nbytes, dtype=torch.uint8, device=device))


def cross_check(
    problem: ProblemSide,
    session: RunnerSession,
    setup: CaseSetup,
    layout: Layout,
    median_s: float,
    peaks: DevicePeaks | None,
    tolerance: dict[str, float],
    warm_median: bool = False,
) -> HarnessClock:
    """Per-call time of batches of fresh, checked calls on the harness's clock.
    `warm_median`: the median was timed on one input set over and over (benchmark mode)."""
    kind = problem.kind
    count = batch_size(kind, median_s, layout.set_bytes)
    slab_id, sets = session.stage("batch", layout, count)
    image = _private_image(count * layout.set_bytes, kind)
    pristine = Sets(image, layout, count)
    pick = random.SystemRandom()
    batches: list[tuple[float, float | None]] = []
    for batch in range(plausibility.batch_count(count, median_s)):
        for index in range(count):
            data = problem.generate(
                setup.case, FIRST_REPEAT + batch * count + index, seed=problem.fresh_seed
            )
            pristine.write(index, data, setup.written)
        checked = pick.sample(range(count), min(CHECKED_PER_BATCH, count))
        outputs, clocks = _timed_batch(session, sets, image, slab_id, kind)
        batches.append(clocks)
        if not isinstance(outputs, list) or len(outputs) != count:
            raise Stop("error", "the runner answered a batch with the wrong outputs")
        for index in checked:
            data = pristine.data(index)
            failure = wrong_output(
                problem.module.check_implementation,
                data,
                sets.output(index, outputs[index]),
                functools.partial(_expected, problem, setup.case, data),
                device=kind,
                tolerance=tolerance,
            )
            if failure:
                raise Stop(
                    "failed",
                    f"case {label(setup.case)}: {failure} (a call on fresh inputs the "
                    "grader timed on its own clock)",
                )
    pings = [session.request({"op": "ping"}).clocks for _ in range(3)]
    bandwidth = peaks.copy_bytes_per_s if peaks is not None else math.inf
    copy_s = 2 * layout.read_part(count)[1] / bandwidth
    return plausibility.batch_clock(
        count,
        [(wall - copy_s, cpu) for wall, cpu in batches],
        [(min(wall, PING_ALLOWANCE_S), _capped(cpu)) for wall, cpu in pings],
        kind == "cpu",
        allowance_s=_allowance_s(kind, layout, count, warm_median),
    )


def _timed_batch(
    session: RunnerSession, sets: Sets, image: Slab, slab_id: int, kind: str
) -> tuple[Any, tuple[float, float | None]]:
    """The prepared sets into the runner's slab, and the batch run, on one clock: the
    buffers the calls write and the result slots (poisoned) go in before it starts, the
    inputs the calls read inside it, so no call can be worked on before its clock runs."""
    start, length = sets.layout.read_part(sets.count)
    end = sets.count * sets.layout.set_bytes
    sets.slab.raw[start + length : end].copy_(image.raw[start + length : end])
    if kind == "cuda":
        torch.cuda.synchronize()  # the sets' making and their poisoned outputs are done
    cpu_before = session.child.cpu_seconds()
    started = time.monotonic()
    sets.slab.raw[start : start + length].copy_(image.raw[start : start + length])
    if kind == "cuda":
        torch.cuda.synchronize()
    exchange = session.request({"op": "batch", "slab": slab_id})
    wall = time.monotonic() - started
    cpu_after = session.child.cpu_seconds()
    cpu = cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
    return exchange.reply.get("outputs"), (wall, cpu)


def _allowance_s(kind: str, layout: Layout, count: int, warm_median: bool) -> float:
    """How much longer than a timed call an honest call of a batch of `count` may take."""
    if kind == "cuda":
        return plausibility.CUDA_BATCH_FIXED_S / count
    return _cold_inputs_s(layout) if warm_median else 0.0


def _cold_inputs_s(layout: Layout) -> float:
    """How much longer than a timed call an honest call of the batch may take on the CPU in
    benchmark mode, where the runner times the same inputs over and over, warm in its own
    core's caches, while a batch call finds its inputs where the harness wrote them: the time
    to bring them over once. (Leaderboard mode's timed calls, like the batch's, find fresh
    inputs the harness wrote; on a GPU every call finds its inputs outside L2.)"""
    return sum(p.nbytes for p in layout.inputs if p.part == READ) / CPU_COLD_BYTES_PER_S


def _capped(cpu_s: float | None) -> float | None:
    return None if cpu_s is None else min(cpu_s, PING_ALLOWANCE_S)


def _expected(problem: ProblemSide, case: dict[str, Any], data: Any) -> Any:
    return problem.expected_and_written(case, data)[0]
