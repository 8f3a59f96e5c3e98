"""Timing one kernel (runner side: warm-up, L2 flush, events, stopping rule) and the
statistics the harness computes from the raw samples it receives."""

from __future__ import annotations

import ctypes
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from grader.inputs import poison
from grader.precision import MAX_SAMPLES, Precision
from grader.report import CaseTime

WARMUP_MIN_S = 0.2
WARMUP_MIN_CALLS = 3
# A warm-up call this long is the last: the kernel has run on these inputs before (the
# correctness call that precedes timing), and a call of a second leaves caches, clocks and
# the allocator as the next call finds them. More would only spend the grading's time
# (GPU MODE's eigh_py: 8 s a call on its 640-matrix cases, three warm-up calls a case).
WARMUP_LONG_CALL_S = 1.0
DEFAULT_CASE_BUDGET_S = 10.0
_MIN_FLUSH_BYTES = 128 << 20
# GPU clock cycles of busy-waiting queued before each timed call (about 100 µs at 2 GHz):
# the CPU launches the call meanwhile, so the events time the call's GPU work rather than
# the launch latency in front of it.
LAUNCH_LEAD_CYCLES = 200_000
# Idle time after each CUDA sample, as a multiple of the sample and at most COOL_DOWN_MAX_S.
# Back to back, a compute-bound kernel holds the GPU at its power limit and the SM clock
# falls (an 8192³ bf16 GEMM on an H200: 1485 MHz, 17% slower than Nsight Compute's replay);
# a pause twice as long as the call lets it recover (1965 MHz, within 0.5% of Nsight
# Compute), so a time does not depend on how long its case has been running. Longer pauses
# let the GPU drop towards idle clocks (50 ms: 6% slower again).
COOL_DOWN_FACTOR = 2.0
COOL_DOWN_MAX_S = 0.01
# The pause is never shorter than this (bench/validate_timing.py tries other values).
COOL_DOWN_MIN_S = 0.0
WARMUP_COOL_DOWN_S = 0.02


# Before each timed call on CUDA, if the context has a persisting-L2 carve-out, its lines are
# made normal again and the carve-out taken away, so the flush evicts them too: a submission
# that sets an access-policy window over its inputs cannot keep them in L2 from one timed
# call to the next. A context without a carve-out (every honest one) is left alone: the
# reset itself made an 8 MiB-input add 1.7% slower on an H200 (bench/l2_persisting.py,
# which turns this off to measure).
RESET_PERSISTING_L2 = True
CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06


class _PersistingL2:
    """The driver's persisting-L2 controls (torch does not expose them); a driver without
    them, or a failure, leaves the reset out."""

    def __init__(self) -> None:
        try:
            driver = ctypes.CDLL("libcuda.so.1")
            self._get_limit: Any = driver.cuCtxGetLimit
            self._set_limit: Any = driver.cuCtxSetLimit
            self._reset: Any = driver.cuCtxResetPersistingL2Cache
        except (OSError, AttributeError):
            self._reset = None

    def reset(self) -> None:
        if self._reset is None:
            return
        carve_out = ctypes.c_size_t(0)
        if self._get_limit(ctypes.byref(carve_out), CU_LIMIT_PERSISTING_L2_CACHE_SIZE) != 0:
            return
        if carve_out.value:
            self._reset()
            self._set_limit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(0))


def cool_down_s(sample_s: float) -> float:
    """The idle time after a CUDA sample of this length."""
    return max(COOL_DOWN_MIN_S, min(COOL_DOWN_FACTOR * sample_s, COOL_DOWN_MAX_S))


@dataclass
class Samples:
    """What the runner reports for one case; the harness trusts none of it blindly."""

    seconds: list[float]
    wall_s: float
    sm_clock_mhz: float | None  # median of the readings taken after each sample
    paused_s: float = 0.0  # idle time after samples, so the clock recovers (CUDA)


def rel_sem(samples: list[float]) -> float:
    """Relative standard error of the mean (inf with fewer than two samples)."""
    if len(samples) < 2:
        return math.inf
    mean = statistics.fmean(samples)
    if mean <= 0:
        return math.inf
    return statistics.stdev(samples) / math.sqrt(len(samples)) / mean


def enough_samples(samples: list[float], precision: Precision = Precision.STANDARD) -> bool:
    """Whether sampling may stop: the precision's least count, and its standard error."""
    return len(samples) >= precision.min_samples and rel_sem(samples) < precision.target_rel_sem


