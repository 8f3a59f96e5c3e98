"""Profile mode: what took the time in a submission's calls. The runner profiles a few calls
on a case's public inputs with torch.profiler (`profile_calls`, inside the sandbox, around
an NVTX range named `kj-submission`; in a multi-rank grading every rank does, on its own
inputs); the harness keeps only a bounded, well-formed table of it (`table_from_reply`). A
profile is its author's to read and never times a ranking, so what the submission could
bend in it misleads only itself."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from grader import replies
from grader.report import Profile, Status, Stop

# Calls profiled per case, after one call outside the profile (compilation, autotuning and
# the caching allocator's first blocks are not what a competitor wants to read about).
PROFILED_CALLS = 3
# Rows of the table kept per case, the heaviest first, and the longest name kept.
MAX_ROWS = 25
MAX_NAME = 240
NVTX_RANGE = "kj-submission"
TOOL = "torch.profiler"
# Why there is no Nsight Compute profile on a CPU worker, in the report's words (a GPU
# worker's reasons are grader.nsight's).
ON_CPU = (
    "a CPU worker: Nsight Compute profiles CUDA kernels only, so this is torch.profiler's "
    "table of the calls on the CPU"
)
_NUMBERS = ("self_us", "total_us", "self_device_us", "device_us")


def profile_calls(kernel: Callable[[Any], Any], data: Any, device: str) -> dict[str, Any]:
    """Runs in the runner: one call to warm up, then PROFILED_CALLS calls profiled."""
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    # The profiler's first start in a process takes seconds: started and stopped once before
    # the warm-up call, so that in a multi-rank grading every rank leaves the warm-up call's
    # collectives together and no rank's profiled calls wait for a peer's profiler to start.
    with torch.profiler.profile(activities=activities):
        pass
    kernel(data)
    sync()
    with torch.profiler.profile(activities=activities) as profiler:
        started = time.perf_counter()
        if device == "cuda":
            torch.cuda.nvtx.range_push(NVTX_RANGE)
        for _ in range(PROFILED_CALLS):
            kernel(data)
        sync()
        if device == "cuda":
            torch.cuda.nvtx.range_pop()
        wall = time.perf_counter() - started
    rows = [_row(event) for event in profiler.key_averages()]
    heaviest = "self_device_us" if device == "cuda" else "self_us"
    rows.sort(key=lambda row: -float(row[heaviest]))
    return {"calls": PROFILED_CALLS, "wall_us_per_call": wall * 1e6 / PROFILED_CALLS,
            "rows": rows[:MAX_ROWS]}  # fmt: skip


def profile_calls_for_ncu(
    kernel: Callable[[Any], Any], data: Any, case: Any, device: str = "cuda"
) -> None:
    """Runs in a runner that Nsight Compute started (grader.nsight): one call to warm up,
    then PROFILED_CALLS calls between cudaProfilerStart and cudaProfilerStop (Nsight Compute
    profiles nothing else), in an NVTX range naming the case they belong to. (On a CPU,
    where there is nothing for it to profile, only the calls: how its driver is tested.)"""
    label = case if isinstance(case, int) and not isinstance(case, bool) else 0
    kernel(data)
    if device != "cuda":
        for _ in range(PROFILED_CALLS):
            kernel(data)
        return
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    torch.cuda.nvtx.range_push(f"{NVTX_RANGE} {label}")
    try:
        for _ in range(PROFILED_CALLS):
            kernel(data)
        torch.cuda.synchronize()
    finally:
        torch.cuda.nvtx.range_pop()
        torch.cuda.profiler.stop()


def _row(event: Any) -> dict[str, Any]:
    def total(*names: str) -> float:
        for name in names:
            value = getattr(event, name, None)
            if isinstance(value, int | float):
                return float(value)
        return 0.0

    return {
        "name": str(event.key)[:MAX_NAME],
        "device_type": str(getattr(event, "device_type", "")).rsplit(".", 1)[-1],
        "count": int(event.count),
        "self_us": total("self_cpu_time_total"),
        "total_us": total("cpu_time_total"),
        "self_device_us": total("self_device_time_total", "self_cuda_time_total"),
        "device_us": total("device_time_total", "cuda_time_total"),
    }


def table_from_reply(reply: dict[str, Any], why_not_ncu: str, rank: int | None = None) -> Profile:
    """The runner's profile as the report keeps it: bounded and of the expected shape, or
    the grading stops with an error. `why_not_ncu`: why this is no Nsight Compute profile;
    `rank`: the rank that sent it, in a multi-rank grading."""
    profile = reply.get("profile")
    if not isinstance(profile, dict) or not isinstance(profile.get("rows"), list):
        raise Stop(Status.REJECTED, "the runner answered the profile request without a profile")
    rows = []
    for row in profile["rows"][:MAX_ROWS]:
        if not isinstance(row, dict) or not isinstance(row.get("name"), str):
            raise Stop(
                Status.REJECTED, "the runner answered the profile request with malformed rows"
            )
        kept: dict[str, Any] = {
            "name": row["name"][:MAX_NAME],
            "device_type": str(row.get("device_type", ""))[:16],
            "count": _count(row.get("count")),
        }
        for key in _NUMBERS:
            kept[key] = _number(row.get(key))
        rows.append(kept)
    return Profile(
        tool=TOOL,
        why_not_ncu=why_not_ncu,
        calls=_count(profile.get("calls")),
        wall_us_per_call=_number(profile.get("wall_us_per_call")),
        rows=rows,
        rank=rank,
    )


def _number(value: Any) -> float:
    kept = replies.number(value, low=-replies.LARGEST)
    if kept is None:
        raise Stop(
            Status.REJECTED, "the runner answered the profile request with malformed numbers"
        )
    return max(0.0, kept)


def _count(value: Any) -> int:
    kept = replies.count(value)
    if kept is None:
        raise Stop(Status.REJECTED, "the runner answered the profile request with malformed counts")
    return kept