def _percentile(sorted_samples: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    pos = (len(sorted_samples) - 1) * q
    low = math.floor(pos)
    high = min(low + 1, len(sorted_samples) - 1)
    return sorted_samples[low] + (sorted_samples[high] - sorted_samples[low]) * (pos - low)


def summarize(samples: list[float], sm_clock_mhz: float | None = None) -> CaseTime:
    """The per-case time statistics of the report."""
    ordered = sorted(samples)
    mean = statistics.fmean(ordered)
    std = statistics.stdev(ordered) if len(ordered) > 1 else 0.0
    median = statistics.median(ordered)
    p25, p75 = _percentile(ordered, 0.25), _percentile(ordered, 0.75)
    return CaseTime(
        median_s=median,
        mean_s=mean,
        min_s=ordered[0],
        p10_s=_percentile(ordered, 0.1),
        p25_s=p25,
        p75_s=p75,
        p90_s=_percentile(ordered, 0.9),
        cv=std / mean if mean > 0 else 0.0,
        # The robust spread: one outlier sample moves the CV (135% on a steady case on an
        # H200) but not the interquartile range.
        iqr_over_median=(p75 - p25) / median if median > 0 else 0.0,
        samples=len(ordered),
        sm_clock_mhz=sm_clock_mhz,
    )


def geometric_mean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


class Timer:
    """Times single calls on one device; on CUDA flushes L2 before each and uses events."""

    def __init__(self, device: str) -> None:
        self.device = device
        self._flush: torch.Tensor | None = None
        self._persisting_l2: _PersistingL2 | None = None
        if device.startswith("cuda"):
            self._persisting_l2 = _PersistingL2()
            props = torch.cuda.get_device_properties(torch.device(device))
            l2 = int(getattr(props, "L2_cache_size", 0) or 0)
            self._flush = torch.ones(max(2 * l2, _MIN_FLUSH_BYTES), dtype=torch.int8, device=device)

    def one_call(
        self, fn: Callable[[Any], Any], data: Any, poison_paths: list[str] | None = None
    ) -> tuple[float, Any]:
        """Seconds of one call, and its output. `poison_paths` name output tensors to fill
        with NaN first, so the call must write them again."""
        if poison_paths:
            poison(data, poison_paths)
        if self._flush is None:
            start = time.perf_counter_ns()
            output = fn(data)
            return (time.perf_counter_ns() - start) / 1e9, output
        torch.cuda.synchronize()
        if RESET_PERSISTING_L2 and self._persisting_l2 is not None:
            self._persisting_l2.reset()
        # Reading a buffer twice the L2 size evicts the previous call's data and leaves only
        # clean lines. Writing it would leave L2 full of dirty lines whose write-back the
        # timed call pays (on an H200: 3-7 µs more than Nsight Compute measures).
        torch.amax(self._flush)
        torch.cuda._sleep(LAUNCH_LEAD_CYCLES)
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        output = fn(data)
        end.record()
        torch.cuda.synchronize()
        return begin.elapsed_time(end) / 1e3, output

    def sm_clock_mhz(self) -> float | None:
        if self._flush is None:
            return None
        try:
            # Needs pynvml; a missing or failing NVML just means no clock in the report.
            return float(torch.cuda.clock_rate(torch.device(self.device)))
        except Exception:
            return None

    def warm_up(self, fn: Callable[[Any], Any], data: Any) -> None:
        """At least WARMUP_MIN_CALLS calls and WARMUP_MIN_S of them, each finished before the
        next (unsynchronised, a slow kernel would queue a thousand launches in 200 ms), or
        until one call lasts WARMUP_LONG_CALL_S."""
        started = time.perf_counter()
        calls = 0
        while calls < WARMUP_MIN_CALLS or time.perf_counter() - started < WARMUP_MIN_S:
            began = time.perf_counter()
            fn(data)
            if self._flush is not None:
                torch.cuda.synchronize()
            calls += 1
            if time.perf_counter() - began >= WARMUP_LONG_CALL_S:
                break

    def time_case(
        self,
        fn: Callable[[Any], Any],
        data: Any,
        *,
        budget_s: float = DEFAULT_CASE_BUDGET_S,
        max_samples: int = MAX_SAMPLES,
        poison_paths: list[str] | None = None,
        precision: Precision = Precision.STANDARD,
    ) -> tuple[Samples, Any]:
        """Warm up, then sample until the mean is known to the precision's target (0.5%
        standard) or the budget runs out."""
        started = time.perf_counter()
        self.warm_up(fn, data)
        if self._flush is not None:
            # Warm-up runs calls back to back; the first samples should not inherit the clock
            # it left (a few samples last less than the power controller takes to react).
            time.sleep(WARMUP_COOL_DOWN_S)
        seconds: list[float] = []
        clocks: list[float] = []
        output: Any = None
        paused = 0.0
        while len(seconds) < max_samples:
            sample, output = self.one_call(fn, data, poison_paths)
            seconds.append(sample)
            if self._flush is not None:
                time.sleep(cool_down_s(sample))
                paused += cool_down_s(sample)
            # Read right after each sample, outside the timed region: under sustained load
            # the clock falls, and the report should say at what clock its times were taken.
            clock = self.sm_clock_mhz()
            if clock is not None:
                clocks.append(clock)
            if enough_samples(seconds, precision) or time.perf_counter() - started > budget_s:
                break
        median_clock = statistics.median(clocks) if clocks else None
        wall = time.perf_counter() - started
        return Samples(seconds, wall, median_clock, paused), output
